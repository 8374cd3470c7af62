"""The store of the TensorLake mock's state: every tenant's records, their lookups, and the clock's transitions.

:class:`SandboxStore` holds the sandboxes (live and archived), names, snapshots, sessions, daemons and accepted
keys under one lock, finds sandboxes by id or name, and applies what the virtual clock makes due
(durations from :class:`Timings`, all 0 by default):

* ``pending`` -> ``running`` at ``created + startup``; with ``max_pending_secs`` a sandbox still pending
  by then becomes ``failed`` with ``termination_reason=no_capacity``. A create the server has no room for
  (:class:`~mockserver.core.capacity.Capacity`: ``--max-sandboxes``, or the runtime out of fds) is refused
  at once the same way: recorded ``failed`` with ``no_capacity`` in the archive, never live.
* ``suspending`` -> ``suspended``, ``snapshotting`` -> ``running`` and a resume's ``pending`` -> ``running``
  when their transition time comes.
* ``timeout_secs`` counts running time since the sandbox last started: an ephemeral sandbox is then
  terminated (``termination_reason=timeout``), a named one suspended.
* A terminated sandbox moves to the archive (the newest 1000) and its name is free again.

Transitions are applied lazily: a lookup settles the sandbox it finds, and :meth:`SandboxStore.settle_all`
settles what is due, found in a heap of every sandbox's next due time, so it costs what is due, not the
population. Each tenant's (project and namespace) live sandboxes are also kept apart, in creation order, so
listing them costs their number.

Every rule that changes a sandbox ends in :meth:`SandboxStore.changed`: it bumps the record's revision (which
retires its cached wire body), schedules its next due time and marks it in the
:class:`~mockserver.core.changes.ChangeLog` a durable store writes from. Files and processes a request changes
inside a sandbox are marked by that request (:meth:`SandboxStore.touched`).

The operations that change the state live in :class:`~.operations.TensorLakeModel`.

Two hooks let the mock keep an execution runtime in step without the rules knowing it: ``filesystems``
makes each sandbox's filesystem (in memory by default; the linux runtime's are the real sandbox's files),
and ``on_change`` is called, under the lock, whenever a live sandbox's status changes or a PATCH changed it
(``on_terminate`` when it ends).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mockserver.core.capacity import Capacity
from mockserver.core.changes import ChangeLog, Key, Row
from mockserver.core.clock import VirtualClock
from mockserver.core.ids import IdFactory
from mockserver.core.schedule import DueTimes, settle_due
from mockserver.sandbox.filesystem import FileSystem

from .auth import KeyRing
from .records import Sandbox, Session, Snapshot
from .urls import DEFAULT_INGRESS_DOMAIN
from .validation import not_found

if TYPE_CHECKING:
    from .daemon import Daemon

__all__ = [
    "ARCHIVE_LIMIT",
    "LIVE",
    "NO_CAPACITY",
    "NO_CAPACITY_STATUS",
    "CreateOutcome",
    "FileSystems",
    "MemoryFileSystems",
    "SandboxStore",
    "Timings",
]

ARCHIVE_LIMIT = 1000
#: The termination reason of a sandbox the service had no capacity for.
NO_CAPACITY = "no_capacity"
#: The status a create refused for want of capacity answers with its failure payload (the SDK parses 422).
NO_CAPACITY_STATUS = 422
LIVE = frozenset({"pending", "running", "snapshotting", "suspending", "suspended"})


@dataclass
class Timings:
    """Virtual seconds each transition takes (0: it settles at once)."""

    startup: float = 0.0
    suspend: float = 0.0
    resume: float = 0.0
    snapshot: float = 0.0
    resize: float = 0.0

    def to_json(self) -> dict[str, float]:
        """Return the timings as JSON."""
        return dict(vars(self))


@dataclass
class CreateOutcome:
    """A test's instruction for how the next create ends instead of normally."""

    kind: str  # "failed" | "timeout" | "pending"
    status: int = 422
    reason: str = "ConfigurationError"
    error_details: Any = None


class FileSystems(Protocol):
    """Where sandboxes' files live: a fresh filesystem for a new sandbox, or one restored from a dump."""

    def new(self, ident: str) -> FileSystem | Callable[[], FileSystem]:
        """Return the filesystem of a new sandbox (or a callable building it on first use)."""
        ...

    def restore(self, ident: str, dump: Mapping[str, Any]) -> FileSystem:
        """Return the filesystem of a sandbox restored from ``dump`` (``FileSystem.dump()`` output)."""
        ...


class MemoryFileSystems:
    """In-memory filesystems (the emulator's), timestamped by the mock's clock."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock

    def new(self, ident: str) -> FileSystem | Callable[[], FileSystem]:
        """Return a builder of a fresh filesystem whose hostname is the sandbox id."""
        return lambda: FileSystem(now=self.clock.now, hostname=ident)

    def restore(self, ident: str, dump: Mapping[str, Any]) -> FileSystem:
        """Return the filesystem ``dump`` describes."""
        return FileSystem.load(dump, now=self.clock.now)


class SandboxStore:
    """Hold every tenant's sandboxes, snapshots, daemons and browser sessions, and the accepted keys; thread-safe."""

    def __init__(
        self,
        clock: VirtualClock,
        ids: IdFactory,
        resolve: Callable[[str], Iterable[str]],
        keys: KeyRing | None = None,
        filesystems: FileSystems | None = None,
    ) -> None:
        self.clock = clock
        self.filesystems: FileSystems = filesystems or MemoryFileSystems(clock)
        self.ids = ids
        self.resolve = resolve
        self.keys = keys or KeyRing()
        #: The ingress domain the answers' URLs name (a setting, like the keys: see :mod:`.urls`).
        self.domain = DEFAULT_INGRESS_DOMAIN
        self.changes = ChangeLog()
        self._timings = Timings()
        self.lock = threading.RLock()
        self.sandboxes: dict[str, Sandbox] = {}
        self._by_tenant: dict[tuple[str, str], dict[str, Sandbox]] = {}
        self._due: DueTimes[str] = DueTimes()
        self._fs_written: dict[str, int] = {}
        self.names: dict[tuple[str, str, str], str] = {}
        self.archive: collections.OrderedDict[str, Sandbox] = collections.OrderedDict()
        self.snapshots: dict[str, Snapshot] = {}
        self.sessions: dict[str, Session] = {}
        self.outcomes: collections.deque[CreateOutcome] = collections.deque()
        self.daemons: dict[str, Daemon] = {}
        self.on_terminate: Callable[[Sandbox], None] = lambda sandbox: None
        self.on_change: Callable[[Sandbox], None] = lambda sandbox: None
        #: The server-wide cap on live sandboxes (unlimited unless the mock is given one).
        self.capacity = Capacity()

    @property
    def timings(self) -> Timings:
        """Return how many virtual seconds each transition takes."""
        return self._timings

    @timings.setter
    def timings(self, timings: Timings) -> None:
        self._timings = timings
        self.changes.mark("timings", "")

    # -- capacity --------------------------------------------------------------------------------

    def live_count(self) -> int:
        """Return how many sandboxes hold a place (live statuses); read without the lock (see ``core.capacity``)."""
        return sum(1 for sb in list(self.sandboxes.values()) if sb.status in LIVE)

    def use_capacity(self, capacity: Capacity) -> None:
        """Make creates consult ``capacity`` (shared with the server's other mocks) and count toward it."""
        capacity.register(self.live_count)
        self.capacity = capacity

    def admitted(self) -> bool:
        """Tell whether the server has room for one more sandbox (timeouts due by now free places first)."""
        if self.capacity.admits():
            return True
        self.settle_all()
        return self.capacity.admits()

    def refuse(self, sb: Sandbox) -> None:
        """Record a create refused for want of capacity: ``failed`` with ``no_capacity``, straight to the archive."""
        now = self.clock.now()
        sb.status, sb.pending_reason, sb.termination_reason = "failed", None, NO_CAPACITY
        sb.error_details = {"message": f"no capacity: {self.capacity.describe()}"}
        sb.ready_at, sb.terminated_at, sb.archived_at = None, now, now
        self.archive[sb.id] = sb
        self.changes.mark("archive", sb.id)
        while len(self.archive) > ARCHIVE_LIMIT:
            gone, _ = self.archive.popitem(last=False)
            self.changes.mark("archive", gone)
        sb.rev += 1

    # -- bookkeeping -----------------------------------------------------------------------------

    def changed(self, sb: Sandbox) -> None:
        """Record that a rule changed ``sb``: new revision, rescheduled, marked for the store."""
        sb.rev += 1
        if sb.id in self.sandboxes:
            self._schedule(sb)
        self.changes.mark("sandbox", sb.id)

    def touched(self, sandbox_id: str) -> None:
        """Mark a sandbox a request may have changed inside (its files) for the store."""
        self.changes.mark("sandbox", sandbox_id)

    def add(self, sb: Sandbox) -> None:
        """Put a new live sandbox into the state."""
        self.sandboxes[sb.id] = sb
        self._by_tenant.setdefault((sb.owner, sb.namespace), {})[sb.id] = sb
        self.changed(sb)

    def add_session(self, session: Session) -> None:
        """Keep a browser session."""
        with self.lock:
            self.sessions[session.token] = session
            self.changes.mark("session", session.token)

    def _schedule(self, sb: Sandbox, now: float | None = None) -> None:
        """Queue the sandbox's next due time, unless nothing is due or it is already queued."""
        self._due.schedule(sb.id, _next_due(sb), now)

    # -- lookup ----------------------------------------------------------------------------------

    def _new_id(self) -> str:
        while True:
            ident = self.ids.token(21)
            if ident not in self.sandboxes and ident not in self.archive and ident not in self.snapshots:
                return ident

    def find(self, owner: str, namespace: str, ident: str) -> Sandbox:
        """Return the live sandbox with this id or name, settled to now; 404 if there is none."""
        with self.lock:
            sandbox = self.sandboxes.get(ident)
            if sandbox is None or sandbox.owner != owner or sandbox.namespace != namespace:
                sid = self.names.get((owner, namespace, ident))
                sandbox = self.sandboxes.get(sid) if sid else None
            if sandbox is None:
                raise not_found("sandbox", ident)
            self.settle(sandbox)
            if sandbox.id not in self.sandboxes:
                raise not_found("sandbox", ident)
            return sandbox

    def find_any(self, ident: str, owner: str | None = None) -> Sandbox | None:
        """Return the live sandbox an ingress host label names (an id, else a name), settled to now."""
        with self.lock:
            sandbox = self.sandboxes.get(ident)
            if sandbox is None:
                matches = [
                    self.sandboxes[sid]
                    for (own, _ns, name), sid in self.names.items()
                    if name == ident and (owner is None or own == owner)
                ]
                if owner is not None:
                    matches.sort(key=lambda s: s.namespace != "default")
                sandbox = matches[0] if len(matches) == 1 or (matches and owner) else None
            if sandbox is None:
                return None
            self.settle(sandbox)
            return self.sandboxes.get(sandbox.id)

    def daemon_of(self, sb: Sandbox) -> Daemon:
        """Return the daemon state of a live sandbox (created on first use)."""
        from .daemon import Daemon  # with the first sandbox's daemon: a start never needs the module

        with self.lock:
            daemon = self.daemons.get(sb.id)
            if daemon is None:
                daemon = Daemon(sb.id, sb.namespace, self.clock.now(), self.ids.uuid4)
                self.daemons[sb.id] = daemon
            return daemon

    def list_sandboxes(self, owner: str, namespace: str) -> list[Sandbox]:
        """Return the tenant's live sandboxes, oldest first."""
        with self.lock:
            self.settle_all()
            return list(self._by_tenant.get((owner, namespace), {}).values())

    # -- the clock -------------------------------------------------------------------------------

    def settle_all(self) -> None:
        """Apply every transition and timeout that is due (what the heap says is due, not every sandbox)."""
        with self.lock:
            settle_due(self._due, self.clock.now(), self.sandboxes, lambda sb, _now: self.settle(sb), self._schedule)

    def settle(self, sb: Sandbox) -> None:
        """Apply the transitions of ``sb`` that are due by now, in order."""
        now = self.clock.now()
        with self.lock:
            before, moved = sb.status, False
            while sb.id in self.sandboxes and self._step(sb, now):
                moved = True
            if sb.status != before and sb.id in self.sandboxes:
                self.on_change(sb)
            if sb.resize is not None and sb.resize.status == "pending" and sb.resize.done_at <= now:
                sb.resize.status = "succeeded"
                sb.resources = sb.resize.requested
                moved = True
            if moved:
                self.changed(sb)

    def _step(self, sb: Sandbox, now: float) -> bool:
        if sb.status == "pending" and sb.resuming:
            if sb.transition_at is None or sb.transition_at > now:
                return False
            self._start(sb, sb.transition_at)
            return True
        if sb.status == "pending":
            fail_at = None if sb.max_pending_secs is None else sb.created_at + sb.max_pending_secs
            if sb.ready_at is not None and sb.ready_at <= now and (fail_at is None or sb.ready_at <= fail_at):
                self._start(sb, sb.ready_at)
                return True
            if fail_at is not None and fail_at <= now:
                sb.status, sb.termination_reason, sb.pending_reason = "failed", "no_capacity", None
                self._free_name(sb)
                return True
            return False
        if sb.status in ("suspending", "snapshotting"):
            if sb.transition_at is None or sb.transition_at > now:
                return False
            sb.status = "suspended" if sb.status == "suspending" else "running"
            sb.transition_at = None
            return True
        deadline = sb.timeout_deadline()
        if deadline is not None:
            if deadline > now:
                return False
            if sb.name is None:
                self._terminate(sb, deadline, "timeout")
            else:
                sb.status, sb.running_since = "suspended", None
            return True
        return False

    def _start(self, sb: Sandbox, at: float) -> None:
        sb.status, sb.running_since, sb.transition_at = "running", at, None
        sb.pending_reason, sb.resuming = None, False

    def _free_name(self, sb: Sandbox) -> None:
        if sb.name is not None and self.names.get((sb.owner, sb.namespace, sb.name)) == sb.id:
            del self.names[(sb.owner, sb.namespace, sb.name)]

    def _terminate(self, sb: Sandbox, at: float, reason: str | None) -> None:
        self._free_name(sb)
        self.sandboxes.pop(sb.id, None)
        tenant = self._by_tenant.get((sb.owner, sb.namespace))
        if tenant is not None:
            tenant.pop(sb.id, None)
            if not tenant:
                del self._by_tenant[(sb.owner, sb.namespace)]
        self._due.discard(sb.id)
        sb.status, sb.terminated_at, sb.archived_at = "terminated", at, at
        sb.termination_reason = reason or sb.termination_reason
        sb.transition_at = None
        self.archive[sb.id] = sb
        self.changes.mark("archive", sb.id)
        while len(self.archive) > ARCHIVE_LIMIT:
            gone, _ = self.archive.popitem(last=False)
            self.changes.mark("archive", gone)
        self.daemons.pop(sb.id, None)
        self.changed(sb)
        self.on_terminate(sb)

    def archived(self, owner: str, namespace: str) -> list[Sandbox]:
        """Return the tenant's archived sandboxes, newest first."""
        with self.lock:
            self.settle_all()
            return [s for s in reversed(self.archive.values()) if s.owner == owner and s.namespace == namespace]

    # -- state -----------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every sandbox, snapshot, session, daemon and queued create outcome; timings back to 0."""
        with self.lock:
            for sb in list(self.sandboxes.values()):
                self.on_terminate(sb)
            self._timings = Timings()
            self.sandboxes.clear()
            self._by_tenant.clear()
            self._due.clear()
            self._fs_written.clear()
            self.changes.mark_all()
            self.names.clear()
            self.archive.clear()
            self.snapshots.clear()
            self.sessions.clear()
            self.outcomes.clear()
            self.daemons.clear()

    def dump(self) -> dict[str, Any]:
        """Return the whole state as JSON."""
        with self.lock:
            return {
                "sandboxes": [s.dump() for s in self.sandboxes.values()],
                "archive": [s.dump() for s in self.archive.values()],
                "snapshots": [s.dump() for s in self.snapshots.values()],
                "sessions": [s.dump() for s in self.sessions.values()],
                "timings": self.timings.to_json(),
            }

    def load(self, data: dict[str, Any]) -> None:
        """Replace the state with :meth:`dump` output; nothing changes if it is malformed."""

        def sandbox(d: dict[str, Any]) -> Sandbox:
            if d.get("fs") is None:  # never built: build it on first use, as a new sandbox does
                return Sandbox.load(d, self.filesystems.new(str(d["id"])))
            return Sandbox.load(d, self.filesystems.restore(str(d["id"]), d["fs"]))

        try:
            live = [sandbox(d) for d in data.get("sandboxes", [])]
            archive = [sandbox(d) for d in data.get("archive", [])]
            snaps = [Snapshot.load(d) for d in data.get("snapshots", [])]
            sessions = [Session(**d) for d in data.get("sessions", [])]
            timings = Timings(**data.get("timings", {}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed tensorlake state: {exc}") from exc
        with self.lock:
            self.reset()
            self._timings = timings
            for sb in live:
                self.add(sb)
                if sb.name is not None and sb.status in LIVE:
                    self.names[(sb.owner, sb.namespace, sb.name)] = sb.id
            self.archive.update((sb.id, sb) for sb in archive)
            self.snapshots.update((s.id, s) for s in snaps)
            self.sessions.update((s.token, s) for s in sessions)
            self.changes.mark_all()

    # -- durable rows (see mockserver.core.changes) --------------------------------------------------

    def rows(self, keys: Iterable[Key]) -> Iterator[Row]:
        """Return the current rows of the marked records (a sandbox's files in a row of their own)."""
        with self.lock:
            for kind, key in keys:
                if kind == "sandbox":
                    live = self.sandboxes.get(key)
                    yield Row("sandbox", key, None if live is None else live.dump(with_fs=False))
                    yield from self._fs_rows(key)
                elif kind == "archive":
                    old = self.archive.get(key)
                    yield Row("archive", key, None if old is None else old.dump(with_fs=False))
                    yield from self._fs_rows(key)
                elif kind == "snapshot":
                    snap = self.snapshots.get(key)
                    yield Row("snapshot", key, None if snap is None else snap.dump())
                elif kind == "session":
                    session = self.sessions.get(key)
                    yield Row("session", key, None if session is None else session.dump())
                elif kind == "timings":
                    yield Row("timings", "", self._timings.to_json())

    def _fs_rows(self, sandbox_id: str, *, always: bool = False) -> Iterator[Row]:
        """Return the files row of a sandbox when its tree moved since it was last written (none if unbuilt)."""
        sb = self.sandboxes.get(sandbox_id) or self.archive.get(sandbox_id)
        if sb is None:
            if self._fs_written.pop(sandbox_id, None) is not None or always:
                yield Row("fs", sandbox_id, None)
            return
        fs = sb.built_fs()
        if fs is not None and (always or self._fs_written.get(sandbox_id) != fs.revision):
            self._fs_written[sandbox_id] = fs.revision
            yield Row("fs", sandbox_id, fs.dump())

    def all_rows(self) -> Iterator[Row]:
        """Return every record, in the order :meth:`load_rows` needs them."""
        with self.lock:
            self._fs_written.clear()
            yield Row("timings", "", self._timings.to_json())
            for kind, table in (("sandbox", self.sandboxes), ("archive", self.archive)):
                for sb in list(table.values()):
                    yield Row(kind, sb.id, sb.dump(with_fs=False))
                    yield from self._fs_rows(sb.id)
            for snap in self.snapshots.values():
                yield Row("snapshot", snap.id, snap.dump())
            for session in self.sessions.values():
                yield Row("session", session.token, session.dump())

    def load_rows(self, rows: Iterable[Row]) -> None:
        """Replace the state with rows :meth:`all_rows` returned; ValueError when malformed."""
        tables: dict[str, list[dict[str, Any]]] = {"sandbox": [], "archive": [], "snapshot": [], "session": []}
        files: dict[str, Any] = {}
        timings: dict[str, Any] = {}
        for row in rows:
            if row.kind == "fs":
                files[row.key] = row.body
            elif row.kind == "timings":
                timings = dict(row.body)
            elif row.kind in tables:
                tables[row.kind].append(dict(row.body))
        for body in (*tables["sandbox"], *tables["archive"]):
            body["fs"] = files.get(str(body.get("id")))
        self.load(
            {
                "sandboxes": tables["sandbox"],
                "archive": tables["archive"],
                "snapshots": tables["snapshot"],
                "sessions": tables["session"],
                "timings": timings,
            }
        )
        with self.lock:
            self._fs_written = {k: fs.revision for k, sb in self._all_records() if (fs := sb.built_fs()) is not None}

    def _all_records(self) -> Iterator[tuple[str, Sandbox]]:
        yield from self.sandboxes.items()
        yield from self.archive.items()


def _next_due(sb: Sandbox) -> float | None:
    """Return when ``sb`` next changes on its own (a transition, a timeout, a resize), or None."""
    times: list[float | None] = []
    if sb.status == "pending" and sb.resuming:
        times.append(sb.transition_at)
    elif sb.status == "pending":
        times.append(sb.ready_at)
        if sb.max_pending_secs is not None:
            times.append(sb.created_at + sb.max_pending_secs)
    elif sb.status in ("suspending", "snapshotting"):
        times.append(sb.transition_at)
    elif sb.status == "running":
        times.append(sb.timeout_deadline())
    if sb.resize is not None and sb.resize.status == "pending":
        times.append(sb.resize.done_at)
    found = [t for t in times if t is not None]
    return min(found) if found else None
