"""The lifecycle API's operations: one function per route, from a decoded request to a plain answer.

Each function takes the model (:class:`~.operations.OpenSandboxModel`), the caller's tenant and what the
request carried (a decoded JSON body, query pairs, path values), applies the real server's checks in its order (body model first, as FastAPI
does, then the sandbox lookup, then the state rules) and returns the response body as a dict, or raises
an :class:`~mockserver.core.ApiError` / :class:`~.validation.RequestValidationError`. The bodies are validated by
their declarations (:mod:`.bodies`), imported on first use.

Known deviations from the real 1.1.1 server:

* The Kubernetes-like profile answers a create at once with ``Pending`` (the real one blocks until
  the pod runs); its endpoints answer 404 ``KUBERNETES::POD_IP_NOT_AVAILABLE`` until ready.
* A ``networkPolicy`` whose targets the reference engine rejects is accepted (202) as on the real server; the
  sandbox then has no sidecar and no egress (:func:`~.spec.sidecar_policy`), where the real Docker runtime's
  sidecar would fail its start and the create would answer 500 after the readiness timeout.
* Bodies over 1 MiB get 413 (the real server has no limit).

The diagnostics routes are :mod:`.diagnostics`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import Any

from .config import ServerConfig
from .errors import TextError
from .operations import OpenSandboxModel
from .profiles import SERVER_VERSION
from .query import Query, metadata_filter, page_of, query_last, query_values
from .records import SandboxRecord, SnapshotRecord
from .spec import iso, parse_create

__all__ = [
    "DEVIATING_OPERATIONS",
    "CreatedSnapshot",
    "create_sandbox",
    "create_snapshot",
    "delete_sandbox",
    "delete_snapshot",
    "get_sandbox",
    "get_snapshot",
    "health",
    "list_sandboxes",
    "list_snapshots",
    "metrics_event",
    "patch_metadata",
    "pause_sandbox",
    "renew_expiration",
    "resume_sandbox",
    "version",
]

#: The operations of the served OpenAPI documents the known deviations above concern (see ``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {"lifecycle": ("POST /sandboxes",)}


def health() -> dict[str, Any]:
    """Return the health check's body."""
    return {"status": "healthy"}


def version() -> dict[str, Any]:
    """Return the server version's body."""
    return {"version": SERVER_VERSION}


def metrics_event(state: OpenSandboxModel, body: Any) -> None:
    """Accept an SDK telemetry event (:class:`.bodies.MetricsEvent`: ``sandbox.create``, its duration and outcome);
    422 when malformed. The body is kept as sent."""
    from .bodies import MetricsEvent, validated

    validated(MetricsEvent, body)
    state.add_metrics_event(body)


def create_sandbox(
    state: OpenSandboxModel, tenant: str, body: Any, config: ServerConfig | None = None
) -> tuple[SandboxRecord, dict[str, Any]]:
    """Create a sandbox (202): return its record and the ``CreateSandboxResponse`` body."""
    allowed = config.allowed_host_paths if config is not None else ()
    spec = parse_create(
        body,
        state.profile.name,
        now=state.clock.now(),
        allowed_host_paths=allowed,
        policy_refusal=config.policy_refusal() if config is not None else None,
        max_timeout=config.max_timeout if config is not None else None,
        resolve_snapshot=lambda snapshot_id: state.restorable_snapshot(tenant, snapshot_id),
    )
    sb = state.create(tenant, spec)
    return sb, sb.create_response()


def get_sandbox(state: OpenSandboxModel, tenant: str, sandbox_id: str) -> dict[str, Any]:
    """Return one sandbox's body (cached per revision: read-only); 404 for an unknown one or another tenant's."""
    return state.wire(state.find(sandbox_id, tenant))


def list_sandboxes(state: OpenSandboxModel, tenant: str, query: Query) -> dict[str, Any]:
    """Return a page of the tenant's sandboxes: ``state`` OR-ed, ``metadata`` AND-ed, newest first."""
    page = page_of(query)
    metadata = metadata_filter(query)
    return state.list(tenant, query_values(query, "state"), metadata, page.page, page.size)


def delete_sandbox(state: OpenSandboxModel, tenant: str, sandbox_id: str) -> None:
    """Delete a sandbox (204)."""
    state.delete(tenant, sandbox_id)


def pause_sandbox(state: OpenSandboxModel, tenant: str, sandbox_id: str) -> None:
    """Pause a sandbox (202; 409 unless Running)."""
    state.pause(tenant, sandbox_id)


def resume_sandbox(state: OpenSandboxModel, tenant: str, sandbox_id: str) -> None:
    """Resume a sandbox (202; 409 unless Paused)."""
    state.resume(tenant, sandbox_id)


def renew_expiration(state: OpenSandboxModel, tenant: str, sandbox_id: str, body: Any) -> dict[str, Any]:
    """Set a new expiry time: ``{"expiresAt"}`` in, the stored ``{"expiresAt"}`` out.

    422 for a body without a valid ``expiresAt`` (:class:`.bodies.RenewRequest`: RFC 3339 text or a Unix time;
    a time without an offset is UTC); then 404; then, as the real server (it converts to UTC after the lookup
    and does not catch the overflow), a bare 500 for a time UTC cannot hold; then 400 for a time not in the
    future and 409 for a sandbox without automatic expiry.
    """
    from .bodies import RenewRequest, validated

    when = validated(RenewRequest, body).expires_at
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    sb = state.find(sandbox_id, tenant)
    try:
        when = when.astimezone(UTC)
    except OverflowError:
        raise TextError(500, "INTERNAL_SERVER_ERROR", "Internal Server Error") from None
    return {"expiresAt": iso(state.renew(sb.tenant, sb.id, when))}


def patch_metadata(state: OpenSandboxModel, tenant: str, sandbox_id: str, body: Any) -> dict[str, Any]:
    """Merge-patch the metadata (null deletes): 422 unless an object of strings and nulls; the sandbox body."""
    from .bodies import METADATA_PATCH, validated

    patch = validated(METADATA_PATCH, body)
    sb = state.find(sandbox_id, tenant)
    return state.patch_metadata(sb.tenant, sb.id, patch).to_json()


@dataclass(frozen=True)
class CreatedSnapshot:
    """A snapshot just created: its record, its body and the ``Location`` to read it at."""

    record: SnapshotRecord
    body: dict[str, Any]
    location: str


def create_snapshot(state: OpenSandboxModel, tenant: str, sandbox_id: str, body: Any, delay: float) -> CreatedSnapshot:
    """Snapshot a sandbox (202): an optional ``{"name"}`` body; ready after ``delay`` virtual seconds."""
    from .bodies import CreateSnapshotRequest, validated

    name = None if body is None else validated(CreateSnapshotRequest, body).name
    sb = state.find(sandbox_id, tenant)
    snap = state.create_snapshot(sb.tenant, sb.id, name, delay)
    return CreatedSnapshot(snap, snap.to_json(state.clock.now()), f"/v1/snapshots/{snap.id}")


#: The largest SQLite integer: the real server's snapshot store puts ``(page - 1) * pageSize`` in ``OFFSET ?``.
SQLITE_MAX_INTEGER = 2**63 - 1


def list_snapshots(state: OpenSandboxModel, tenant: str, query: Query) -> dict[str, Any]:
    """Return a page of the tenant's snapshots (``sandboxId``, ``name`` and ``state`` filters), newest first.

    As the real server (``repositories/snapshots/sqlite.py``: ``LIMIT ? OFFSET ?``, the overflow not caught), a
    page whose offset SQLite cannot hold answers a bare 500.
    """
    page = page_of(query)
    if (page.page - 1) * page.size > SQLITE_MAX_INTEGER:
        raise TextError(500, "INTERNAL_SERVER_ERROR", "Internal Server Error")
    return state.list_snapshots(
        tenant,
        query_last(query, "sandboxId"),
        query_last(query, "name"),
        query_values(query, "state"),
        page.page,
        page.size,
    )


def get_snapshot(state: OpenSandboxModel, tenant: str, snapshot_id: str) -> dict[str, Any]:
    """Return one snapshot's body; 404 ``SNAPSHOT::NOT_FOUND``."""
    return state.find_snapshot(tenant, snapshot_id).to_json(state.clock.now())


def delete_snapshot(state: OpenSandboxModel, tenant: str, snapshot_id: str) -> None:
    """Delete one snapshot (204)."""
    state.delete_snapshot(tenant, snapshot_id)
