"""The store of the OpenSandbox server's state: every tenant's sandboxes and snapshots, their lookups, and the clock.

:class:`OpenSandboxState` holds the records under one lock, finds them, lists them, and applies what the virtual
clock makes due. The operations that change the state (create, delete, pause, resume, renew, snapshots, and the
faults' rules) live in :class:`~.operations.OpenSandboxModel`, built on this store.

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

import threading
from collections.abc import Iterable, Iterator
from typing import Any

from contracts.opensandbox import PolicyError
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.core.capacity import Capacity
from mockserver.core.changes import ChangeLog, Key, Row
from mockserver.core.schedule import DueTimes, settle_due
from mockserver.core.wire import WireDict
from mockserver.sandbox.filesystem import FileSystem

from .index import SandboxIndex
from .profiles import RuntimeProfile
from .records import SandboxRecord, SnapshotRecord, paginate, pagination


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

    def _stamp(self, sb: SandboxRecord, state: str, now: float) -> float:
        """Return ``lastTransitionAt`` for a move to ``state``: Docker reports container creation until it exits."""
        if self.profile.name == "docker" and state not in ("Failed", "Terminated"):
            return sb.created_at
        return now

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

    # -- population and answers ------------------------------------------------------------------

    def live_count(self) -> int:
        """Return how many sandboxes hold a place (not Failed); read without the lock (see ``core.capacity``)."""
        return sum(1 for sb in list(self.sandboxes.values()) if sb.state != "Failed")

    def use_capacity(self, capacity: Capacity) -> None:
        """Make creates consult ``capacity`` (shared with the server's other mocks) and count toward it."""
        capacity.register(self.live_count)
        self.capacity = capacity

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

    # -- snapshot lookups ------------------------------------------------------------------------

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


__all__ = ["OpenSandboxState"]
