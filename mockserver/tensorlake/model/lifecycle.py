"""The lifecycle API as functions: one :class:`Call` and a parsed body in, one :class:`Answer` (or a wait) out.

Each method of :class:`LifecycleApi` is what one lifecycle route does, without HTTP: authenticate the call
(:func:`.auth.tenant_of`), parse its query and body (:mod:`.validate`), apply it to the
:class:`~.operations.TensorLakeModel`, and return the status and JSON body of the answer. A refusal raises
:class:`~mockserver.core.errors.ApiError`. The routes (:mod:`mockserver.tensorlake.routes.lifecycle`) and the
contract oracle (:mod:`harness.machines.tensorlake.oracle`) call the same methods.

Both route trees are served: the flat cloud paths (``/sandboxes...``) and the same paths under
``/v1/namespaces/{ns}``; a :class:`Call` carries the namespace (``default`` on the flat paths).

Known deviations from the real service: sandbox pools are not implemented (501 ``not_supported``); the log
routes return the output lines of commands run through the mock's management API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockserver.core.errors import ApiError
from mockserver.core.journal import RequestNotes

from .auth import Tenant, tenant_of
from .operations import TensorLakeModel
from .records import ROUTING_HINT, Sandbox
from .store import CreateOutcome
from .urls import Origin, endpoints
from .validate import bad, int_query, parse_create, parse_snapshot_type
from .waits import Settle, request_budget

__all__ = ["DEFAULT_ARCHIVE_PAGE", "Answer", "Call", "LifecycleApi", "Outcome"]

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
    """One lifecycle request as plain data: credentials, namespace, query, timeout headers and origin.

    ``notes`` collects what the journal records (tenant, sandbox, unknown body keys), filled in as the call
    is answered, refused or not.
    """

    authorization: str | None
    origin: Origin = LOCAL_ORIGIN
    namespace: str = "default"
    query: Mapping[str, Sequence[str]] = field(default_factory=dict)
    timeout_ms: str | None = None
    grace_ms: str | None = None
    notes: RequestNotes = field(default_factory=RequestNotes)

    def param(self, key: str) -> str | None:
        """Return the last value of query parameter ``key``, or None."""
        values = self.query.get(key)
        return values[-1] if values else None


class LifecycleApi:
    """Answer lifecycle calls against one model; ``domain`` is the ingress domain the URLs name."""

    def __init__(self, model: TensorLakeModel, domain: str) -> None:
        self.model = model
        self.domain = domain

    # -- helpers ---------------------------------------------------------------------------------

    def tenant(self, call: Call, sandbox: str | None = None) -> Tenant:
        """Authenticate ``call`` and note its tenant (and the sandbox named in its path)."""
        found = tenant_of(call.authorization, call.namespace, self.model.keys)
        call.notes.tenant = found.label()
        if sandbox is not None:
            call.notes.sandbox_id = sandbox
        return found

    def info(self, call: Call, sb: Sandbox) -> dict[str, Any]:
        """Return the SandboxInfo of ``sb`` as the client of ``call`` sees it (cached per revision: read-only)."""
        sandbox_url, ingress = endpoints(call.origin, sb.id, self.domain)
        return sb.wire(sandbox_url=sandbox_url, ingress_endpoint=ingress)

    def sandbox(self, call: Call, sb: Sandbox, status: int = 200) -> Answer:
        """Answer the SandboxInfo of ``sb``, settled and read under the model lock (never half-updated)."""
        with self.model.lock:
            self.model.settle(sb)
            body = self.info(call, sb)
        call.notes.sandbox_id = sb.id
        return Answer(status, body)

    def create_body(self, call: Call, sb: Sandbox, status: str | None = None) -> dict[str, Any]:
        """Return the CreateSandboxResponse of ``sb`` (``status`` overrides what it reads now)."""
        sandbox_url, ingress = endpoints(call.origin, sb.id, self.domain)
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

    def create(self, call: Call, body: Any) -> Outcome:
        """Create a sandbox; with ``wait`` (the default) wait until it runs, within the SDK's request budget.

        A create still pending when the budget is spent answers 504 ``{"sandbox_id", "status": "timeout"}``;
        a create a test told to fail answers the failure payload with the outcome's status.
        """
        tenant = self.tenant(call)
        req = parse_create(body, self.model.resolve)
        call.notes.unknown_fields.extend(req.unknown())
        sb, outcome = self.model.create(tenant.owner, tenant.namespace, req)
        call.notes.sandbox_id = sb.id
        if outcome is not None:
            return self._forced(sb, outcome)
        if req.wait is False:
            return Answer(202, self.create_body(call, sb, "pending"))
        budget = request_budget(call.timeout_ms, call.grace_ms)
        return Settle(sb.ready_at, budget, lambda waited: self._created(call, sb, waited, budget))

    def _forced(self, sb: Sandbox, outcome: CreateOutcome) -> Answer:
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

    def _created(self, call: Call, sb: Sandbox, waited: float, budget: float) -> Answer:
        with self.model.lock:
            self.model.settle(sb)
            if sb.status == "pending" and waited >= budget > 0:
                return Answer(504, {"sandbox_id": sb.id, "status": "timeout"})
            return Answer(200, self.create_body(call, sb))

    def list_sandboxes(self, call: Call) -> Answer:
        """List the tenant's live sandboxes."""
        tenant = self.tenant(call)
        with self.model.lock:
            items = [self.info(call, sb) for sb in self.model.list_sandboxes(tenant.owner, tenant.namespace)]
        return Answer(200, {"sandboxes": items})

    def get(self, call: Call, sid: str) -> Answer:
        """Return one sandbox by id or name."""
        tenant = self.tenant(call, sid)
        return self.sandbox(call, self.model.find(tenant.owner, tenant.namespace, sid))

    def patch(self, call: Call, sid: str, body: Any) -> Answer:
        """Update a sandbox atomically and return its full SandboxInfo."""
        tenant = self.tenant(call, sid)
        with self.model.lock:
            sb, unknown = self.model.patch(tenant.owner, tenant.namespace, sid, body)
            call.notes.unknown_fields.extend(unknown)
            return self.sandbox(call, sb)

    def delete(self, call: Call, sid: str) -> Answer:
        """Terminate a sandbox."""
        tenant = self.tenant(call, sid)
        return self.sandbox(call, self.model.delete(tenant.owner, tenant.namespace, sid))

    def suspend(self, call: Call, sid: str) -> Outcome:
        """Suspend a named sandbox: 200 once suspended, 202 while still suspending (``?wait_ms=`` waits)."""
        tenant = self.tenant(call, sid)
        wait_ms = int_query(call.query, "wait_ms")
        sb = self.model.suspend(tenant.owner, tenant.namespace, sid)
        return self._transition(call, sb, "suspended", wait_ms)

    def resume(self, call: Call, sid: str) -> Outcome:
        """Resume a suspended sandbox: 200 once running, 202 while still resuming (``?wait_ms=`` waits)."""
        tenant = self.tenant(call, sid)
        wait_ms = int_query(call.query, "wait_ms")
        sb = self.model.resume(tenant.owner, tenant.namespace, sid)
        return self._transition(call, sb, "running", wait_ms)

    def _transition(self, call: Call, sb: Sandbox, done: str, wait_ms: int | None) -> Outcome:
        def answer(waited: float) -> Answer:
            self.model.settle(sb)
            return self.sandbox(call, sb, 200 if sb.status == done else 202)

        return Settle(sb.transition_at, wait_ms / 1000, answer) if wait_ms else answer(0.0)

    def copy(self, call: Call, sid: str) -> Answer:
        """Clone a running sandbox ``?times=`` times (1 to 32)."""
        tenant = self.tenant(call, sid)
        times = int_query(call.query, "times", minimum=1) or 1
        source, copies = self.model.copy(tenant.owner, tenant.namespace, sid, times)
        return Answer(200, {"source_sandbox_id": source.id, "sandboxes": [self.create_body(call, c) for c in copies]})

    def attach(self, call: Call, sid: str, body: Any) -> Answer:
        """Attach a file-system mount."""
        tenant = self.tenant(call, sid)
        return self.sandbox(call, self.model.attach(tenant.owner, tenant.namespace, sid, body))

    def detach(self, call: Call, sid: str, body: Any) -> Answer:
        """Detach the file-system mount at ``mount_path``."""
        tenant = self.tenant(call, sid)
        return self.sandbox(call, self.model.detach(tenant.owner, tenant.namespace, sid, body))

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot(self, call: Call, sid: str, body: Any) -> Answer:
        """Checkpoint a running sandbox."""
        tenant = self.tenant(call, sid)
        snapshot_type = parse_snapshot_type(body)
        snap = self.model.snapshot(tenant.owner, tenant.namespace, sid, snapshot_type)
        return Answer(200, {"snapshot_id": snap.id, "status": snap.status_at(self.model.clock.now())})

    def get_snapshot(self, call: Call, snapshot_id: str) -> Answer:
        """Return one snapshot."""
        tenant = self.tenant(call)
        snap = self.model.get_snapshot(tenant.owner, tenant.namespace, snapshot_id)
        return Answer(200, snap.info(self.model.clock.now()))

    def list_snapshots(self, call: Call, sid: str | None = None) -> Answer:
        """List the tenant's snapshots, or those taken from sandbox ``sid``."""
        tenant = self.tenant(call, sid)
        source = None if sid is None else self.model.find(tenant.owner, tenant.namespace, sid).id
        now = self.model.clock.now()
        snaps = self.model.list_snapshots(tenant.owner, tenant.namespace, source)
        return Answer(200, {"snapshots": [s.info(now) for s in snaps]})

    def delete_snapshot(self, call: Call, snapshot_id: str) -> Answer:
        """Delete a snapshot (204)."""
        tenant = self.tenant(call)
        self.model.delete_snapshot(tenant.owner, tenant.namespace, snapshot_id)
        return Answer(204)

    # -- archive, logs, pools --------------------------------------------------------------------

    def list_archived(self, call: Call) -> Answer:
        """List archived (terminated) sandboxes, newest first, a page of ``?limit=`` after ``?cursor=``."""
        tenant = self.tenant(call)
        limit = int_query(call.query, "limit", minimum=1) or DEFAULT_ARCHIVE_PAGE
        cursor = call.param("cursor")
        direction = call.param("direction") or "forward"
        if direction not in ("forward", "backward"):
            raise bad("invalid_query", "direction must be 'forward' or 'backward'")
        with self.model.lock:
            items = self.model.archived(tenant.owner, tenant.namespace)
            if direction == "backward":
                items.reverse()
            start = next((i + 1 for i, s in enumerate(items) if s.id == cursor), 0) if cursor else 0
            page = items[start : start + limit]
            return Answer(
                200,
                {
                    "sandboxes": [self.info(call, s) for s in page],
                    "prev_cursor": None,
                    "next_cursor": page[-1].id if start + limit < len(items) and page else None,
                },
            )

    def get_archived(self, call: Call, sid: str) -> Answer:
        """Return one archived sandbox."""
        tenant = self.tenant(call, sid)
        with self.model.lock:
            sb = self.model.archive.get(sid)
            if sb is None or sb.owner != tenant.owner or sb.namespace != tenant.namespace:
                raise ApiError(404, "sandbox_not_found", f"archived sandbox {sid!r} not found")
            return Answer(200, self.info(call, sb))

    def logs(self, call: Call, sid: str) -> Answer:
        """Return the log lines of a sandbox's commands, filtered by level, process, text, head and tail."""
        tenant = self.tenant(call, sid)
        sb = self.model.find(tenant.owner, tenant.namespace, sid)
        raw_levels = call.query.get("level") or ()
        if not all(v.isascii() and v.isdigit() and int(v) in LOG_LEVELS for v in raw_levels):
            raise bad("invalid_query", "level must be an integer from 1 (trace) to 6 (fatal)")
        levels = {int(v) for v in raw_levels}
        head, tail = int_query(call.query, "head"), int_query(call.query, "tail")
        entries = list(self.model.daemon_of(sb).logs)
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

    def log_processes(self, call: Call, sid: str) -> Answer:
        """Return the processes that wrote log lines, with counts and first/last times."""
        tenant = self.tenant(call, sid)
        sb = self.model.find(tenant.owner, tenant.namespace, sid)
        return Answer(200, {"processes": self.model.daemon_of(sb).log_processes()})

    def pools(self, call: Call) -> Answer:
        """Refuse sandbox pools, which this mock does not implement (after authenticating)."""
        self.tenant(call)
        raise ApiError(501, "not_supported", "sandbox pools are not implemented by this mock")
