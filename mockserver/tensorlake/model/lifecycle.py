"""The lifecycle operations: the model, one :class:`Call` and a parsed body in, one :class:`Answer` (or a wait) out.

Each function is what one lifecycle route does, without HTTP: parse the call's query and body (:mod:`.validation`),
apply it to the :class:`~.operations.TensorLakeModel` for the call's tenant, and return the status and JSON body
of the answer. A refusal raises :class:`~mockserver.core.errors.ApiError`. The call arrives authenticated: its
:class:`~.auth.Tenant` is what :func:`.auth.tenant_of` made of its key and namespace, applied once per request
by the routes' gate (:mod:`mockserver.tensorlake.routes.gate`), as OpenSandbox's operations take the tenant its
gate found. The URLs an answer names are on the model's ingress domain (``model.domain``, a setting of the
store like its keys). The routes (:mod:`mockserver.tensorlake.routes.lifecycle`) and the contract oracle
(:mod:`harness.machines.tensorlake.oracle`) call the same functions.

Both route trees are served: the flat cloud paths (``/sandboxes...``) and the same paths under
``/v1/namespaces/{ns}``; the tenant carries the namespace (``default`` on the flat paths).

Known deviations from the real service: sandbox pools are not implemented (501 ``not_supported``); the log
routes return the output lines of commands run through the mock's management API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockserver.core.errors import ApiError
from mockserver.core.journal import RequestNotes

from .auth import Tenant
from .operations import TensorLakeModel
from .records import ROUTING_HINT, Sandbox
from .store import CreateOutcome
from .urls import Origin, endpoints
from .validation import bad, int_query, parse_create, parse_snapshot_type
from .waits import Settle, request_budget

__all__ = [
    "DEFAULT_ARCHIVE_PAGE",
    "Answer",
    "Call",
    "Outcome",
    "attach",
    "copy",
    "create",
    "create_body",
    "delete",
    "delete_snapshot",
    "detach",
    "get",
    "get_archived",
    "get_snapshot",
    "info",
    "list_archived",
    "list_sandboxes",
    "list_snapshots",
    "log_processes",
    "logs",
    "patch",
    "pools",
    "resume",
    "sandbox",
    "snapshot",
    "suspend",
]

DEFAULT_ARCHIVE_PAGE = 100
LOG_LEVELS = range(1, 7)
#: The origin of a call that names none (what a client on ``localhost`` over plain HTTP sees).
LOCAL_ORIGIN = Origin("http", "localhost")


@dataclass(frozen=True)
class Answer:
    """A lifecycle answer: HTTP status and JSON body (None: no body)."""

    status: int
    body: Any = None


Outcome = Answer | Settle[Answer]


@dataclass(frozen=True)
class Call:
    """One authenticated lifecycle request as plain data: its tenant, query, timeout headers and origin.

    ``notes`` collects what the journal records (tenant, sandbox, unknown body keys), filled in as the call
    is answered, refused or not.
    """

    tenant: Tenant
    origin: Origin = LOCAL_ORIGIN
    query: Mapping[str, Sequence[str]] = field(default_factory=dict)
    timeout_ms: str | None = None
    grace_ms: str | None = None
    notes: RequestNotes = field(default_factory=RequestNotes)

    def param(self, key: str) -> str | None:
        """Return the last value of query parameter ``key``, or None."""
        values = self.query.get(key)
        return values[-1] if values else None


# -- helpers ---------------------------------------------------------------------------------


def _noted(call: Call, sid: str | None) -> Tenant:
    """Return the call's tenant, noting the sandbox its path names for the journal."""
    if sid is not None:
        call.notes.sandbox_id = sid
    return call.tenant


def info(model: TensorLakeModel, call: Call, sb: Sandbox) -> dict[str, Any]:
    """Return the SandboxInfo of ``sb`` as the client of ``call`` sees it (cached per revision: read-only)."""
    sandbox_url, ingress = endpoints(call.origin, sb.id, model.domain)
    return sb.wire(sandbox_url=sandbox_url, ingress_endpoint=ingress)


def sandbox(model: TensorLakeModel, call: Call, sb: Sandbox, status: int = 200) -> Answer:
    """Answer the SandboxInfo of ``sb``, settled and read under the model lock (never half-updated)."""
    with model.lock:
        model.settle(sb)
        body = info(model, call, sb)
    call.notes.sandbox_id = sb.id
    return Answer(status, body)


def create_body(model: TensorLakeModel, call: Call, sb: Sandbox, status: str | None = None) -> dict[str, Any]:
    """Return the CreateSandboxResponse of ``sb`` (``status`` overrides what it reads now)."""
    sandbox_url, ingress = endpoints(call.origin, sb.id, model.domain)
    state = status or sb.status
    body: dict[str, Any] = {"sandbox_id": sb.id, "status": state, "ingress_endpoint": ingress}
    if sb.name is not None:
        body["name"] = sb.name
    if state == "running":
        body["sandbox_url"] = sandbox_url
        body["routing_hint"] = ROUTING_HINT
    if state == "pending":
        body["pending_reason"] = sb.pending_reason or "scheduling"
    if state == "failed" and sb.termination_reason:  # a copy the server had no room for
        body["reason"] = body["termination_reason"] = sb.termination_reason
    return body


# -- sandboxes -------------------------------------------------------------------------------


def create(model: TensorLakeModel, call: Call, body: Any) -> Outcome:
    """Create a sandbox; with ``wait`` (the default) wait until it runs, within the SDK's request budget.

    A create still pending when the budget is spent answers 504 ``{"sandbox_id", "status": "timeout"}``;
    a create a test told to fail answers the failure payload with the outcome's status.
    """
    tenant = call.tenant
    req = parse_create(body, model.resolve)
    call.notes.unknown_fields.extend(req.unknown())
    sb, outcome = model.create(tenant.owner, tenant.namespace, req)
    call.notes.sandbox_id = sb.id
    if outcome is not None:
        return _forced(model, sb, outcome)
    if req.wait is False:
        return Answer(202, create_body(model, call, sb, "pending"))
    budget = request_budget(call.timeout_ms, call.grace_ms)
    return Settle(sb.ready_at, budget, lambda waited: _created(model, call, sb, waited, budget))


def _forced(model: TensorLakeModel, sb: Sandbox, outcome: CreateOutcome) -> Answer:
    if outcome.kind == "failed":
        failure = {
            "sandbox_id": sb.id,
            "status": "failed",
            "reason": outcome.reason,
            "termination_reason": outcome.reason,
            "error_details": outcome.error_details,
        }
        return Answer(outcome.status, failure)
    return Answer(504, {"sandbox_id": sb.id, "status": "timeout"})


def _created(model: TensorLakeModel, call: Call, sb: Sandbox, waited: float, budget: float) -> Answer:
    with model.lock:
        model.settle(sb)
        if sb.status == "pending" and waited >= budget > 0:
            return Answer(504, {"sandbox_id": sb.id, "status": "timeout"})
        return Answer(200, create_body(model, call, sb))


def list_sandboxes(model: TensorLakeModel, call: Call) -> Answer:
    """List the tenant's live sandboxes."""
    tenant = call.tenant
    with model.lock:
        items = [info(model, call, sb) for sb in model.list_sandboxes(tenant.owner, tenant.namespace)]
    return Answer(200, {"sandboxes": items})


def get(model: TensorLakeModel, call: Call, sid: str) -> Answer:
    """Return one sandbox by id or name."""
    tenant = _noted(call, sid)
    return sandbox(model, call, model.find(tenant.owner, tenant.namespace, sid))


def patch(model: TensorLakeModel, call: Call, sid: str, body: Any) -> Answer:
    """Update a sandbox atomically and return its full SandboxInfo."""
    tenant = _noted(call, sid)
    with model.lock:
        sb, unknown = model.patch(tenant.owner, tenant.namespace, sid, body)
        call.notes.unknown_fields.extend(unknown)
        return sandbox(model, call, sb)


def delete(model: TensorLakeModel, call: Call, sid: str) -> Answer:
    """Terminate a sandbox."""
    tenant = _noted(call, sid)
    return sandbox(model, call, model.delete(tenant.owner, tenant.namespace, sid))


def suspend(model: TensorLakeModel, call: Call, sid: str) -> Outcome:
    """Suspend a named sandbox: 200 once suspended, 202 while still suspending (``?wait_ms=`` waits)."""
    tenant = _noted(call, sid)
    wait_ms = int_query(call.query, "wait_ms")
    sb = model.suspend(tenant.owner, tenant.namespace, sid)
    return _transition(model, call, sb, "suspended", wait_ms)


def resume(model: TensorLakeModel, call: Call, sid: str) -> Outcome:
    """Resume a suspended sandbox: 200 once running, 202 while still resuming (``?wait_ms=`` waits)."""
    tenant = _noted(call, sid)
    wait_ms = int_query(call.query, "wait_ms")
    sb = model.resume(tenant.owner, tenant.namespace, sid)
    return _transition(model, call, sb, "running", wait_ms)


def _transition(model: TensorLakeModel, call: Call, sb: Sandbox, done: str, wait_ms: int | None) -> Outcome:
    def answer(waited: float) -> Answer:
        model.settle(sb)
        return sandbox(model, call, sb, 200 if sb.status == done else 202)

    return Settle(sb.transition_at, wait_ms / 1000, answer) if wait_ms else answer(0.0)


def copy(model: TensorLakeModel, call: Call, sid: str) -> Answer:
    """Clone a running sandbox ``?times=`` times (1 to 32)."""
    tenant = _noted(call, sid)
    times = int_query(call.query, "times", minimum=1) or 1
    source, copies = model.copy(tenant.owner, tenant.namespace, sid, times)
    return Answer(200, {"source_sandbox_id": source.id, "sandboxes": [create_body(model, call, c) for c in copies]})


def attach(model: TensorLakeModel, call: Call, sid: str, body: Any) -> Answer:
    """Attach a file-system mount."""
    tenant = _noted(call, sid)
    return sandbox(model, call, model.attach(tenant.owner, tenant.namespace, sid, body))


def detach(model: TensorLakeModel, call: Call, sid: str, body: Any) -> Answer:
    """Detach the file-system mount at ``mount_path``."""
    tenant = _noted(call, sid)
    return sandbox(model, call, model.detach(tenant.owner, tenant.namespace, sid, body))


# -- snapshots -------------------------------------------------------------------------------


def snapshot(model: TensorLakeModel, call: Call, sid: str, body: Any) -> Answer:
    """Checkpoint a running sandbox."""
    tenant = _noted(call, sid)
    snapshot_type = parse_snapshot_type(body)
    snap = model.snapshot(tenant.owner, tenant.namespace, sid, snapshot_type)
    return Answer(200, {"snapshot_id": snap.id, "status": snap.status_at(model.clock.now())})


def get_snapshot(model: TensorLakeModel, call: Call, snapshot_id: str) -> Answer:
    """Return one snapshot."""
    tenant = call.tenant
    snap = model.get_snapshot(tenant.owner, tenant.namespace, snapshot_id)
    return Answer(200, snap.info(model.clock.now()))


def list_snapshots(model: TensorLakeModel, call: Call, sid: str | None = None) -> Answer:
    """List the tenant's snapshots, or those taken from sandbox ``sid``."""
    tenant = _noted(call, sid)
    source = None if sid is None else model.find(tenant.owner, tenant.namespace, sid).id
    now = model.clock.now()
    snaps = model.list_snapshots(tenant.owner, tenant.namespace, source)
    return Answer(200, {"snapshots": [s.info(now) for s in snaps]})


def delete_snapshot(model: TensorLakeModel, call: Call, snapshot_id: str) -> Answer:
    """Delete a snapshot (204)."""
    tenant = call.tenant
    model.delete_snapshot(tenant.owner, tenant.namespace, snapshot_id)
    return Answer(204)


# -- archive, logs, pools --------------------------------------------------------------------


def list_archived(model: TensorLakeModel, call: Call) -> Answer:
    """List archived (terminated) sandboxes, newest first, a page of ``?limit=`` after ``?cursor=``."""
    tenant = call.tenant
    limit = int_query(call.query, "limit", minimum=1) or DEFAULT_ARCHIVE_PAGE
    cursor = call.param("cursor")
    direction = call.param("direction") or "forward"
    if direction not in ("forward", "backward"):
        raise bad("invalid_query", "direction must be 'forward' or 'backward'")
    with model.lock:
        items = model.archived(tenant.owner, tenant.namespace)
        if direction == "backward":
            items.reverse()
        start = next((i + 1 for i, s in enumerate(items) if s.id == cursor), 0) if cursor else 0
        page = items[start : start + limit]
        return Answer(
            200,
            {
                "sandboxes": [info(model, call, s) for s in page],
                "prev_cursor": None,
                "next_cursor": page[-1].id if start + limit < len(items) and page else None,
            },
        )


def get_archived(model: TensorLakeModel, call: Call, sid: str) -> Answer:
    """Return one archived sandbox."""
    tenant = _noted(call, sid)
    with model.lock:
        sb = model.archive.get(sid)
        if sb is None or sb.owner != tenant.owner or sb.namespace != tenant.namespace:
            raise ApiError(404, "sandbox_not_found", f"archived sandbox {sid!r} not found")
        return Answer(200, info(model, call, sb))


def logs(model: TensorLakeModel, call: Call, sid: str) -> Answer:
    """Return the log lines of a sandbox's commands, filtered by level, process, text, head and tail."""
    tenant = _noted(call, sid)
    sb = model.find(tenant.owner, tenant.namespace, sid)
    raw_levels = call.query.get("level") or ()
    if not all(v.isascii() and v.isdigit() and int(v) in LOG_LEVELS for v in raw_levels):
        raise bad("invalid_query", "level must be an integer from 1 (trace) to 6 (fatal)")
    levels = {int(v) for v in raw_levels}
    head, tail = int_query(call.query, "head"), int_query(call.query, "tail")
    entries = list(model.daemon_of(sb).logs)
    if levels:
        entries = [e for e in entries if e["level"] in levels]
    process, text = call.param("processId"), call.param("body")
    if process:
        entries = [e for e in entries if e["processId"] == process]
    if text:
        entries = [e for e in entries if text in e["body"]]
    if head is not None:
        entries = entries[:head]
    if tail is not None:
        entries = entries[-tail:] if tail else []
    return Answer(200, {"logs": [e["signal"] for e in entries], "nextToken": None})


def log_processes(model: TensorLakeModel, call: Call, sid: str) -> Answer:
    """Return the processes that wrote log lines, with counts and first/last times."""
    tenant = _noted(call, sid)
    sb = model.find(tenant.owner, tenant.namespace, sid)
    return Answer(200, {"processes": model.daemon_of(sb).log_processes()})


def pools(model: TensorLakeModel, call: Call) -> Answer:
    """Refuse sandbox pools, which this mock does not implement (the gate authenticated the call first)."""
    raise ApiError(501, "not_supported", "sandbox pools are not implemented by this mock")
