"""The TensorLake answers as declarations: what the model's answer bodies hold, for the OpenAPI document.

The answers themselves are built by the model (:meth:`.records.Sandbox.info`, :mod:`.lifecycle`) as plain
dicts, cached per revision; these classes declare their shape once so that
:mod:`mockserver.tensorlake.openapi` can generate the document, and the tests check every answer against it.
SandboxInfo's settings come from :class:`.settings.SandboxSettings` (each shown setting under its
:class:`.settings.Wire` key), so a new shown setting needs no edit here.

Only the generator and the tests import this module; the served mock never does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from .settings import SHOWN, SNAPSHOT_STATUSES, STATUSES, kept_types
from .wire import (
    EpochMs,
    ResourceResize,
)

Status = Literal[STATUSES]  # type: ignore[valid-type]
#: The default of a key an answer may leave out but never sends as null (the document drops null defaults).
OMITTED: Any = None
SnapshotStatus = Literal[SNAPSHOT_STATUSES]  # type: ignore[valid-type]


class Answer(BaseModel):
    """An answer record (described, never validated by the mock)."""

    model_config = ConfigDict(title=None)


class Error(Answer):
    """A refusal: ``code`` and ``message`` (``error`` where a proxy answers)."""

    code: str
    message: str
    error: str = OMITTED


class SandboxInfoBase(Answer):
    """The lifecycle part of SandboxInfo (GET, PATCH, list items); the shown settings are added to it."""

    id: str
    namespace: str
    status: Status
    runtime: str = "firecracker"
    resource_resize: ResourceResize = OMITTED
    pool_id: str | None = None
    outcome: str | None = None
    termination_reason: str | None = None
    error_details: Any = None
    pending_reason: str | None = None
    created_at: EpochMs | None = None
    terminated_at: EpochMs | None = None
    ingress_endpoint: str | None = None
    sandbox_url: str | None = None
    routing_hint: str | None = None


def _sandbox_info() -> type[SandboxInfoBase]:
    """Return SandboxInfo: the lifecycle fields, then each shown setting (required unless it may be null)."""
    shown: dict[str, Any] = {}
    for name, key in SHOWN.items():
        kept = kept_types()[name]
        nullable = getattr(kept, "__args__", None) is not None and type(None) in kept.__args__
        shown[key] = (kept, None) if nullable else (kept, ...)
    model: type[SandboxInfoBase] = create_model("SandboxInfo", __base__=SandboxInfoBase, **shown)
    return model


SandboxInfo = _sandbox_info()


class ArchivedSandboxInfo(Answer):
    """An archived sandbox: SandboxInfo and when it was archived (see :func:`archived_schema`)."""

    archived_at: EpochMs


class CreateSandboxResponse(Answer):
    """A create's answer (also each item of a copy's)."""

    sandbox_id: str
    status: Status
    sandbox_url: str = OMITTED
    ingress_endpoint: str = OMITTED
    routing_hint: str = OMITTED
    name: str = OMITTED
    pending_reason: str = OMITTED


class LifecycleFailure(Answer):
    """A create that failed or timed out."""

    sandbox_id: str
    status: Literal["failed", "terminated", "timeout"]
    reason: str = OMITTED
    termination_reason: str = OMITTED
    error_details: Any = OMITTED


class ListSandboxesResponse(Answer):
    """The tenant's live sandboxes."""

    sandboxes: list[SandboxInfo]  # type: ignore[valid-type]


class ListArchivedResponse(Answer):
    """A page of archived sandboxes, newest first."""

    sandboxes: list[ArchivedSandboxInfo]
    prev_cursor: str | None = None
    next_cursor: str | None = None


class CopySandboxResponse(Answer):
    """The copies of a sandbox."""

    source_sandbox_id: str
    sandboxes: list[CreateSandboxResponse]


class CreateSnapshotResponse(Answer):
    """A snapshot just started."""

    snapshot_id: str
    status: SnapshotStatus


class SnapshotInfo(Answer):
    """One snapshot."""

    id: str
    namespace: str
    sandbox_id: str
    status: SnapshotStatus
    snapshot_type: Literal["memory", "filesystem"] = OMITTED
    base_image: str | None = None
    size_bytes: int = OMITTED
    created_at: EpochMs = OMITTED
    error: str | None = None


class ListSnapshotsResponse(Answer):
    """Snapshots of the tenant or of one sandbox."""

    snapshots: list[SnapshotInfo]


class LogSignal(Answer):
    """One log line of a command run through the management API."""

    model_config = ConfigDict(populate_by_name=True)

    timestamp: EpochMs
    uuid: str
    namespace: str
    application: str = OMITTED
    sandboxId: str = OMITTED
    resourceAttributes: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = OMITTED
    body: str
    logAttributes: str
    allocations: list[str] = OMITTED
    functionRuns: list[str] = OMITTED
    level: Annotated[int, Field(ge=1, le=6)] = OMITTED


class LogsResponse(Answer):
    """Log lines and the next page's token."""

    logs: list[LogSignal]
    nextToken: str | None = None


class LogProcess(Answer):
    """A process that wrote log lines."""

    processId: str
    processPid: str
    processCommand: str
    processManagedId: str
    processManagedName: str
    firstSeen: EpochMs
    lastSeen: EpochMs
    logCount: int


class LogProcessesResponse(Answer):
    """The processes that wrote log lines."""

    processes: list[LogProcess]


#: Every answer record the document names.
ANSWERS: tuple[type[BaseModel], ...] = (
    Error,
    SandboxInfo,
    ArchivedSandboxInfo,
    CreateSandboxResponse,
    LifecycleFailure,
    ListSandboxesResponse,
    ListArchivedResponse,
    CopySandboxResponse,
    CreateSnapshotResponse,
    SnapshotInfo,
    ListSnapshotsResponse,
    LogsResponse,
    LogProcessesResponse,
)
