"""The store of the TensorLake mock's state: every tenant's records, their lookups, and the clock's transitions.

:class:`SandboxStore` holds the sandboxes (live and archived), names, snapshots, sessions, daemons and accepted
keys under one lock, finds sandboxes by id or name, and applies what the virtual clock makes due
(durations from :class:`Timings`, all 0 by default):

* ``pending`` -> ``running`` at ``created + startup``; with ``max_pending_secs`` a sandbox still pending
  by then becomes ``failed`` with ``termination_reason=no_capacity``.
* ``suspending`` -> ``suspended``, ``snapshotting`` -> ``running`` and a resume's ``pending`` -> ``running``
  when their transition time comes.
* ``timeout_secs`` counts running time since the sandbox last started: an ephemeral sandbox is then
  terminated (``termination_reason=timeout``), a named one suspended.
* A terminated sandbox moves to the archive (the newest 1000) and its name is free again.

The operations that change the state live in :class:`~.state.TensorLakeModel`.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mockserver.core.clock import VirtualClock
from mockserver.core.ids import IdFactory
from mockserver.sandbox.filesystem import FileSystem

from .auth import KeyRing
from .daemon import Daemon
from .records import Resources, Sandbox, Session, Snapshot
from .validate import not_found

__all__ = ["ARCHIVE_LIMIT", "LIVE", "CreateOutcome", "SandboxStore", "Timings"]

ARCHIVE_LIMIT = 1000
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


class SandboxStore:
    """Hold every tenant's sandboxes, snapshots, daemons and browser sessions, and the accepted keys; thread-safe."""

    def __init__(
        self,
        clock: VirtualClock,
        ids: IdFactory,
        resolve: Callable[[str], Iterable[str]],
        keys: KeyRing | None = None,
    ) -> None:
        self.clock = clock
        self.ids = ids
        self.resolve = resolve
        self.keys = keys or KeyRing()
        self.timings = Timings()
        self.lock = threading.RLock()
        self.sandboxes: dict[str, Sandbox] = {}
        self.names: dict[tuple[str, str, str], str] = {}
        self.archive: collections.OrderedDict[str, Sandbox] = collections.OrderedDict()
        self.snapshots: dict[str, Snapshot] = {}
        self.sessions: dict[str, Session] = {}
        self.outcomes: collections.deque[CreateOutcome] = collections.deque()
        self.daemons: dict[str, Daemon] = {}
        self.on_terminate: Callable[[Sandbox], None] = lambda sandbox: None

    # -- lookup ----------------------------------------------------------------------------------

    def _new_id(self) -> str:
        while True:
            ident = self.ids.token(21)
            if ident not in self.sandboxes and ident not in self.archive and ident not in self.snapshots:
                return ident

    def _new_fs(self, hostname: str) -> FileSystem:
        return FileSystem(now=self.clock.now, hostname=hostname)

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
            return [s for s in self.sandboxes.values() if s.owner == owner and s.namespace == namespace]

    # -- the clock -------------------------------------------------------------------------------

    def settle_all(self) -> None:
        """Apply every transition and timeout that is due."""
        with self.lock:
            for sandbox in list(self.sandboxes.values()):
                self.settle(sandbox)

    def settle(self, sb: Sandbox) -> None:
        """Apply the transitions of ``sb`` that are due by now, in order."""
        now = self.clock.now()
        with self.lock:
            while sb.id in self.sandboxes and self._step(sb, now):
                pass
            if sb.resize is not None and sb.resize.status == "pending" and sb.resize.done_at <= now:
                sb.resize.status = "succeeded"
                sb.resources = Resources.from_json(sb.resize.requested.to_json())

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
        if sb.status == "running" and sb.timeout_secs and sb.running_since is not None:
            deadline = sb.running_since + sb.timeout_secs
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
        sb.status, sb.terminated_at, sb.archived_at = "terminated", at, at
        sb.termination_reason = reason or sb.termination_reason
        sb.transition_at = None
        self.archive[sb.id] = sb
        while len(self.archive) > ARCHIVE_LIMIT:
            self.archive.popitem(last=False)
        self.daemons.pop(sb.id, None)
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
            self.timings = Timings()
            self.sandboxes.clear()
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
            return Sandbox.load(d, FileSystem.load(d["fs"], now=self.clock.now))

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
            self.timings = timings
            for sb in live:
                self.sandboxes[sb.id] = sb
                if sb.name is not None and sb.status in LIVE:
                    self.names[(sb.owner, sb.namespace, sb.name)] = sb.id
            self.archive.update((sb.id, sb) for sb in archive)
            self.snapshots.update((s.id, s) for s in snaps)
            self.sessions.update((s.token, s) for s in sessions)
