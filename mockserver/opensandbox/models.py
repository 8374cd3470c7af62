"""OpenSandbox state and rules without HTTP: sandboxes, their state machine, commands, snapshots.

Everything time-related reads the mock's virtual clock. State changes are applied lazily: every
access first calls :meth:`OpenSandboxState.refresh`, which finishes due transitions (Pending to
Running, Pausing to Paused, ...) and removes expired sandboxes, so any clock mode works.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contracts.opensandbox import NetworkPolicy, PolicyError
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.sandbox.filesystem import FileSystem

from .profiles import DOCKER, RuntimeProfile
from .spec import (
    MAX_PAGE_SIZE,
    RESERVED_PREFIX,
    STATES,
    CreateSpec,
    bad_request,
    iso,
    parse_create,
    validate_labels,
)
from .validation import RequestValidationError

#: Extension keys the real server stores as annotation-backed labels and so echoes back.
ECHOED_EXTENSION_PREFIX = "opensandbox.extensions."


@dataclass
class CommandRecord:
    """One execd command: its status record and (for background runs) its combined log."""

    id: str
    content: str
    background: bool
    started_at: float
    running: bool = True
    exit_code: int | None = None
    error: str | None = None
    finished_at: float | None = None
    output: bytearray = field(default_factory=bytearray)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)

    def finish(self, exit_code: int, error: str | None, now: float) -> None:
        """Record the end of the command."""
        if not self.running:
            return
        self.running = False
        self.exit_code = exit_code
        self.error = error
        self.finished_at = now

    def status_json(self) -> dict[str, Any]:
        """Return the execd ``CommandStatusResponse``."""
        out: dict[str, Any] = {
            "id": self.id,
            "content": self.content,
            "running": self.running,
            "exit_code": self.exit_code,
            "started_at": iso(self.started_at),
            "finished_at": None if self.finished_at is None else iso(self.finished_at),
        }
        if self.error:
            out["error"] = self.error
        return out

    def cancel(self) -> None:
        """Stop the command's task, wherever its event loop runs."""
        task, loop = self.task, self.loop
        if task is None or task.done() or loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task.cancel()
        else:
            loop.call_soon_threadsafe(task.cancel)

    def to_json(self) -> dict[str, Any]:
        """Return the record for a state snapshot."""
        return {
            "id": self.id,
            "content": self.content,
            "background": self.background,
            "started_at": self.started_at,
            "running": self.running,
            "exit_code": self.exit_code,
            "error": self.error,
            "finished_at": self.finished_at,
            "output": self.output.decode("utf-8", "replace"),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommandRecord:
        """Rebuild a record; one that was running is restored as killed."""
        rec = cls(str(data["id"]), str(data["content"]), bool(data["background"]), float(data["started_at"]))
        rec.output = bytearray(str(data.get("output", "")).encode())
        if data.get("running"):
            rec.finish(-1, "signal: killed", float(data["started_at"]))
        else:
            rec.running = False
            rec.exit_code = data.get("exit_code")
            rec.error = data.get("error")
            rec.finished_at = data.get("finished_at")
        return rec


@dataclass
class SandboxRecord:
    """One sandbox: its lifecycle state, spec, filesystem, policy and execd state."""

    id: str
    tenant: str
    created_at: float
    spec: CreateSpec
    fs: FileSystem
    state: str = "Running"
    reason: str = ""
    message: str = ""
    last_transition_at: float = 0.0
    expires_at: float | None = None
    pending: tuple[str, float] | None = None
    policy: NetworkPolicy | None = None
    has_sidecar: bool = False
    commands: dict[str, CommandRecord] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    oom_on_next_exec: bool = False

    def set_state(self, state: str, reason: str, message: str, now: float) -> None:
        """Move to ``state`` and stamp the transition."""
        self.state, self.reason, self.message, self.last_transition_at = state, reason, message, now

    def to_json(self) -> dict[str, Any]:
        """Return the lifecycle ``Sandbox`` body (null fields omitted)."""
        out: dict[str, Any] = {"id": self.id}
        if self.spec.image is not None:
            out["image"] = self.spec.image
        if self.spec.snapshot_id:
            out["snapshotId"] = self.spec.snapshot_id
        if self.spec.platform:
            out["platform"] = self.spec.platform
        out["status"] = self.status_json()
        if self.spec.metadata:
            out["metadata"] = dict(self.spec.metadata)
        echoed = {k: v for k, v in self.spec.extensions.items() if k.startswith(ECHOED_EXTENSION_PREFIX)}
        if echoed:
            out["extensions"] = echoed
        out["entrypoint"] = list(self.spec.entrypoint)
        if self.expires_at is not None:
            out["expiresAt"] = iso(self.expires_at)
        out["createdAt"] = iso(self.created_at)
        return out

    def create_response(self) -> dict[str, Any]:
        """Return the ``CreateSandboxResponse`` body: a request's ``metadata`` echoed, a fresh container "started"."""
        full = self.to_json()
        if self.spec.echo_metadata:
            full["metadata"] = dict(self.spec.metadata)
        if (self.reason, self.message) == DOCKER.running_status():
            full["status"]["message"] = DOCKER.running_status(created=True)[1]
        keys = ("id", "status", "metadata", "extensions", "platform", "expiresAt", "createdAt", "entrypoint")
        return {k: full[k] for k in keys if k in full}

    def status_json(self) -> dict[str, Any]:
        """Return the ``SandboxStatus`` body."""
        return {
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionAt": iso(self.last_transition_at),
        }

    def cancel_commands(self) -> None:
        """Stop every running command."""
        for cmd in self.commands.values():
            cmd.cancel()

    def dump(self) -> dict[str, Any]:
        """Return the sandbox for a state snapshot."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "created_at": self.created_at,
            "spec": {
                "image": self.spec.image,
                "snapshot_id": self.spec.snapshot_id,
                "timeout": self.spec.timeout,
                "entrypoint": self.spec.entrypoint,
                "env": self.spec.env,
                "metadata": self.spec.metadata,
                "resource_limits": self.spec.resource_limits,
                "extensions": self.spec.extensions,
                "platform": self.spec.platform,
                "policy": None if self.spec.policy is None else self.spec.policy.to_json(),
            },
            "fs": self.fs.dump(),
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "last_transition_at": self.last_transition_at,
            "expires_at": self.expires_at,
            "pending": list(self.pending) if self.pending else None,
            "policy": None if self.policy is None else self.policy.to_json(),
            "has_sidecar": self.has_sidecar,
            "commands": [c.to_json() for c in self.commands.values()],
            "sessions": dict(self.sessions),
            "oom_on_next_exec": self.oom_on_next_exec,
        }

    @classmethod
    def load(cls, data: dict[str, Any], now: Callable[[], float]) -> SandboxRecord:
        """Rebuild a sandbox from :meth:`dump` output."""
        s = data["spec"]
        spec = CreateSpec(
            image=s["image"],
            snapshot_id=s["snapshot_id"],
            timeout=s["timeout"],
            entrypoint=list(s["entrypoint"]),
            env=dict(s["env"]),
            metadata=dict(s["metadata"]),
            resource_limits=dict(s["resource_limits"]),
            extensions=dict(s["extensions"]),
            platform=s["platform"],
            policy=None if s["policy"] is None else NetworkPolicy.from_json(s["policy"]),
        )
        pending = data.get("pending")
        rec = cls(
            id=str(data["id"]),
            tenant=str(data["tenant"]),
            created_at=float(data["created_at"]),
            spec=spec,
            fs=FileSystem.load(data["fs"], now=now),
            state=str(data["state"]),
            reason=str(data["reason"]),
            message=str(data["message"]),
            last_transition_at=float(data["last_transition_at"]),
            expires_at=data.get("expires_at"),
            pending=(str(pending[0]), float(pending[1])) if pending else None,
            policy=None if data.get("policy") is None else NetworkPolicy.from_json(data["policy"]),
            has_sidecar=bool(data.get("has_sidecar")),
            sessions=dict(data.get("sessions") or {}),
            oom_on_next_exec=bool(data.get("oom_on_next_exec")),
        )
        rec.commands = {c["id"]: CommandRecord.from_json(c) for c in data.get("commands", [])}
        return rec


@dataclass
class SnapshotRecord:
    """A snapshot of a sandbox's filesystem."""

    id: str
    tenant: str
    sandbox_id: str
    name: str | None
    created_at: float
    ready_at: float
    fs: dict[str, Any]
    image: dict[str, Any] | None

    def to_json(self, now: float) -> dict[str, Any]:
        """Return the lifecycle ``Snapshot`` body."""
        ready = now >= self.ready_at
        out: dict[str, Any] = {"id": self.id, "sandboxId": self.sandbox_id}
        if self.name:
            out["name"] = self.name
        out["status"] = {
            "state": "Ready" if ready else "Creating",
            "reason": "SNAPSHOT_READY" if ready else "SNAPSHOT_CREATING",
            "message": "Snapshot is ready." if ready else "Snapshot is being created.",
            "lastTransitionAt": iso(self.ready_at if ready else self.created_at),
        }
        out["createdAt"] = iso(self.created_at)
        return out


def paginate(items: list[dict[str, Any]], page: int, page_size: int) -> dict[str, Any]:
    """Return the ``{items, pagination}`` body for one page."""
    total = len(items)
    pages = math.ceil(total / page_size) if total else 0
    start = (page - 1) * page_size
    return {
        "items": items[start : start + page_size],
        "pagination": {
            "page": page,
            "pageSize": page_size,
            "totalItems": total,
            "totalPages": pages,
            "hasNextPage": page < pages,
        },
    }


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

    # -- bookkeeping -------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget everything, stopping running commands."""
        with self.lock:
            for sb in self.sandboxes.values():
                sb.cancel_commands()
            self.sandboxes.clear()
            self.snapshots.clear()
            self.metrics_events.clear()

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
                snap = self.snapshots.get(spec.snapshot_id)
                if snap is None or snap.tenant != tenant:
                    raise ApiError(404, "SNAPSHOT::NOT_FOUND", f"Snapshot {spec.snapshot_id} not found")
                if now < snap.ready_at:
                    raise ApiError(409, "SANDBOX::SNAPSHOT_NOT_READY", f"Snapshot {spec.snapshot_id} is not ready.")
                fs = FileSystem.load(snap.fs, now=self.clock.now)
            if spec.timeout is not None:
                try:
                    iso(now + spec.timeout)
                except (OverflowError, ValueError, OSError):
                    raise bad_request(
                        "SANDBOX::INVALID_PARAMETER",
                        f"Sandbox timeout {spec.timeout}s is too large to represent safely.",
                    ) from None
            sb = SandboxRecord(
                id=sandbox_id,
                tenant=tenant,
                created_at=now,
                spec=spec,
                fs=fs,
                expires_at=None if spec.timeout is None else now + spec.timeout,
                policy=spec.policy,
                has_sidecar=spec.policy is not None or self.egress_without_policy,
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
            self._transition(sb, "Pausing", "Paused", self.profile.pause_seconds)

    def resume(self, tenant: str, sandbox_id: str) -> None:
        """Resume a paused sandbox; 409 otherwise."""
        with self.lock:
            sb = self.find(sandbox_id, tenant)
            if sb.state != "Paused":
                if self.profile.name == "docker":
                    raise ApiError(409, "DOCKER::SANDBOX_NOT_PAUSED", "Sandbox is not in a paused state.")
                raise ApiError(409, "KUBERNETES::INVALID_STATE", f"Sandbox is {sb.state}")
            self._transition(sb, "Resuming", "Running", self.profile.resume_seconds)

    def _transition(self, sb: SandboxRecord, via: str, target: str, seconds: float) -> None:
        now = self.clock.now()
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
            sb.pending = None
            sb.set_state("Failed", reason, message, self.clock.now())

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
            }

    def load(self, data: dict[str, Any]) -> None:
        """Replace everything with :meth:`dump` output; raise ValueError when malformed."""
        try:
            sandboxes = {d["id"]: SandboxRecord.load(d, self.clock.now) for d in data.get("sandboxes", [])}
            snapshots = {d["id"]: SnapshotRecord(**d) for d in data.get("snapshots", [])}
            events = list(data.get("metrics_events", []))
        except (KeyError, TypeError, AttributeError, PolicyError) as exc:
            raise ValueError(f"malformed OpenSandbox state: {exc}") from exc
        with self.lock:
            self.clear()
            self.sandboxes, self.snapshots, self.metrics_events = sandboxes, snapshots, events


__all__ = [
    "MAX_PAGE_SIZE",
    "STATES",
    "CommandRecord",
    "CreateSpec",
    "OpenSandboxState",
    "RequestValidationError",
    "SandboxRecord",
    "SnapshotRecord",
    "iso",
    "paginate",
    "parse_create",
    "validate_labels",
]
