"""The create request's ``volumes``: the body model's checks (422) and the Docker runtime's checks (400).

The body model's checks are the ``Volume`` declaration's (:mod:`.bodies`: types, patterns, lengths, each volume's
"exactly one backend" and OSSFS's inline-credentials validators); :func:`validate_volumes` is the runtime's pass
over the volumes that passed the model:
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
from typing import TYPE_CHECKING

from mockserver.core import ApiError

if TYPE_CHECKING:  # the declarations import pydantic: loaded with the first create, not with this module
    from .bodies import OssfsBackend, Volume

__all__ = ["DEVIATING_OPERATIONS", "validate_volumes"]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {"lifecycle": ("POST /sandboxes",)}

_DRIVE = re.compile(r"[A-Za-z]:")
_DRIVE_ROOT = re.compile(r"[A-Za-z]:/")


def _bad_request(code: str, message: str) -> ApiError:
    return ApiError(400, code, message)


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


def _validate_ossfs(ossfs: OssfsBackend) -> None:
    if not ossfs.bucket.strip():
        raise _bad_request("VOLUME::INVALID_OSSFS_BUCKET", "OSSFS bucket cannot be empty.")
    if not ossfs.endpoint.strip():
        raise _bad_request("VOLUME::INVALID_OSSFS_ENDPOINT", "OSSFS endpoint cannot be empty.")
    for option in ossfs.options or []:
        if not option.strip():
            raise _bad_request("VOLUME::INVALID_OSSFS_OPTION", "OSSFS options must be non-empty strings.")
        if option.strip().startswith("-"):
            raise _bad_request(
                "VOLUME::INVALID_OSSFS_OPTION",
                "OSSFS options must be raw option payloads without '-' prefix (e.g. 'allow_other', 'uid=1000').",
            )


def validate_volumes(volumes: Sequence[Volume] | None, allowed_host_paths: Sequence[str] = ()) -> None:
    """Apply the runtime's checks to volumes the body model accepted, volume by volume, in the real order."""
    seen: set[str] = set()
    for volume in volumes or ():
        if volume.name in seen:
            raise _bad_request(
                "VOLUME::DUPLICATE_NAME",
                f"Duplicate volume name '{volume.name}'. Each volume must have a unique name.",
            )
        seen.add(volume.name)
        _validate_sub_path(volume.sub_path)
        if volume.host is not None:
            _validate_host_path(volume.host.path, allowed_host_paths)
        if volume.ossfs is not None:
            _validate_ossfs(volume.ossfs)
