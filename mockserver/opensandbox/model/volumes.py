"""The create request's ``volumes``: the body model's checks (422) and the Docker runtime's checks (400).

:func:`check_volumes` records what pydantic reports for ``volumes`` in the ``CreateSandboxRequest`` model
(types, patterns, lengths, each volume's "exactly one backend" and OSSFS's inline-credentials validators),
in pydantic's order; :func:`validate_volumes` is the runtime's pass over a body that passed the model:
duplicate names, sub-paths, host paths and the host-path allow-list, OSSFS bucket, endpoint and options.
Facts measured on the real 1.1.1 server with its default configuration: the allow-list is empty, so every
host path is refused (``VOLUME::HOST_PATH_NOT_ALLOWED``, "Allowed prefixes: []").

Known deviations: a ``pvc`` or ``ossfs`` volume that passes these checks is accepted and mounts nothing
(the real Docker runtime creates or inspects a Docker named volume, and runs ``ossfs2``, answering 500
``VOLUME::PVC_INSPECT_FAILED`` / ``VOLUME::OSSFS_MOUNT_FAILED`` when that fails); a host path inside a
configured ``allowed_host_paths`` prefix is accepted without the runtime's symlink and existence checks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mockserver.core import ApiError

from .validation import Checker, Pattern, value_error_entry

__all__ = ["DEVIATING_OPERATIONS", "check_volumes", "validate_volumes"]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {"lifecycle": ("POST /sandboxes",)}

_DNS_LABEL = Pattern(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_HOST_PATH = Pattern(r"^(/|[A-Za-z]:[\\/])")
_MOUNT_PATH = Pattern(r"^/.*")
_STORAGE = Pattern(r"^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)?$")
_OSSFS_VERSIONS = ("1.0", "2.0")
_BACKENDS = ("host", "pvc", "ossfs")
_DRIVE = re.compile(r"[A-Za-z]:")
_DRIVE_ROOT = re.compile(r"[A-Za-z]:/")


def _bad_request(code: str, message: str) -> ApiError:
    return ApiError(400, code, message)


def _optional_string(check: Checker, data: dict[str, Any], key: str, loc: list[str | int], **rules: Any) -> None:
    if data.get(key) is not None:
        check.string(data[key], [*loc, key], **rules)


def _required_string(check: Checker, data: dict[str, Any], key: str, loc: list[str | int], **rules: Any) -> None:
    if key not in data:
        check.add("missing", [*loc, key], data)
    else:
        check.string(data[key], [*loc, key], **rules)


def _optional_bool(check: Checker, data: dict[str, Any], key: str, loc: list[str | int]) -> None:
    if key in data:
        check.boolean(data[key], [*loc, key])


def _check_host(check: Checker, host: dict[str, Any], loc: list[str | int]) -> None:
    _required_string(check, host, "path", loc, pattern=_HOST_PATH)


def _check_pvc(check: Checker, pvc: dict[str, Any], loc: list[str | int]) -> None:
    _required_string(check, pvc, "claimName", loc, max_length=253, pattern=_DNS_LABEL)
    _optional_bool(check, pvc, "createIfNotExists", loc)
    _optional_bool(check, pvc, "deleteOnSandboxTermination", loc)
    _optional_string(check, pvc, "storageClass", loc)
    _optional_string(check, pvc, "storage", loc, pattern=_STORAGE)
    if pvc.get("accessModes") is not None:
        check.str_list(pvc["accessModes"], [*loc, "accessModes"])


def _check_ossfs(check: Checker, ossfs: dict[str, Any], loc: list[str | int]) -> None:
    before = len(check.errors)
    _required_string(check, ossfs, "bucket", loc, min_length=3, max_length=63)
    _required_string(check, ossfs, "endpoint", loc, min_length=1)
    if "version" in ossfs:
        check.literal(ossfs["version"], [*loc, "version"], _OSSFS_VERSIONS)
    if ossfs.get("options") is not None:
        check.str_list(ossfs["options"], [*loc, "options"])
    _optional_string(check, ossfs, "accessKeyId", loc, min_length=1)
    _optional_string(check, ossfs, "accessKeySecret", loc, min_length=1)
    if len(check.errors) == before and not (ossfs.get("accessKeyId") and ossfs.get("accessKeySecret")):
        message = "OSSFS inline credentials are required: accessKeyId and accessKeySecret."
        check.errors.append(value_error_entry(ossfs, message, loc))


_NESTED = {"host": _check_host, "pvc": _check_pvc, "ossfs": _check_ossfs}


def _check_volume(check: Checker, volume: dict[str, Any], loc: list[str | int]) -> None:
    before = len(check.errors)
    _required_string(check, volume, "name", loc, max_length=63, pattern=_DNS_LABEL)
    for backend in _BACKENDS:
        if volume.get(backend) is not None and (nested := check.obj(volume[backend], [*loc, backend])) is not None:
            _NESTED[backend](check, nested, [*loc, backend])
    _required_string(check, volume, "mountPath", loc, pattern=_MOUNT_PATH)
    _optional_bool(check, volume, "readOnly", loc)
    _optional_string(check, volume, "subPath", loc)
    if len(check.errors) > before:
        return
    backends = sum(volume.get(b) is not None for b in _BACKENDS)
    if backends != 1:
        how = "none was provided" if backends == 0 else "multiple were provided"
        message = f"Exactly one backend (host, pvc, ossfs) must be specified, but {how}."
        check.errors.append(value_error_entry(volume, message, loc))


def check_volumes(check: Checker, volumes: Any) -> None:
    """Record the body model's errors for ``volumes`` (a list of ``Volume`` objects, or null)."""
    if volumes is None:
        return
    loc: list[str | int] = ["body", "volumes"]
    if not isinstance(volumes, list):
        check.add("list_type", loc, volumes)
        return
    for i, item in enumerate(volumes):
        if (volume := check.obj(item, [*loc, i])) is not None:
            _check_volume(check, volume, [*loc, i])


def _validate_sub_path(sub_path: str | None) -> None:
    if not sub_path:
        return
    code = "VOLUME::INVALID_SUB_PATH"
    if sub_path.startswith("/"):
        raise _bad_request(code, f"SubPath '{sub_path}' must be a relative path, not absolute.")
    if ".." in sub_path.split("/"):
        raise _bad_request(code, f"SubPath '{sub_path}' contains path traversal '..' which is not allowed.")


def _prefix_form(path: str) -> str:
    """Return a path as the allow-list compares it: forward slashes, a lower-case drive, no trailing slash."""
    normalized = path.replace("\\", "/")
    if _DRIVE.match(normalized):
        normalized = normalized[0].lower() + normalized[1:]
    return normalized[:-1] if len(normalized) > 1 and normalized.endswith("/") else normalized


def _validate_host_path(path: str, allowed: Sequence[str]) -> None:
    code = "VOLUME::INVALID_HOST_PATH"
    forward = path.replace("\\", "/")
    tail = forward[2:] if _DRIVE_ROOT.match(forward) else forward
    if "/.." in tail:
        raise _bad_request(code, f"Host path '{path}' contains path traversal component '..'.")
    if "//" in tail or (len(tail) > 1 and tail.endswith("/")):
        raise _bad_request(code, f"Host path '{path}' is not normalized. Remove redundant slashes.")
    wanted = _prefix_form(path)
    if not any(wanted == _prefix_form(p) or wanted.startswith(_prefix_form(p) + "/") for p in allowed):
        raise _bad_request(
            "VOLUME::HOST_PATH_NOT_ALLOWED",
            f"Host path '{path}' is not under any allowed prefix. Allowed prefixes: {list(allowed)}",
        )


def _validate_ossfs(ossfs: dict[str, Any]) -> None:
    if not str(ossfs["bucket"]).strip():
        raise _bad_request("VOLUME::INVALID_OSSFS_BUCKET", "OSSFS bucket cannot be empty.")
    if not str(ossfs["endpoint"]).strip():
        raise _bad_request("VOLUME::INVALID_OSSFS_ENDPOINT", "OSSFS endpoint cannot be empty.")
    for option in ossfs.get("options") or []:
        if not option.strip():
            raise _bad_request("VOLUME::INVALID_OSSFS_OPTION", "OSSFS options must be non-empty strings.")
        if option.strip().startswith("-"):
            raise _bad_request(
                "VOLUME::INVALID_OSSFS_OPTION",
                "OSSFS options must be raw option payloads without '-' prefix (e.g. 'allow_other', 'uid=1000').",
            )


def validate_volumes(volumes: Sequence[dict[str, Any]] | None, allowed_host_paths: Sequence[str] = ()) -> None:
    """Apply the runtime's checks to volumes the body model accepted, volume by volume, in the real order."""
    seen: set[str] = set()
    for volume in volumes or ():
        name = str(volume["name"])
        if name in seen:
            raise _bad_request(
                "VOLUME::DUPLICATE_NAME", f"Duplicate volume name '{name}'. Each volume must have a unique name."
            )
        seen.add(name)
        _validate_sub_path(volume.get("subPath"))
        if volume.get("host") is not None:
            _validate_host_path(str(volume["host"]["path"]), allowed_host_paths)
        if volume.get("ossfs") is not None:
            _validate_ossfs(volume["ossfs"])
