"""The OpenSandbox server's state: every tenant's sandboxes and snapshots, and their state machine.

Everything time-related reads the mock's virtual clock. State changes are applied lazily: a lookup settles
the sandbox it finds, and :meth:`OpenSandboxState.settle_all` finishes every due transition (Pending to Running,
Pausing to Paused, ...) and removes expired sandboxes, so any clock mode works. ``settle_all`` costs what is due,
not the population: every sandbox's next due time waits in a heap.

Every rule that changes a sandbox ends in :meth:`OpenSandboxState.changed`: it bumps the record's revision
(which retires its cached wire body), moves it in the list's indexes (:mod:`.index`), schedules its next due
time and marks it in the :class:`~mockserver.core.changes.ChangeLog` a durable store writes from. Changes
other modules make to a sandbox (its policy, commands, sessions and files) are marked by the request that made
them (see :meth:`OpenSandboxState.touched`).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from contracts.opensandbox import PolicyError
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.core.capacity import Capacity
from mockserver.core.changes import ChangeLog, Key, Row
from mockserver.core.schedule import DueTimes, settle_due
from mockserver.core.wire import WireDict
from mockserver.sandbox.filesystem import FileSystem

from .errors import capacity_exhausted
from .index import SandboxIndex
from .profiles import RuntimeProfile
from .records import ECHOED_EXTENSION_PREFIX, CommandRecord, SandboxRecord, SnapshotRecord, paginate, pagination
from .spec import (
    MAX_PAGE_SIZE,
    RESERVED_PREFIX,
    STATES,
    CreateSpec,
    bad_request,
    check_timeout,
    iso,
    parse_create,
    validate_labels,
)


class OpenSandboxState:
    """Hold every tenant's sandboxes and snapshots; thread-safe (uvicorn thread plus test thread)."""

    def __init__(self, profile: RuntimeProfile, clock: VirtualClock, ids: IdFactory) -> None:
        self.profile = profile
        self.clock = clock
        self.ids = ids
        self.lock = threading.RLock()
        self.sandboxes: dict[str, SandboxRecord] = {}
        self.snapshots: dict[str, SnapshotRecord] = {}
        self.metrics_events: list[dict[str, Any]] = []
        self.egress_without_policy = False
        #: Status polls to hold running, one entry per next command of any sandbox (armed by :mod:`.faults`).
        self.command_holds: list[int] = []
        #: The host ports a bridge-mode endpoint names per sandbox: execd's and 8080's (:mod:`.endpoints`).
        self.host_ports: dict[str, tuple[int, int]] = {}
        self.changes = ChangeLog()
        self.index = SandboxIndex()
        self._due: DueTimes[str] = DueTimes()
        self._fs_written: dict[str, int] = {}
        #: The server-wide cap on live sandboxes (unlimited unless the mock is given one).
        self.capacity = Capacity()

    # -- bookkeeping -------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget everything, stopping running commands."""
        with self.lock:
            for sb in self.sandboxes.values():
                sb.cancel_commands()
            self.sandboxes.clear()
            self.snapshots.clear()
            self.metrics_events.clear()
            self.command_holds.clear()
            self.host_ports.clear()
            self.index.clear()
            self._due.clear()
            self._fs_written.clear()
            self.changes.mark_all()

    def changed(self, sb: SandboxRecord) -> None:
        """Record that a rule changed ``sb``: new revision, re-indexed, rescheduled, marked for the store."""
        sb.rev += 1
        if sb.id in self.sandboxes:
            self.index.put(sb)
            self._schedule(sb)
        self.changes.mark("sandbox", sb.id)

    def touched(self, sandbox_id: str) -> None:
        """Mark a sandbox a request may have changed outside this class (policy, commands, files) for the store."""
        self.changes.mark("sandbox", sandbox_id)

    def _schedule(self, sb: SandboxRecord, now: float | None = None) -> None:
        """Queue the sandbox's next due time (a pending transition or its expiry), unless already queued."""
        times = [t for t in (sb.pending[1] if sb.pending else None, sb.expires_at) if t is not None]
        self._due.schedule(sb.id, min(times) if times else None, now)

    def settle_all(self) -> None:
        """Apply every transition and expiry that is due at the current virtual time (what is due, not all)."""
        with self.lock:
            settle_due(self._due, self.clock.now(), self.sandboxes, self.settle, self._schedule)

    def settle(self, sb: SandboxRecord, now: float) -> None:
        """Apply the sandbox's due transition (or its expiry) at ``now``: what a lookup does before it answers."""
        if sb.pending and now >= sb.pending[1]:
            target, at = sb.pending
            sb.pending = None
            if target == "gone":
                self._remove(sb)
                return
            if target == "Running":
                reason, message = self.profile.running_status()
            elif target == "Failed":
                reason, message = sb.pending_failure or self.profile.failed_status()
                sb.pending_failure = None
            else:
                reason, message = self.profile.status_for(target)
            sb.set_state(target, reason, message, self._stamp(sb, target, at))
            self.changed(sb)
        if sb.expires_at is not None and now >= sb.expires_at and sb.id in self.sandboxes:
            self._remove(sb)

    def _remove(self, sb: SandboxRecord) -> None:
        sb.cancel_commands()
        self.sandboxes.pop(sb.id, None)
        self.index.drop(sb.id)
        self._due.discard(sb.id)
        self.changes.mark("sandbox", sb.id)

    def find(self, sandbox_id: str, tenant: str | None = None) -> SandboxRecord:
        """Return a live sandbox (of ``tenant`` when given) or raise the runtime's 404."""
        with self.lock:
            sb = self.sandboxes.get(sandbox_id)
            if sb is not None:
                self.settle(sb, self.clock.now())
                sb = self.sandboxes.get(sandbox_id)
            if sb is None or (tenant is not None and sb.tenant != tenant):
                raise ApiError(404, self.profile.not_found_code, f"Sandbox {sandbox_id} not found.")
            return sb

    def lookup(self, sandbox_id: str) -> SandboxRecord | None:
        """Return a live sandbox of any tenant, or None."""
        try:
            return self.find(sandbox_id)
        except ApiError:
            return None

    # -- lifecycle ---------------------------------------------------------------------------------

    def live_count(self) -> int:
        """Return how many sandboxes hold a place (not Failed); read without the lock (see ``core.capacity``)."""
        return sum(1 for sb in list(self.sandboxes.values()) if sb.state != "Failed")

    def use_capacity(self, capacity: Capacity) -> None:
        """Make creates consult ``capacity`` (shared with the server's other mocks) and count toward it."""
        capacity.register(self.live_count)
        self.capacity = capacity

    def create(self, tenant: str, spec: CreateSpec) -> SandboxRecord:
        """Create a sandbox from a validated spec; 429 ``POOL_CAPACITY_EXHAUSTED`` when the server is full."""
        with self.lock:
            now = self.clock.now()
            sandbox_id = self.ids.uuid4()
            fs = FileSystem(now=self.clock.now, user="root", hostname=sandbox_id[:12])
            if spec.snapshot_id:
                fs = FileSystem.load(self.restorable_snapshot(tenant, spec.snapshot_id).fs, now=self.clock.now)
            check_timeout(spec.timeout, now)
            if not self.capacity.admits():
                self.settle_all()  # expiries due by now free places first
                if not self.capacity.admits():
                    raise capacity_exhausted(message=f"No capacity: {self.capacity.describe()}.")
            sb = SandboxRecord(
                id=sandbox_id,
                tenant=tenant,
                created_at=now,
                spec=spec,
                fs=fs,
                expires_at=None if spec.timeout is None else now + spec.timeout,
                policy=spec.policy,
                has_sidecar=(spec.policy is not None or self.egress_without_policy) and spec.sidecar_refusal is None,
                access_token=secrets.token_urlsafe(24),
            )
            if self.profile.pending_seconds > 0:
                sb.set_state("Pending", *self.profile.status_for("Pending"), now)
                sb.pending = ("Running", now + self.profile.pending_seconds)
            else:
                sb.set_state("Running", *self.profile.running_status(), now)
            self.sandboxes[sandbox_id] = sb
            self.changed(sb)
            return sb

    def wire(self, sb: SandboxRecord) -> WireDict:
        """Return the sandbox's lifecycle body, built once per revision (read-only: copy it to change it)."""
        cached = sb.wire_cache
        if cached is None or cached[0] != sb.rev:
            cached = (sb.rev, WireDict(sb.to_json()))
            sb.wire_cache = cached
        return cached[1]

    def list(
        self, tenant: str, states: Iterable[str], metadata: dict[str, str], page: int, page_size: int
    ) -> dict[str, Any]:
        """Return one page of the tenant's sandboxes: states OR-ed, metadata AND-ed, newest first.

        The page costs what it holds (see :mod:`.index`): only its sandboxes are serialised, from their cache.
        """
        with self.lock:
            self.settle_all()
            found = self.index.page(tenant, states, metadata, (page - 1) * page_size, page_size)
            items = [self.wire(self.sandboxes[i]) for i in found.ids]
            return {"items": items, "pagination": pagination(found.total, page, page_size)}

    def delete(self, tenant: str, sandbox_id: str) -> None:
        """Delete a sandbox: gone at once (Docker) or Stopping first (Kubernetes-like)."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            if sb.state == "Stopping":
                return
            sb.cancel_commands()
            if self.profile.stop_seconds > 0:
                now = self.clock.now()
                sb.set_state("Stopping", *self.profile.status_for("Stopping"), self._stamp(sb, "Stopping", now))
                sb.pending = ("gone", now + self.profile.stop_seconds)
                self.changed(sb)
            else:
                self._remove(sb)

    def pause(self, tenant: str, sandbox_id: str) -> None:
        """Pause a running sandbox; 409 otherwise."""
        self._move(tenant, sandbox_id, "pause", "Running", "Pausing", "Paused", self.profile.pause_seconds)

    def resume(self, tenant: str, sandbox_id: str) -> None:
        """Resume a paused sandbox; 409 otherwise."""
        self._move(tenant, sandbox_id, "resume", "Paused", "Resuming", "Running", self.profile.resume_seconds)

    def _move(self, tenant: str, sandbox_id: str, op: str, needs: str, via: str, target: str, seconds: float) -> None:
        """Start ``op`` (pause or resume) of a sandbox in state ``needs`` through ``via`` to ``target``; 409 in any
        other state (Docker's code and message, else Kubernetes'); an armed stall or failure of ``op`` applies."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            if sb.state != needs:
                if self.profile.name == "docker":
                    docker_state = "RUNNING" if needs == "Running" else "PAUSED"
                    raise ApiError(
                        409, f"DOCKER::SANDBOX_NOT_{docker_state}", f"Sandbox is not in a {needs.lower()} state."
                    )
                raise ApiError(409, "KUBERNETES::INVALID_STATE", f"Sandbox is {sb.state}")
            if op in sb.stall_next:
                self._stall(sb, via, target, sb.stall_next.pop(op))
                return
            self._transition(sb, via, target, seconds, sb.fail_next.pop(op, None))

    def _transition(
        self, sb: SandboxRecord, via: str, target: str, seconds: float, failure: tuple[str, str] | None = None
    ) -> None:
        """Move through ``via`` to ``target`` (at once, or ``seconds`` later); an armed ``failure`` ends in Failed."""
        now = self.clock.now()
        if failure is not None:
            if seconds > 0:
                sb.set_state(via, *self.profile.status_for(via), self._stamp(sb, via, now))
                sb.pending, sb.pending_failure = ("Failed", now + seconds), failure
            else:
                self.fail(sb.id, *failure)
            return
        if seconds > 0:
            sb.set_state(via, *self.profile.status_for(via), self._stamp(sb, via, now))
            sb.pending = (target, now + seconds)
        elif target == "Running":
            sb.set_state(target, *self.profile.running_status(), self._stamp(sb, target, now))
        else:
            sb.set_state(target, *self.profile.status_for(target), self._stamp(sb, target, now))
        self.changed(sb)

    def _stall(self, sb: SandboxRecord, via: str, target: str, seconds: float | None) -> None:
        """Hold the sandbox in ``via`` (an armed stall): ``target`` after ``seconds``, or never (None)."""
        now = self.clock.now()
        sb.set_state(via, *self.profile.status_for(via), self._stamp(sb, via, now))
        sb.pending = None if seconds is None else (target, now + seconds)
        self.changed(sb)

    def _stamp(self, sb: SandboxRecord, state: str, now: float) -> float:
        """Return ``lastTransitionAt`` for a move to ``state``: Docker reports container creation until it exits."""
        if self.profile.name == "docker" and state not in ("Failed", "Terminated"):
            return sb.created_at
        return now

    def renew(self, tenant: str, sandbox_id: str, expires_at: datetime) -> float:
        """Set a new absolute expiry; 400 if not in the future, 409 without automatic expiry."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            new = expires_at.timestamp()
            if new <= self.clock.now():
                raise bad_request(
                    f"{self.profile.prefix}::INVALID_EXPIRATION", "New expiration time must be in the future."
                )
            if sb.expires_at is None:
                raise ApiError(
                    409,
                    f"{self.profile.prefix}::INVALID_EXPIRATION",
                    f"Sandbox {sandbox_id} does not have automatic expiration enabled.",
                )
            sb.expires_at = new
            self.changed(sb)
            return new

    def patch_metadata(self, tenant: str, sandbox_id: str, patch: dict[str, Any]) -> SandboxRecord:
        """Apply a JSON merge patch to the metadata (null deletes)."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            for key in patch:
                if key.startswith(RESERVED_PREFIX):
                    raise bad_request(
                        "INVALID_METADATA_LABEL", f"Metadata key '{key}' is reserved (opensandbox.io/ prefix)."
                    )
            additions = {k: str(v) for k, v in patch.items() if v is not None}
            validate_labels(additions)
            merged = {k: v for k, v in sb.spec.metadata.items() if k not in patch}
            merged.update(additions)
            sb.spec.metadata = merged
            self.changed(sb)
            return sb

    def fail(self, sandbox_id: str, reason: str, message: str) -> None:
        """Mark a sandbox Failed (its container died) and stop its commands."""
        with self.lock:
            sb = self.find(sandbox_id)
            sb.cancel_commands()
            for cmd in sb.commands.values():
                cmd.finish(137, "signal: killed", self.clock.now())
            sb.pending, sb.pending_failure = None, None
            sb.set_state("Failed", reason, message, self.clock.now())
            self.changed(sb)

    def expire(self, sandbox_id: str) -> None:
        """Make a sandbox reach its expiry now (it is gone at once)."""
        with self.lock:
            sb = self.find(sandbox_id)
            sb.expires_at = self.clock.now()
            self.changed(sb)
            self.settle_all()

    def oom_on_next_exec(self, sandbox_id: str, wording: str) -> SandboxRecord:
        """Make the sandbox's next command be OOM-killed, worded as ``wording`` (``""``: the runtime's own)."""
        with self.lock:
            sb = self.find(sandbox_id)
            sb.oom_on_next_exec = wording
            self.changed(sb)
            return sb

    def add_metrics_event(self, event: dict[str, Any]) -> None:
        """Keep one SDK telemetry event."""
        with self.lock:
            self.metrics_events.append(event)
            self.changes.mark("event", str(len(self.metrics_events) - 1))

    def recover(self, sandbox_id: str) -> SandboxRecord:
        """Put a Failed sandbox back to Running (its container restarted); 409 ``sandbox_not_failed`` otherwise."""
        with self.lock:
            sb = self.find(sandbox_id)
            if sb.state != "Failed":
                raise ApiError(409, "sandbox_not_failed", f"sandbox {sandbox_id} is {sb.state}, not Failed")
            sb.set_state("Running", *self.profile.running_status(), self._stamp(sb, "Running", self.clock.now()))
            self.changed(sb)
            return sb

    def take_command_hold(self, sb: SandboxRecord) -> int:
        """Return how many status polls the sandbox's next command reports running (armed per sandbox or any)."""
        with self.lock:
            held, sb.hold_next_command = sb.hold_next_command, 0
            if held:
                self.touched(sb.id)
            elif self.command_holds:
                held = self.command_holds.pop(0)
            return held

    # -- snapshots ---------------------------------------------------------------------------------

    def create_snapshot(self, tenant: str, sandbox_id: str, name: str | None, delay: float) -> SnapshotRecord:
        """Snapshot a sandbox's filesystem; it turns Ready after ``delay`` virtual seconds."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            if sb.state not in ("Running", "Paused"):
                raise ApiError(409, "SANDBOX::INVALID_STATE", f"Sandbox {sandbox_id} is {sb.state}.")
            now = self.clock.now()
            snap = SnapshotRecord(
                self.ids.uuid4(), tenant, sandbox_id, name, now, now + delay, sb.fs.dump(), sb.spec.image
            )
            self.snapshots[snap.id] = snap
            self.changes.mark("snapshot", snap.id)
            return snap

    def restorable_snapshot(self, tenant: str, snapshot_id: str) -> SnapshotRecord:
        """Return a Ready snapshot of ``tenant`` to restore; 404 ``SNAPSHOT::NOT_FOUND``, 409 ``SNAPSHOT::NOT_READY``."""
        with self.lock:
            snap = self.find_snapshot(tenant, snapshot_id)
            if self.clock.now() < snap.ready_at:
                raise ApiError(409, "SNAPSHOT::NOT_READY", f"Snapshot {snapshot_id} is not ready for restore.")
            return snap

    def find_snapshot(self, tenant: str, snapshot_id: str) -> SnapshotRecord:
        """Return a snapshot of ``tenant`` or raise 404."""
        with self.lock:
            snap = self.snapshots.get(snapshot_id)
            if snap is None or snap.tenant != tenant:
                raise ApiError(404, "SNAPSHOT::NOT_FOUND", f"Snapshot {snapshot_id} not found")
            return snap

    def list_snapshots(
        self, tenant: str, sandbox_id: str | None, name: str | None, states: Iterable[str], page: int, size: int
    ) -> dict[str, Any]:
        """Return one page of the tenant's snapshots, newest first."""
        wanted = {s.lower() for s in states}
        now = self.clock.now()
        with self.lock:
            items = [
                s.to_json(now)
                for s in sorted(self.snapshots.values(), key=lambda s: s.created_at, reverse=True)
                if s.tenant == tenant
                and (sandbox_id is None or s.sandbox_id == sandbox_id)
                and (name is None or s.name == name)
            ]
        items = [i for i in items if not wanted or i["status"]["state"].lower() in wanted]
        return paginate(items, page, size)

    def delete_snapshot(self, tenant: str, snapshot_id: str) -> None:
        """Delete a snapshot or raise 404."""
        with self.lock:
            self.find_snapshot(tenant, snapshot_id)
            del self.snapshots[snapshot_id]
            self.changes.mark("snapshot", snapshot_id)

    # -- persistence -------------------------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Return everything as JSON."""
        with self.lock:
            return {
                "profile": self.profile.to_json(),
                "sandboxes": [sb.dump() for sb in self.sandboxes.values()],
                "snapshots": [s.dump() for s in self.snapshots.values()],
                "metrics_events": list(self.metrics_events),
                "command_holds": list(self.command_holds),
            }

    def load(self, data: dict[str, Any]) -> None:
        """Replace everything with :meth:`dump` output; raise ValueError when malformed."""
        try:
            sandboxes = {d["id"]: SandboxRecord.load(d, self.clock.now) for d in data.get("sandboxes", [])}
            snapshots = {d["id"]: SnapshotRecord(**d) for d in data.get("snapshots", [])}
            events = list(data.get("metrics_events", []))
            holds = [int(n) for n in data.get("command_holds", [])]
        except (KeyError, TypeError, ValueError, AttributeError, PolicyError) as exc:
            raise ValueError(f"malformed OpenSandbox state: {exc}") from exc
        with self.lock:
            self.clear()
            self.sandboxes, self.snapshots, self.metrics_events = sandboxes, snapshots, events
            self.command_holds = holds
            for sb in sandboxes.values():
                self.index.put(sb)
                self._schedule(sb)

    # -- durable rows (see mockserver.core.changes) --------------------------------------------------

    def rows(self, keys: Iterable[Key]) -> Iterator[Row]:
        """Return the current rows of the marked records: sandboxes (their files apart), snapshots, events."""
        with self.lock:
            for kind, key in keys:
                if kind == "sandbox":
                    yield from self._sandbox_rows(key)
                elif kind == "snapshot":
                    snap = self.snapshots.get(key)
                    yield Row("snapshot", key, None if snap is None else snap.dump())
                elif kind == "event":
                    at = int(key)
                    yield Row("event", key, self.metrics_events[at] if at < len(self.metrics_events) else None)

    def _sandbox_rows(self, sandbox_id: str, *, always: bool = False) -> Iterator[Row]:
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            self._fs_written.pop(sandbox_id, None)
            yield Row("sandbox", sandbox_id, None)
            yield Row("fs", sandbox_id, None)
            return
        body = sb.dump(with_fs=False)
        yield Row("sandbox", sandbox_id, body)
        if always or self._fs_written.get(sandbox_id) != sb.fs.revision:
            self._fs_written[sandbox_id] = sb.fs.revision
            yield Row("fs", sandbox_id, sb.fs.dump())

    def all_rows(self) -> Iterator[Row]:
        """Return every record, in the order :meth:`load_rows` needs them."""
        with self.lock:
            self._fs_written.clear()
            for sandbox_id in list(self.sandboxes):
                yield from self._sandbox_rows(sandbox_id, always=True)
            for snap in self.snapshots.values():
                yield Row("snapshot", snap.id, snap.dump())
            for at, event in enumerate(self.metrics_events):
                yield Row("event", str(at), event)

    def load_rows(self, rows: Iterable[Row]) -> None:
        """Replace the state with rows :meth:`all_rows` returned; ValueError when malformed."""
        sandboxes: dict[str, dict[str, Any]] = {}
        files: dict[str, Any] = {}
        snapshots: list[Any] = []
        events: dict[int, Any] = {}
        for row in rows:
            if row.kind == "sandbox":
                sandboxes[row.key] = dict(row.body)
            elif row.kind == "fs":
                files[row.key] = row.body
            elif row.kind == "snapshot":
                snapshots.append(row.body)
            elif row.kind == "event":
                events[int(row.key)] = row.body
        for sandbox_id, body in sandboxes.items():
            body["fs"] = files.get(sandbox_id) or FileSystem(now=self.clock.now, user="root").dump()
        self.load(
            {
                "sandboxes": list(sandboxes.values()),
                "snapshots": snapshots,
                "metrics_events": [events[i] for i in sorted(events)],
            }
        )
        with self.lock:
            self._fs_written = {sid: sb.fs.revision for sid, sb in self.sandboxes.items()}


__all__ = [
    "ECHOED_EXTENSION_PREFIX",
    "MAX_PAGE_SIZE",
    "STATES",
    "CommandRecord",
    "CreateSpec",
    "OpenSandboxState",
    "SandboxRecord",
    "SnapshotRecord",
    "iso",
    "paginate",
    "parse_create",
    "validate_labels",
]
