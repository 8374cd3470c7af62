"""The OpenSandbox server's operations: what changes its sandboxes and snapshots, and the faults' rules.

No HTTP here: :mod:`.lifecycle` turns a request into one call of these methods and their result into the
answer's body; :mod:`.faults` and :mod:`.admin` arm and apply the fault catalogue's rules through the same
object. Every method takes the store's lock and refuses before it changes anything, so a refused request
leaves the state as it was. The records, lookups, listing, persistence and the clock's transitions are the
:class:`~.store.OpenSandboxState`'s.

* create: Pending (for the profile's ``pending_seconds``) then Running, or Running at once; restored from a
  Ready snapshot when the spec names one; 429 ``POOL_CAPACITY_EXHAUSTED`` when the server is full.
* pause: Running -> Pausing -> Paused; resume: Paused -> Resuming -> Running; 409 from any other state.
* delete: gone at once (Docker) or Stopping first (Kubernetes-like).
* fail, recover, expire, an OOM kill on the next command and held command polls are what the fault
  catalogue arms.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from mockserver.core import ApiError
from mockserver.sandbox.filesystem import FileSystem

from .errors import capacity_exhausted
from .records import SandboxRecord, SnapshotRecord
from .spec import RESERVED_PREFIX, CreateSpec, bad_request, check_timeout, validate_labels
from .store import OpenSandboxState

__all__ = ["OpenSandboxModel"]


class OpenSandboxModel(OpenSandboxState):
    """The state model: create, delete, pause, resume, renew and patch sandboxes, snapshot them; thread-safe."""

    # -- lifecycle ---------------------------------------------------------------------------------

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

    def delete_snapshot(self, tenant: str, snapshot_id: str) -> None:
        """Delete a snapshot or raise 404."""
        with self.lock:
            self.find_snapshot(tenant, snapshot_id)
            del self.snapshots[snapshot_id]
            self.changes.mark("snapshot", snapshot_id)
