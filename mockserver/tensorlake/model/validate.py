"""Parse and validate TensorLake request bodies and query parameters completely before anything is changed.

Every check raises :class:`ApiError` with a 4xx status and a stable ``code``; the parsed result is
a plain typed object the model applies in one step. Keys the mock does not know are returned so
the route can record them (an early warning when an SDK upgrade sends something new).

Numbers have upper bounds (:data:`LIMITS`): an absurd value such as ``timeout_secs: 1e30`` answers 400
``invalid_value`` naming the bound, and the served OpenAPI document states the same bounds.

Known deviations from the real service: the upper bounds of ``LIMITS`` (timeouts, resources, GPU counts,
``wait_ms``, copies, log paging) are the mock's own choice; the real service's limits are not published.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.tensorlake import NetworkConfig, PolicyError, apply_network_update
from mockserver.core.errors import ApiError

from .records import DEFAULT_DISK_MB, Resources

MANAGEMENT_PORT = 9501
NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
ID_LIKE = re.compile(r"^[a-z0-9]{21}$")
GPU_MODELS = frozenset({"A10", "H100", "T4", "A6000", "A100-40GB", "A100-80GB", "RTX-PRO-6000", "L40"})
SNAPSHOT_TYPES = frozenset({"memory", "filesystem"})

#: Upper bounds of the numbers a request may carry (the OpenAPI document states the same ``maximum``).
LIMITS: dict[str, int] = {
    "timeout_secs": 30 * 86_400,
    "max_pending_secs": 86_400,
    "cpus": 256,
    "memory_mb": 1_048_576,
    "disk_mb": 16_777_216,
    "gpu_count": 16,
    "wait_ms": 600_000,
    "times": 32,
    "head": 1_000_000,
    "tail": 1_000_000,
    "limit": 1_000,
}

CREATE_KEYS = frozenset(
    {
        "auto_resume",
        "image",
        "resources",
        "timeout_secs",
        "entrypoint",
        "network",
        "snapshot_id",
        "allow_unauthenticated_access",
        "allow_unauthenticated_proxy_access",
        "exposed_ports",
        "name",
        "file_systems",
        "wait",
        "max_pending_secs",
        "secret_names",
        "template_id",
        "pool_id",
    }
)
PATCH_KEYS = frozenset(
    {
        "auto_resume",
        "resources",
        "name",
        "allow_unauthenticated_access",
        "allow_unauthenticated_proxy_access",
        "exposed_ports",
        "network",
    }
)
RESOURCE_KEYS = frozenset({"cpus", "memory_mb", "disk_mb", "gpus", "ephemeral_disk_mb"})
MOUNT_KEYS = frozenset({"file_system_id", "mount_path", "read_only", "prefetch", "snapshot_id", "owner"})

Resolver = Callable[[str], Iterable[str]]


def bad(code: str, message: str, status: int = 400) -> ApiError:
    """Return a client error with ``code`` and ``message``."""
    return ApiError(status, code, message)


def _bool(body: dict[str, Any], key: str) -> bool | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise bad("invalid_type", f"{key} must be a boolean, got {type(value).__name__}")
    return value


def not_found(what: str, ident: str) -> ApiError:
    """Return a 404 for an unknown sandbox or snapshot."""
    return ApiError(404, f"{what}_not_found", f"{what} {ident!r} not found")


def conflict(code: str, message: str) -> ApiError:
    """Return a 409."""
    return ApiError(409, code, message)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(value: Any, key: str, *, minimum: int = 0, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad("invalid_type", f"{key} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise bad("invalid_value", f"{key} must be at least {minimum}, got {_short(value)}")
    if value > maximum:
        raise bad("invalid_value", f"{key} must be at most {maximum}, got {_short(value)}")
    return value


def int_query(query: Mapping[str, Sequence[str]], key: str, *, minimum: int = 0) -> int | None:
    """Return the integer query parameter ``key`` (the last value), None when absent; 400 when out of range."""
    values = query.get(key)
    if not values:
        return None
    raw = values[-1]
    maximum = LIMITS[key]
    significant = raw.lstrip("0") or "0"
    if not (raw.isascii() and raw.isdigit()) or len(significant) > len(str(maximum)):
        raise bad("invalid_query", f"query parameter {key} must be an integer from {minimum} to {maximum}")
    value = int(significant)
    if not minimum <= value <= maximum:
        raise bad("invalid_query", f"query parameter {key} must be an integer from {minimum} to {maximum}")
    return value


#: White space as the served document's ``pattern: "\\S"`` means it: ECMA-262's, which JSON Schema patterns use
#: (Python's ``str.isspace`` also counts the separators U+001C to U+001F and U+0085, which ECMA-262 does not).
_ECMA_BLANK = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*")


def _str(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise bad("invalid_type", f"{key} must be a string, got {type(value).__name__}")
    if _ECMA_BLANK.fullmatch(value):
        raise bad("invalid_value", f"{key} must not be empty")
    return value


def _str_list(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad("invalid_type", f"{key} must be a list of strings")
    return list(value)


def check_name(value: Any) -> str:
    """Return a valid sandbox name; names look like DNS labels and must not look like ids."""
    name = _str(value, "name")
    if not NAME_RE.match(name) or name.endswith("-"):
        raise bad(
            "invalid_name",
            f"name {name!r} must match ^[a-z][a-z0-9-]{{0,62}}$ and must not end with '-'",
        )
    if ID_LIKE.match(name):
        raise bad("invalid_name", f"name {name!r} is ambiguous: 21 lowercase alphanumerics look like an id")
    return name


def check_ports(value: Any) -> tuple[int, ...]:
    """Return exposed ports sorted and deduplicated; reject 9501 and ports outside 1-65535."""
    if not isinstance(value, list):
        raise bad("invalid_type", "exposed_ports must be a list of integers")
    ports: set[int] = set()
    for raw in value:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise bad("invalid_port", f"exposed port {raw!r} is not an integer")
        if not 1 <= raw <= 65535:
            raise bad("invalid_port", f"exposed port {raw} is outside 1-65535")
        if raw == MANAGEMENT_PORT:
            raise bad("invalid_port", "port 9501 is the management API and cannot be exposed")
        ports.add(raw)
    return tuple(sorted(ports))


def _number(value: Any, key: str, *, maximum: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise bad("invalid_type", f"{key} must be a number")
    if value <= 0:
        raise bad("invalid_value", f"{key} must be positive")
    if value > maximum:
        raise bad("invalid_value", f"{key} must be at most {maximum}, got {_short(value)}")
    return float(value)


def _gpus(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise bad("invalid_type", "resources.gpus must be a list")
    gpus: list[dict[str, Any]] = []
    for item in value:
        if not isinstance(item, dict):
            raise bad("invalid_type", "each GPU request must be an object")
        count = _int(item.get("count"), "resources.gpus[].count", minimum=1, maximum=LIMITS["gpu_count"])
        model = item.get("model", "A10")
        if not isinstance(model, str) or model not in GPU_MODELS:
            raise bad("invalid_gpu_model", f"unknown GPU model {model!r}")
        gpus.append({"count": count, "model": model})
    return gpus


def parse_resources(value: Any, unknown: list[str], *, base: Resources | None) -> Resources:
    """Return the resources a create asks for, defaults (or ``base``) filling the gaps."""
    if not isinstance(value, dict):
        raise bad("invalid_type", "resources must be an object")
    unknown.extend(f"resources.{k}" for k in value if k not in RESOURCE_KEYS)
    start = base or Resources(1.0, 1024, DEFAULT_DISK_MB)
    disk = value.get("disk_mb", value.get("ephemeral_disk_mb"))
    return Resources(
        cpus=start.cpus
        if value.get("cpus") is None
        else _number(value["cpus"], "resources.cpus", maximum=LIMITS["cpus"]),
        memory_mb=start.memory_mb
        if value.get("memory_mb") is None
        else _int(value["memory_mb"], "resources.memory_mb", minimum=1, maximum=LIMITS["memory_mb"]),
        disk_mb=start.disk_mb
        if disk is None
        else _int(disk, "resources.disk_mb", minimum=1, maximum=LIMITS["disk_mb"]),
        gpus=start.gpus if value.get("gpus") is None else _gpus(value["gpus"]),
    )


def parse_mount(value: Any) -> dict[str, Any]:
    """Return a file-system mount with its false flags omitted."""
    if not isinstance(value, dict):
        raise bad("invalid_type", "a file system mount must be an object")
    unknown = sorted(set(value) - MOUNT_KEYS)
    if unknown:
        raise bad("unknown_field", f"unknown file system mount key(s): {', '.join(unknown)}")
    mount: dict[str, Any] = {
        "file_system_id": _str(value.get("file_system_id"), "file_system_id"),
        "mount_path": _str(value.get("mount_path"), "mount_path"),
    }
    if not mount["mount_path"].startswith("/"):
        raise bad("invalid_value", "mount_path must be absolute")
    for key in ("read_only", "prefetch"):
        if _bool(value, key):
            mount[key] = True
    for key in ("snapshot_id", "owner"):
        if value.get(key) is not None:
            mount[key] = _str(value[key], key)
    return mount


def parse_network(body: dict[str, Any], resolve: Resolver) -> NetworkConfig | None:
    """Return the policy a ``network`` value asks for (via the reference policy); 400 when invalid."""
    try:
        return apply_network_update(None, {"network": body["network"]}, resolve)
    except PolicyError as exc:
        raise bad(exc.code, str(exc)) from exc


@dataclass
class CreateRequest:
    """A validated ``POST /sandboxes`` body."""

    wait: bool = True
    name: str | None = None
    image: str | None = None
    resources: dict[str, Any] | None = None
    timeout_secs: int | None = None
    entrypoint: list[str] | None = None
    network: NetworkConfig | None = None
    network_given: bool = False
    snapshot_id: str | None = None
    allow_unauthenticated_access: bool | None = None
    exposed_ports: tuple[int, ...] | None = None
    auto_resume: bool | None = None
    file_systems: list[dict[str, Any]] = field(default_factory=list)
    max_pending_secs: int | None = None
    secret_names: list[str] = field(default_factory=list)
    template_id: str | None = None
    unknown: list[str] = field(default_factory=list)


def parse_create(body: Any, resolve: Resolver) -> CreateRequest:
    """Validate a create body completely; raise 4xx :class:`ApiError` on the first defect."""
    if not isinstance(body, dict):
        raise bad("invalid_type", "request body must be a JSON object")
    req = CreateRequest(unknown=sorted(k for k in body if k not in CREATE_KEYS))
    if body.get("pool_id") is not None:
        raise bad("not_supported", "claiming from a sandbox pool is not supported by this mock", 501)
    wait = _bool(body, "wait")
    req.wait = True if wait is None else wait
    if body.get("name") is not None:
        req.name = check_name(body["name"])
    if body.get("image") is not None:
        req.image = _str(body["image"], "image")
    if body.get("resources") is not None:
        if not isinstance(body["resources"], dict):
            raise bad("invalid_type", "resources must be an object")
        parse_resources(body["resources"], req.unknown, base=None)
        req.resources = dict(body["resources"])
    if body.get("timeout_secs") is not None:
        req.timeout_secs = _int(body["timeout_secs"], "timeout_secs", maximum=LIMITS["timeout_secs"])
    if body.get("entrypoint") is not None:
        req.entrypoint = _str_list(body["entrypoint"], "entrypoint")
    if "network" in body:
        req.network_given = True
        req.network = parse_network(body, resolve)
    if body.get("snapshot_id") is not None:
        req.snapshot_id = _str(body["snapshot_id"], "snapshot_id")
    unauth = _bool(body, "allow_unauthenticated_access")
    legacy = _bool(body, "allow_unauthenticated_proxy_access")
    req.allow_unauthenticated_access = unauth if unauth is not None else legacy
    if body.get("exposed_ports") is not None:
        req.exposed_ports = check_ports(body["exposed_ports"])
    req.auto_resume = _bool(body, "auto_resume")
    if req.auto_resume is False and req.name is None:
        raise bad("invalid_auto_resume", "auto_resume=false requires a named sandbox")
    if body.get("file_systems") is not None:
        if not isinstance(body["file_systems"], list):
            raise bad("invalid_type", "file_systems must be a list")
        req.file_systems = [parse_mount(m) for m in body["file_systems"]]
        paths = [m["mount_path"] for m in req.file_systems]
        if len(set(paths)) != len(paths):
            raise bad("mount_path_in_use", "file system mount paths must be unique", 409)
    if body.get("max_pending_secs") is not None:
        req.max_pending_secs = _int(
            body["max_pending_secs"], "max_pending_secs", minimum=1, maximum=LIMITS["max_pending_secs"]
        )
    if body.get("secret_names") is not None:
        req.secret_names = _str_list(body["secret_names"], "secret_names")
    if body.get("template_id") is not None:
        req.template_id = _str(body["template_id"], "template_id")
    return req


def _resize(resources: Any) -> dict[str, Any]:
    if not isinstance(resources, dict):
        raise bad("invalid_type", "resources must be an object")
    extra = sorted(set(resources) - {"cpus", "memory_mb", "disk_mb"})
    if extra:
        raise bad("unknown_field", f"resources cannot resize {', '.join(extra)}")
    if not resources:
        raise bad("empty_update", "resources must name at least one of cpus, memory_mb, disk_mb")
    clean: dict[str, Any] = {}
    if "cpus" in resources:
        clean["cpus"] = _number(resources["cpus"], "resources.cpus", maximum=LIMITS["cpus"])
        if not clean["cpus"].is_integer():
            raise bad("invalid_value", "resources.cpus must be a whole number of vCPUs")
    for key in ("memory_mb", "disk_mb"):
        if key in resources:
            clean[key] = _int(resources[key], f"resources.{key}", minimum=1, maximum=LIMITS[key])
    return clean


@dataclass
class PatchRequest:
    """A validated ``PATCH /sandboxes/{id}`` body: each field None when absent."""

    name: str | None = None
    auto_resume: bool | None = None
    allow_unauthenticated_access: bool | None = None
    exposed_ports: tuple[int, ...] | None = None
    network_given: bool = False
    network: NetworkConfig | None = None
    resources: dict[str, Any] | None = None
    unknown: list[str] = field(default_factory=list)


def parse_patch(body: Any, current: NetworkConfig | None, resolve: Resolver) -> PatchRequest:
    """Validate a PATCH body completely (the tri-state ``network`` through the reference policy)."""
    if not isinstance(body, dict):
        raise bad("invalid_type", "request body must be a JSON object")
    req = PatchRequest(unknown=sorted(k for k in body if k not in PATCH_KEYS))
    known = [k for k in body if k in PATCH_KEYS]
    if not known:
        raise bad("empty_update", "at least one sandbox update field must be provided")
    if body.get("name") is not None:
        req.name = check_name(body["name"])
    req.auto_resume = _bool(body, "auto_resume")
    unauth = _bool(body, "allow_unauthenticated_access")
    legacy = _bool(body, "allow_unauthenticated_proxy_access")
    req.allow_unauthenticated_access = unauth if unauth is not None else legacy
    if body.get("exposed_ports") is not None:
        req.exposed_ports = check_ports(body["exposed_ports"])
    if "network" in body:
        req.network_given = True
        try:
            req.network = apply_network_update(current, body, resolve)
        except PolicyError as exc:
            raise bad(exc.code, str(exc)) from exc
    if body.get("resources") is not None:
        req.resources = _resize(body["resources"])
        if len(body) > 1:
            raise bad("invalid_update", "a resource resize cannot be combined with other update fields")
    return req


def parse_snapshot_type(body: Any) -> str | None:
    """Return the ``snapshot_type`` of a snapshot body (None: the default); 400 for anything else."""
    if not isinstance(body, dict):
        raise bad("invalid_type", "request body must be a JSON object")
    snapshot_type = body.get("snapshot_type")
    if snapshot_type is not None and (not isinstance(snapshot_type, str) or snapshot_type not in SNAPSHOT_TYPES):
        raise bad("invalid_snapshot_type", "snapshot_type must be 'memory' or 'filesystem'")
    return snapshot_type
