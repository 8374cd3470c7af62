"""Parse TensorLake request bodies and query parameters completely before anything is changed.

The bodies are the declarations of :mod:`.bodies` and :mod:`.wire`, validated by pydantic (:func:`.refusals.parse` answers the
first defect as TensorLake does: a 4xx :class:`ApiError` with a stable ``code``); the query parameters are
read here. Keys the mock does not know are returned so the route can record them (an early warning when an
SDK upgrade sends something new).

Numbers have upper bounds (:data:`~.settings.LIMITS`): an absurd value such as ``timeout_secs: 1e30`` answers 400
``invalid_value`` naming the bound, and the served OpenAPI document states the same bounds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mockserver.core.errors import ApiError

from .settings import LIMITS, MANAGEMENT_PORT

if TYPE_CHECKING:
    from .bodies import CreateBody, UpdateBody
    from .wire import FileSystemMount, Resolver

__all__ = [
    "LIMITS",
    "MANAGEMENT_PORT",
    "bad",
    "conflict",
    "int_query",
    "not_found",
    "parse_create",
    "parse_detach",
    "parse_mount",
    "parse_patch",
    "parse_snapshot_type",
    "wire",
]


def wire() -> ModuleType:
    """Return :mod:`.wire` (loaded, with pydantic, on first use)."""
    return _declarations()[2]


@functools.cache
def _declarations() -> tuple[ModuleType, ModuleType, ModuleType]:
    """Return the body declarations, the refusals and the wire records, loaded (with pydantic) on first use."""
    from . import bodies, refusals, wire

    return bodies, refusals, wire


def bad(code: str, message: str, status: int = 400) -> ApiError:
    """Return a client error with ``code`` and ``message``."""
    return ApiError(status, code, message)


def not_found(what: str, ident: str) -> ApiError:
    """Return a 404 for an unknown sandbox or snapshot."""
    return ApiError(404, f"{what}_not_found", f"{what} {ident!r} not found")


def conflict(code: str, message: str) -> ApiError:
    """Return a 409."""
    return ApiError(409, code, message)


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


def parse_create(body: Any, resolve: Resolver) -> CreateBody:
    """Validate a create body completely (hostnames in its policy resolved); 4xx :class:`ApiError` on the first defect."""
    bodies, refusals, _ = _declarations()
    parsed: CreateBody = refusals.parse(bodies.CreateRequest, body, resolve=resolve)
    return parsed


def parse_patch(body: Any, resolve: Resolver) -> UpdateBody:
    """Validate a PATCH body completely (absent: keep, ``null``: clear, so ``network`` is given only when sent)."""
    bodies, refusals, _ = _declarations()
    parsed: UpdateBody = refusals.parse(bodies.UpdateRequest, body, resolve=resolve)
    return parsed


def parse_mount(body: Any) -> FileSystemMount:
    """Validate a file-system mount (an attach body)."""
    _, refusals, records = _declarations()
    mount: FileSystemMount = refusals.parse(records.FileSystemMount, body)
    return mount


def parse_detach(body: Any) -> str:
    """Return the ``mount_path`` of a detach body."""
    bodies, refusals, _ = _declarations()
    path: str = refusals.parse(bodies.DetachFileSystem, body).mount_path
    return path


def parse_snapshot_type(body: Any) -> str | None:
    """Return the ``snapshot_type`` of a snapshot body (None: the default); 400 for anything else."""
    bodies, refusals, _ = _declarations()
    snapshot_type: str | None = refusals.parse(bodies.SnapshotRequest, body).snapshot_type
    return snapshot_type
