"""The OpenSandbox server's state: every tenant's sandboxes and snapshots, and their state machine.

Everything time-related reads the mock's virtual clock. State changes are applied lazily: every
access first calls :meth:`OpenSandboxState.refresh`, which finishes due transitions (Pending to
Running, Pausing to Paused, ...) and removes expired sandboxes, so any clock mode works.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from contracts.opensandbox import PolicyError
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.sandbox.filesystem import FileSystem

from .profiles import RuntimeProfile
from .records import ECHOED_EXTENSION_PREFIX, CommandRecord, SandboxRecord, SnapshotRecord, paginate
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

    def refresh(self) -> None:
        """Apply every transition and expiry that is due at the current virtual time."""
        with self.lock:
            now = self.clock.now()
            for sb in list(self.sandboxes.values()):
                self._refresh_one(sb, now)

    def _refresh_one(self, sb: SandboxRecord, now: float) -> None:
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
        if sb.expires_at is not None and now >= sb.expires_at and sb.id in self.sandboxes:
            self._remove(sb)

    def _remove(self, sb: SandboxRecord) -> None:
        sb.cancel_commands()
        self.sandboxes.pop(sb.id, None)

    def find(self, sandbox_id: str, tenant: str | None = None) -> SandboxRecord:
        """Return a live sandbox (of ``tenant`` when given) or raise the runtime's 404."""
        with self.lock:
            sb = self.sandboxes.get(sandbox_id)
            if sb is not None:
                self._refresh_one(sb, self.clock.now())
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

    def create(self, tenant: str, spec: CreateSpec) -> SandboxRecord:
        """Create a sandbox from a validated spec."""
        with self.lock:
            now = self.clock.now()
            sandbox_id = self.ids.uuid4()
            fs = FileSystem(now=self.clock.now, user="root", hostname=sandbox_id[:12])
            if spec.snapshot_id:
                fs = FileSystem.load(self.restorable_snapshot(tenant, spec.snapshot_id).fs, now=self.clock.now)
            check_timeout(spec.timeout, now)
            sb = SandboxRecord(
                id=sandbox_id,
                tenant=tenant,
                created_at=now,
                spec=spec,
                fs=fs,
                expires_at=None if spec.timeout is None else now + spec.timeout,
                policy=spec.policy,
                has_sidecar=spec.policy is not None or self.egress_without_policy,
                access_token=secrets.token_urlsafe(24),
            )
            if self.profile.pending_seconds > 0:
                sb.set_state("Pending", *self.profile.status_for("Pending"), now)
                sb.pending = ("Running", now + self.profile.pending_seconds)
            else:
                sb.set_state("Running", *self.profile.running_status(), now)
            self.sandboxes[sandbox_id] = sb
            return sb

    def list(
        self, tenant: str, states: Iterable[str], metadata: dict[str, str], page: int, page_size: int
    ) -> dict[str, Any]:
        """Return one page of the tenant's sandboxes: states OR-ed, metadata AND-ed, newest first."""
        wanted = {s.lower() for s in states}
        with self.lock:
            self.refresh()
            found = [
                sb
                for sb in self.sandboxes.values()
                if sb.tenant == tenant
                and (not wanted or sb.state.lower() in wanted)
                and all(sb.spec.metadata.get(k) == v for k, v in metadata.items())
            ]
            found.sort(key=lambda sb: sb.created_at, reverse=True)
            return paginate([sb.to_json() for sb in found], page, page_size)

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
            else:
                self._remove(sb)

    def pause(self, tenant: str, sandbox_id: str) -> None:
        """Pause a running sandbox; 409 otherwise."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            if sb.state != "Running":
                if self.profile.name == "docker":
                    raise ApiError(409, "DOCKER::SANDBOX_NOT_RUNNING", "Sandbox is not in a running state.")
                raise ApiError(409, "KUBERNETES::INVALID_STATE", f"Sandbox is {sb.state}")
            self._transition(sb, "Pausing", "Paused", self.profile.pause_seconds, sb.fail_next.pop("pause", None))

    def resume(self, tenant: str, sandbox_id: str) -> None:
        """Resume a paused sandbox; 409 otherwise."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            if sb.state != "Paused":
                if self.profile.name == "docker":
                    raise ApiError(409, "DOCKER::SANDBOX_NOT_PAUSED", "Sandbox is not in a paused state.")
                raise ApiError(409, "KUBERNETES::INVALID_STATE", f"Sandbox is {sb.state}")
            self._transition(sb, "Resuming", "Running", self.profile.resume_seconds, sb.fail_next.pop("resume", None))

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

    def recover(self, sandbox_id: str) -> SandboxRecord:
        """Put a Failed sandbox back to Running (its container restarted); 409 ``sandbox_not_failed`` otherwise."""
        with self.lock:
            sb = self.find(sandbox_id)
            if sb.state != "Failed":
                raise ApiError(409, "sandbox_not_failed", f"sandbox {sandbox_id} is {sb.state}, not Failed")
            sb.set_state("Running", *self.profile.running_status(), self._stamp(sb, "Running", self.clock.now()))
            return sb

    def take_command_hold(self, sb: SandboxRecord) -> int:
        """Return how many status polls the sandbox's next command reports running (armed per sandbox or any)."""
        with self.lock:
            held, sb.hold_next_command = sb.hold_next_command, 0
            if not held and self.command_holds:
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

    # -- persistence -------------------------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Return everything as JSON."""
        with self.lock:
            return {
                "profile": self.profile.to_json(),
                "sandboxes": [sb.dump() for sb in self.sandboxes.values()],
                "snapshots": [
                    {
                        "id": s.id,
                        "tenant": s.tenant,
                        "sandbox_id": s.sandbox_id,
                        "name": s.name,
                        "created_at": s.created_at,
                        "ready_at": s.ready_at,
                        "fs": s.fs,
                        "image": s.image,
                    }
                    for s in self.snapshots.values()
                ],
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
