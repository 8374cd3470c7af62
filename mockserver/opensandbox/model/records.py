"""OpenSandbox records without HTTP: a sandbox, its execd commands and snapshots, and their JSON bodies."""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contracts.opensandbox import NetworkPolicy
from mockserver.core.wire import WireDict
from mockserver.sandbox.filesystem import FileSystem

from .profiles import DOCKER
from .spec import CreateSpec, iso

#: Extension keys the real server stores as annotation-backed labels and so echoes back.
ECHOED_EXTENSION_PREFIX = "opensandbox.extensions."


@dataclass
class CommandRecord:
    """One execd command: its status record and (for background runs) its combined log.

    ``stop`` is how the runtime running the command stops it (set when it starts); the model calls it
    through :meth:`cancel` when a sandbox is deleted, fails or the command is interrupted. ``held_polls``
    is how many more status polls report it running whatever it did (an armed fault); ``stop_reason`` is the
    error a stopped command reports (an interrupt's SIGTERM by default).
    """

    id: str
    content: str
    background: bool
    started_at: float
    running: bool = True
    exit_code: int | None = None
    error: str | None = None
    finished_at: float | None = None
    output: bytearray = field(default_factory=bytearray)
    held_polls: int = 0
    stop_reason: str = "signal: terminated"
    stop: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def finish(self, exit_code: int, error: str | None, now: float) -> None:
        """Record the end of the command."""
        if not self.running:
            return
        self.running = False
        self.exit_code = exit_code
        self.error = error
        self.finished_at = now

    def status_json(self, *, held: bool = False) -> dict[str, Any]:
        """Return the execd ``CommandStatusResponse``; ``held``: as while it runs (see :attr:`held_polls`)."""
        if held:
            return {
                "id": self.id,
                "content": self.content,
                "running": True,
                "exit_code": None,
                "started_at": iso(self.started_at),
                "finished_at": None,
            }
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
        """Stop the command if it runs (the runtime that started it said how, in :attr:`stop`)."""
        if self.running and self.stop is not None:
            self.stop()

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
            "held_polls": self.held_polls,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommandRecord:
        """Rebuild a record; one that was running is restored as killed."""
        rec = cls(str(data["id"]), str(data["content"]), bool(data["background"]), float(data["started_at"]))
        rec.output = bytearray(str(data.get("output", "")).encode())
        rec.held_polls = int(data.get("held_polls") or 0)
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
    """One sandbox: its lifecycle state, spec, filesystem, policy and execd state.

    ``access_token`` is the sandbox's secure-access token: in multi-tenant mode its direct endpoint
    hands it out and its sandbox ports accept it in place of the owner's API key. The armed faults of
    :mod:`.faults`: ``oom_on_next_exec`` (an OOM wording name; ``""`` is the runtime's own), ``fail_next``
    (pause or resume -> the failed status it ends in; ``pending_failure`` while it settles), ``stall_next``
    (pause or resume -> how many virtual seconds it stays Pausing or Resuming; None: until deleted) and
    ``hold_next_command`` (how many status polls the next command reports running).

    ``history`` is every state the sandbox entered, as ``(at, state, reason, message)`` (its diagnostics'
    events, :mod:`.diagnostics`); ``vault`` is its egress sidecar's credential vault (:mod:`.vault`), None
    until one is created.

    ``rev`` counts the changes a rule made (:meth:`~.store.OpenSandboxState.changed`); ``wire_cache`` holds the
    lifecycle body of one revision.
    """

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
    access_token: str = ""
    commands: dict[str, CommandRecord] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    oom_on_next_exec: str | None = None
    fail_next: dict[str, tuple[str, str]] = field(default_factory=dict)
    pending_failure: tuple[str, str] | None = None
    stall_next: dict[str, float | None] = field(default_factory=dict)
    hold_next_command: int = 0
    history: list[tuple[float, str, str, str]] = field(default_factory=list)
    vault: dict[str, Any] | None = None
    rev: int = field(default=0, compare=False)
    wire_cache: tuple[int, WireDict] | None = field(default=None, init=False, repr=False, compare=False)

    def set_state(self, state: str, reason: str, message: str, now: float) -> None:
        """Move to ``state`` and stamp the transition."""
        self.state, self.reason, self.message, self.last_transition_at = state, reason, message, now
        self.history.append((now, state, reason, message))

    def to_json(self) -> dict[str, Any]:
        """Return the lifecycle ``Sandbox`` body (null fields omitted)."""
        out: dict[str, Any] = {"id": self.id}
        if self.spec.image is not None:
            out["image"] = {"uri": self.spec.image.get("uri")}  # never the registry credentials
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

    def dump(self, *, with_fs: bool = True) -> dict[str, Any]:
        """Return the sandbox for a state snapshot (without its filesystem when ``with_fs`` is false)."""
        out = {
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
                "sidecar_refusal": self.spec.sidecar_refusal,
            },
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "last_transition_at": self.last_transition_at,
            "expires_at": self.expires_at,
            "pending": list(self.pending) if self.pending else None,
            "policy": None if self.policy is None else self.policy.to_json(),
            "has_sidecar": self.has_sidecar,
            "access_token": self.access_token,
            "commands": [c.to_json() for c in self.commands.values()],
            "sessions": dict(self.sessions),
            "oom_on_next_exec": self.oom_on_next_exec,
            "fail_next": {op: list(status) for op, status in self.fail_next.items()},
            "pending_failure": None if self.pending_failure is None else list(self.pending_failure),
            "hold_next_command": self.hold_next_command,
            "stall_next": dict(self.stall_next),
            "history": [list(entry) for entry in self.history],
            "vault": self.vault,
        }
        if with_fs:
            out["fs"] = self.fs.dump()
        return out

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
            sidecar_refusal=s.get("sidecar_refusal"),
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
            access_token=str(data.get("access_token") or secrets.token_urlsafe(24)),
            sessions=dict(data.get("sessions") or {}),
            oom_on_next_exec=_oom_wording(data.get("oom_on_next_exec")),
            fail_next={str(op): (str(r), str(m)) for op, (r, m) in (data.get("fail_next") or {}).items()},
            pending_failure=_status_pair(data.get("pending_failure")),
            hold_next_command=int(data.get("hold_next_command") or 0),
            stall_next={str(op): None if t is None else float(t) for op, t in (data.get("stall_next") or {}).items()},
            history=[(float(t), str(st), str(r), str(m)) for t, st, r, m in data.get("history") or []],
            vault=data.get("vault"),
        )
        rec.commands = {c["id"]: CommandRecord.from_json(c) for c in data.get("commands", [])}
        return rec


def _status_pair(value: Any) -> tuple[str, str] | None:
    """Read a (reason, message) pair from a state file."""
    return (str(value[0]), str(value[1])) if value else None


def _oom_wording(value: Any) -> str | None:
    """Read an armed OOM kill from a state file: a wording name, or (older files) a boolean."""
    if isinstance(value, str):
        return value
    return "" if value else None


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

    def dump(self) -> dict[str, Any]:
        """Return the snapshot for a state snapshot."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "sandbox_id": self.sandbox_id,
            "name": self.name,
            "created_at": self.created_at,
            "ready_at": self.ready_at,
            "fs": self.fs,
            "image": self.image,
        }


def pagination(total: int, page: int, page_size: int) -> dict[str, Any]:
    """Return the ``pagination`` object of page ``page`` of ``total`` items."""
    pages = math.ceil(total / page_size) if total else 0
    return {"page": page, "pageSize": page_size, "totalItems": total, "totalPages": pages, "hasNextPage": page < pages}


def paginate(items: list[dict[str, Any]], page: int, page_size: int) -> dict[str, Any]:
    """Return the ``{items, pagination}`` body for one page."""
    start = (page - 1) * page_size
    return {"items": items[start : start + page_size], "pagination": pagination(len(items), page, page_size)}


__all__ = ["ECHOED_EXTENSION_PREFIX", "CommandRecord", "SandboxRecord", "SnapshotRecord", "paginate", "pagination"]
