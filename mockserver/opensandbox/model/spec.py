"""Create-request rules without HTTP: the runtime's checks of a ``CreateSandboxRequest`` and Kubernetes label syntax.

:func:`parse_create` checks a body as the real server does: its declaration (:class:`.bodies.CreateSandboxRequest`:
the field errors and the model validator, 422, from pydantic), then the runtime's checks (400) in the real
Docker runtime's order: lifecycle hooks, ``poolRef``, the snapshot, the entrypoint, metadata labels,
``platform``, the expiry, secure access, the network policy, resource limits, volumes (:mod:`.volumes`).

The network policy at create is the body model's only (``api/schema.py``: ``NetworkRule.action: str``,
``target: str = Field(..., min_length=1)``, ``defaultAction: Optional[str]``): the Docker runtime checks nothing
else of it (``ensure_egress_configured`` only asks for ``egress.image``) and hands the sidecar its dump
(``network_policy.model_dump(by_alias=True, exclude_none=True)`` as ``OPENSANDBOX_EGRESS_RULES``). Rules the
sidecar refuses (``*``, a CIDR in ``dns`` mode, an action that is neither allow nor deny) are therefore accepted
(202) and refused later, by the sidecar at its start: :func:`sidecar_policy` returns that refusal, and the
sandbox then has no running sidecar (its port 18080 answers 502) and no egress at all (it shares the dead
sidecar's network namespace).

Known deviations: ``platform.os: "windows"`` is accepted like ``linux`` (the real Docker runtime then applies
its Windows profile: cpu >= 2, memory >= 4G, disk >= 64G and host devices); ``OPENSANDBOX_EGRESS_*``
variables in ``env`` are kept in the sandbox's environment (the real server passes the allowed ones to the
egress sidecar and refuses the others with 400).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.opensandbox import NetworkPolicy, PolicyError
from mockserver.core import ApiError

from .volumes import validate_volumes

RESERVED_PREFIX = "opensandbox.io/"
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 200
STATES = ("Pending", "Running", "Pausing", "Paused", "Resuming", "Stopping", "Terminated", "Failed")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"^(?:{_DNS_LABEL}\.)*{_DNS_LABEL}$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_QUANTITY = re.compile(r"\s*(\d+)([^\W\d_]*)\s*")
_MEMORY_UNITS = {
    "": 1,
    "b": 1,
    **{unit: 1000**power for power, unit in enumerate("kmgt", 1)},
    **{f"{unit}b": 1000**power for power, unit in enumerate("kmgt", 1)},
    **{f"{unit}i": 1024**power for power, unit in enumerate("kmgt", 1)},
}
_MAX_INT64 = 2**63 - 1
_INVALID = "SANDBOX::INVALID_PARAMETER"

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {"lifecycle": ("POST /sandboxes",)}
#: The entrypoint a sandbox restored from a snapshot runs when the request names none.
SNAPSHOT_ENTRYPOINT = ("tail", "-f", "/dev/null")
SUPPORTED_OS = frozenset({"linux", "windows"})
SUPPORTED_ARCH = frozenset({"amd64", "arm64"})


def iso(ts: float) -> str:
    """Return epoch seconds as RFC 3339 UTC with a ``Z``, with microseconds unless they are zero (as pydantic)."""
    moment = datetime.fromtimestamp(ts, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if moment.microsecond else "%Y-%m-%dT%H:%M:%SZ")


def bad_request(code: str, message: str) -> ApiError:
    """Return a 400 with the real server's flat error body."""
    return ApiError(400, code, message)


def _valid_label_key(key: str) -> bool:
    name = key
    if "/" in key:
        prefix, name = key.split("/", 1)
        if not prefix or not name or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
            return False
    return len(name) <= 63 and bool(_LABEL_NAME.match(name))


def validate_labels(metadata: dict[str, str] | None) -> None:
    """Reject metadata that is not a valid set of Kubernetes labels, as the real server does."""
    code = "SANDBOX::INVALID_METADATA_LABEL"
    for key, value in (metadata or {}).items():
        if key.startswith(RESERVED_PREFIX):
            raise bad_request(
                code,
                f"Metadata key '{key}' uses the reserved prefix '{RESERVED_PREFIX}'. "
                "Keys under this prefix are managed by the system and cannot be set via metadata.",
            )
        if not _valid_label_key(key):
            raise bad_request(
                code,
                f"Metadata key '{key}' is invalid: must be either a name or a DNS-subdomain prefix and name "
                "separated by /, where the name is up to 63 characters and matches "
                "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, and the optional prefix is a valid DNS subdomain "
                "up to 253 characters.",
            )
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise bad_request(
                code,
                f"Metadata value '{value}' is invalid: must be 63 characters or less, start/end with an "
                "alphanumeric character, and contain only alphanumeric, '-', '_', or '.' characters.",
            )


def _memory_bytes(text: str) -> int | None:
    """Return a memory quantity (``512Mi``, ``2G``, ``100``) in bytes, or None when unreadable."""
    found = _QUANTITY.fullmatch(text)
    if found is None:
        return None
    factor = _MEMORY_UNITS.get(found.group(2).lower())
    return None if factor is None else int(found.group(1)) * factor


def _nano_cpus(text: str) -> int | None:
    """Return a CPU quantity (``2``, ``0.5``, ``500m``) in billionths of a core, or None when unreadable."""
    raw = text.strip().lower()
    millis = raw.endswith("m")
    try:
        cores = float(raw[:-1] if millis else raw) / (1000 if millis else 1)
    except ValueError:
        return None
    nanos = cores * 1e9
    if not math.isfinite(nanos) or int(nanos) > _MAX_INT64:
        return None
    return int(nanos)


def _gpu_count(text: str) -> int | None:
    """Return a GPU count, -1 for ``all``, or None when unreadable."""
    raw = text.strip().lower()
    if raw == "all":
        return -1
    try:
        return int(raw)
    except ValueError:
        return None


def validate_docker_resource_limits(limits: dict[str, str]) -> None:
    """Reject ``resourceLimits`` the Docker runtime cannot turn into container limits (400)."""
    for key, parse in (("memory", _memory_bytes), ("cpu", _nano_cpus), ("gpu", _gpu_count)):
        if key not in limits:
            continue
        value = limits[key]
        parsed = parse(value) if value else None
        if parsed is not None and (parsed > 0 or (key == "gpu" and parsed == -1)):
            continue
        shown = repr(value[:80]) + (f"... ({len(value)} characters)" if len(value) > 80 else "")
        rule = "positive device count or 'all'." if key == "gpu" else "positive resource limit."
        raise bad_request(_INVALID, f"Invalid resourceLimits.{key}: {shown}; must resolve to a {rule}")


def _platform(given_os: str, given_arch: str) -> dict[str, str]:
    """Return a checked ``platform`` as the Docker runtime stores it (os and arch stripped, lower case); 400 else."""
    os_name, arch = given_os.strip().lower(), given_arch.strip().lower()
    if os_name not in SUPPORTED_OS:
        raise bad_request(_INVALID, f"Unsupported platform.os '{given_os}'. Supported values: {sorted(SUPPORTED_OS)}.")
    if arch not in SUPPORTED_ARCH:
        raise bad_request(
            _INVALID, f"Unsupported platform.arch '{given_arch}'. Supported values: {sorted(SUPPORTED_ARCH)}."
        )
    return {"os": os_name, "arch": arch}


def check_timeout(timeout: int | None, now: float) -> None:
    """Refuse a timeout whose expiry (``now`` + timeout) no timestamp can hold (400)."""
    if timeout is None:
        return
    try:
        iso(now + timeout)
    except (OverflowError, ValueError, OSError):
        raise bad_request(_INVALID, f"Sandbox timeout {timeout}s is too large to represent safely.") from None


@dataclass
class CreateSpec:
    """A validated ``CreateSandboxRequest``."""

    image: dict[str, Any] | None
    snapshot_id: str | None
    timeout: int | None
    entrypoint: list[str]
    env: dict[str, str]
    metadata: dict[str, str]
    resource_limits: dict[str, str]
    extensions: dict[str, str]
    platform: dict[str, str] | None
    policy: NetworkPolicy | None
    unknown_fields: list[str] = field(default_factory=list)
    echo_metadata: bool = False
    #: Why the egress sidecar refuses the policy create accepted (None: it runs with ``policy``).
    sidecar_refusal: str | None = None


def parse_create(
    body: Any,
    runtime: str = "docker",
    *,
    now: float | None = None,
    allowed_host_paths: Sequence[str] = (),
    policy_refusal: str | None = None,
    max_timeout: int | None = None,
    resolve_snapshot: Callable[[str], object] | None = None,
) -> CreateSpec:
    """Validate a create body with its declaration (422, :class:`.bodies.CreateSandboxRequest`), then as the given
    runtime would (400), in the real order.

    ``now`` (the server's time) lets the expiry check run where the real server runs it, after the
    platform check; ``allowed_host_paths`` is the server's host-volume allow-list (empty by default);
    ``resolve_snapshot`` raises when a ``snapshotId`` names no snapshot the caller may restore (404 / 409),
    called where the real server resolves it (after ``poolRef``, before the labels). ``policy_refusal``
    (:meth:`.config.ServerConfig.policy_refusal`: host network mode, no ``[egress] image``) makes any
    ``networkPolicy`` a 400 where the real server checks it: after ``secureAccess``, before the policy's targets
    and ``resourceLimits`` are looked at. ``max_timeout`` (``[server] max_sandbox_timeout_seconds``) bounds the
    ``timeout`` right after its expiry is checked, as ``ensure_timeout_within_limit`` does.
    """
    from .bodies import CREATE_KEYS, CreateSandboxRequest, validated

    req = validated(CreateSandboxRequest, body)
    pool_ref = req.pool_ref
    has_snapshot = req.has_snapshot and not pool_ref
    entrypoint = req.entrypoint
    docker = runtime == "docker"
    if docker and req.lifecycle is not None:
        raise bad_request(_INVALID, "lifecycle hooks are not supported by the Docker provider.")
    if docker and pool_ref:
        raise bad_request(
            "SANDBOX::UNSUPPORTED_POOL_REF",
            "poolRef is not supported by the Docker provider. Use Kubernetes BatchSandbox provider instead.",
        )
    if has_snapshot and resolve_snapshot is not None:
        resolve_snapshot(str(req.snapshot_id).strip())
    if has_snapshot and not entrypoint:
        entrypoint = list(SNAPSHOT_ENTRYPOINT)
    if docker and not entrypoint and not pool_ref:
        raise bad_request("DOCKER::INVALID_ENTRYPOINT", "Entrypoint must contain at least one command.")
    metadata = dict(req.metadata or {})
    validate_labels(metadata)
    platform = None if req.platform is None else _platform(req.platform.os, req.platform.arch)
    if now is not None:
        check_timeout(req.timeout, now)
    if max_timeout is not None and req.timeout is not None and req.timeout > max_timeout:
        raise bad_request(_INVALID, f"Sandbox timeout {req.timeout}s exceeds configured maximum of {max_timeout}s.")
    if docker and req.secure_access:
        raise bad_request(
            _INVALID,
            "secureAccess is not supported when runtime.type='docker'. "
            "Use the Kubernetes runtime to create secured sandboxes.",
        )
    if req.network_policy is not None and policy_refusal is not None:
        raise bad_request(_INVALID, policy_refusal)
    policy, refusal = (None, None)
    if req.network_policy is not None:
        policy, refusal = sidecar_policy(req.network_policy.model_dump(by_alias=True, exclude_none=True))
    resource_limits = dict(req.resource_limits or {})
    if docker:
        validate_docker_resource_limits(resource_limits)
    validate_volumes(req.volumes, allowed_host_paths)
    return CreateSpec(
        image={"uri": req.image.uri} if req.image is not None and req.has_image else None,
        snapshot_id=req.snapshot_id if has_snapshot else None,
        timeout=req.timeout,
        entrypoint=list(entrypoint or []),
        env={k: v for k, v in (req.env or {}).items() if v is not None},
        metadata=metadata,
        resource_limits=resource_limits,
        extensions=dict(req.extensions or {}),
        platform=platform,
        policy=policy,
        unknown_fields=sorted(set(body) - CREATE_KEYS),
        echo_metadata=req.metadata is not None,
        sidecar_refusal=refusal,
    )


def sidecar_policy(payload: dict[str, Any]) -> tuple[NetworkPolicy | None, str | None]:
    """Return the policy the egress sidecar runs for a create body's ``networkPolicy``, or its refusal.

    The server accepts any policy its body model accepts and hands the sidecar the model's dump by alias without
    ``None`` (``payload``: ``defaultAction`` when given and each rule's ``action`` and ``target``); the sidecar
    parses it at its start and refuses what the reference engine refuses.
    """
    try:
        return NetworkPolicy.from_json(payload), None
    except PolicyError as exc:
        return None, f"the egress sidecar refuses the policy: {exc}"
