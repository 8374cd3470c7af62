"""State records of the TensorLake mock (sandboxes, snapshots, sessions) and their JSON forms.

Records hold plain data only; the rules that change them live in :mod:`.operations`. A sandbox's settings are
declared in :mod:`.settings` (the resources and resize records in :mod:`.wire`), so its stored form and SandboxInfo follow
them. Times are virtual epoch seconds; the wire shows them as epoch milliseconds.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mockserver.core.wire import WireDict
from mockserver.sandbox.filesystem import FileSystem

from .settings import DEFAULT_DISK_MB, INHERITED, SHOWN, STATUSES, SandboxSettings

R = TypeVar("R")

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from .wire import ResourceResize

__all__ = [
    "DEFAULT_DISK_MB",
    "ROUTABLE",
    "ROUTING_HINT",
    "RUNTIME",
    "STATUSES",
    "Sandbox",
    "Session",
    "Snapshot",
    "inherited_settings",
    "ms",
    "owner_id",
]

Status = Literal["pending", "running", "snapshotting", "suspending", "suspended", "terminated", "timeout", "failed"]
#: Statuses in which the sandbox has a management URL.
ROUTABLE: frozenset[str] = frozenset({"running", "snapshotting", "suspending", "suspended"})
_FS_LOCK = threading.Lock()
RUNTIME = "firecracker"
ROUTING_HINT = "sandproof"


@functools.lru_cache(maxsize=4096)
def owner_id(api_key: str) -> str:
    """Return the tenant id of an API key (a digest: the mock never keeps keys in its state)."""
    return "tenant-" + hashlib.sha256(api_key.encode()).hexdigest()[:16]


def ms(seconds: float | None) -> int | None:
    """Return epoch seconds as epoch milliseconds (None stays None)."""
    return None if seconds is None else round(seconds * 1000)


@functools.cache
def _adapter() -> TypeAdapter[Sandbox]:
    """Return the pydantic adapter of the record (built on first use: most runs never dump or load one)."""
    return _adapter_of(Sandbox)


@functools.cache
def _settings_adapter() -> TypeAdapter[SandboxSettings]:
    return _adapter_of(SandboxSettings)


def _adapter_of(record: type[R]) -> TypeAdapter[R]:
    """Return a pydantic adapter of ``record``, its annotations read with the names of :mod:`.wire` in scope.

    The settings name :mod:`.wire`'s types without importing them (this module loads no pydantic until a record
    is first stored), so the adapter is built again with those names in scope.
    """
    from pydantic import TypeAdapter

    from . import settings, wire

    adapter = TypeAdapter(record)
    adapter.rebuild(force=True, raise_errors=True, _types_namespace={**vars(settings), **vars(wire), **globals()})
    return adapter


#: What a dump leaves out: the filesystem (stored on its own), the revision and the cached answer.
_NOT_STORED = {"filesystem", "rev", "wire_cache"}


def inherited_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Return the settings a snapshot's ``config`` (:meth:`Sandbox.inherited`) hands to a restore, validated."""
    kept = _settings_adapter().validate_python({k: v for k, v in config.items() if k in INHERITED})
    return {name: getattr(kept, name) for name in INHERITED if name in config}


#: What a record caches: its revision, the origin's two URLs and the SandboxInfo built for them.
_WireCache = tuple[int, str | None, str | None, WireDict]


@dataclass(kw_only=True)
class Sandbox(SandboxSettings):
    """One sandbox: its settings (:class:`~.settings.SandboxSettings`, declared once) and its lifecycle.

    The filesystem is built on first use (its timestamps are then those of the first use).
    ``network`` always holds an immutable :class:`NetworkConfig` (or None), so replacing it is one
    reference swap: a concurrent reader sees the old or the new policy, never a mix.
    ``ready_at`` is when a pending sandbox starts (None: not until told); ``transition_at`` is when a
    transitional status (suspending, snapshotting, or a pending resume) settles.
    ``rev`` counts the changes a rule made (:meth:`~.store.SandboxStore.changed`); ``wire_cache`` holds the
    SandboxInfo of one revision as one client origin sees it. The stored form (:meth:`dump`, :meth:`load`)
    is pydantic's serialisation of the dataclass, without the filesystem, ``rev`` and the cache.
    """

    __pydantic_config__ = {"arbitrary_types_allowed": True}  # a pydantic ConfigDict

    id: str
    owner: str
    namespace: str
    created_at: float
    filesystem: FileSystem | Callable[[], FileSystem] = field(repr=False, compare=False)
    status: str = "pending"
    pending_reason: str | None = None
    termination_reason: str | None = None
    error_details: Any = None
    terminated_at: float | None = None
    ready_at: float | None = None
    transition_at: float | None = None
    resuming: bool = False
    running_since: float | None = None
    resize: ResourceResize | None = None
    archived_at: float | None = None
    rev: int = field(default=0, compare=False)
    wire_cache: _WireCache | None = field(default=None, init=False, repr=False, compare=False)

    def timeout_deadline(self) -> float | None:
        """Return when a running sandbox's ``timeout_secs`` runs out (it then ends, or suspends when named).

        The timeout counts running time since the sandbox last started; None when it is not running or has none.
        """
        if self.status == "running" and self.timeout_secs and self.running_since is not None:
            return self.running_since + self.timeout_secs
        return None

    def built_fs(self) -> FileSystem | None:
        """Return the filesystem if it was built (None while no one has used it)."""
        current = self.filesystem
        return current if isinstance(current, FileSystem) else None

    def wire(self, *, sandbox_url: str | None, ingress_endpoint: str | None) -> WireDict:
        """Return :meth:`info`, built once per revision and origin (read-only: copy it to change it)."""
        cached = self.wire_cache
        if cached is None or cached[0] != self.rev or cached[1] != sandbox_url or cached[2] != ingress_endpoint:
            body = WireDict(self.info(sandbox_url=sandbox_url, ingress_endpoint=ingress_endpoint))
            cached = (self.rev, sandbox_url, ingress_endpoint, body)
            self.wire_cache = cached
        return cached[3]

    @property
    def fs(self) -> FileSystem:
        """Return the sandbox's filesystem, building it on first use (most sandboxes never touch it)."""
        current = self.filesystem
        if isinstance(current, FileSystem):
            return current
        with _FS_LOCK:
            if not isinstance(self.filesystem, FileSystem):
                self.filesystem = current()
            return self.filesystem

    def info(self, *, sandbox_url: str | None, ingress_endpoint: str | None) -> dict[str, Any]:
        """Return the SandboxInfo JSON the wire shows for GET, PATCH and list items (:class:`~.answers.SandboxInfo`)."""
        routable = self.status in ROUTABLE
        data: dict[str, Any] = {
            "id": self.id,
            "namespace": self.namespace,
            "status": self.status,
            "runtime": RUNTIME,
            "pool_id": None,
            "outcome": None,
            "termination_reason": self.termination_reason,
            "error_details": self.error_details,
            "pending_reason": self.pending_reason if self.status == "pending" else None,
            "created_at": ms(self.created_at),
            "terminated_at": ms(self.terminated_at),
            "ingress_endpoint": ingress_endpoint,
            "sandbox_url": sandbox_url if routable else None,
            "routing_hint": ROUTING_HINT if routable else None,
        }
        for name, key in _SHOWN:
            value = getattr(self, name)
            data[key] = value if isinstance(value, _PLAIN) else _json(value)
        if self.resize is not None:
            data["resource_resize"] = self.resize.to_json()
        if self.archived_at is not None:
            data["archived_at"] = ms(self.archived_at)
        return data

    def inherited(self) -> dict[str, Any]:
        """Return the settings a snapshot of this sandbox keeps for a restore (JSON)."""
        kept: dict[str, Any] = _adapter().dump_python(self, mode="json", include=set(INHERITED))
        return kept

    def dump(self, *, with_fs: bool = True) -> dict[str, Any]:
        """Return the record as JSON state (the filesystem included unless ``with_fs`` is false)."""
        out: dict[str, Any] = _adapter().dump_python(self, mode="json", exclude=_NOT_STORED)
        if with_fs:
            out["fs"] = self.fs.dump()
        return out

    @classmethod
    def load(cls, data: dict[str, Any], fs: FileSystem | Callable[[], FileSystem]) -> Sandbox:
        """Rebuild a record from :meth:`dump` output around an already loaded filesystem."""
        return _adapter().validate_python({**data, "filesystem": fs})


def _json(value: Any) -> Any:
    """Return a setting's JSON form: its record's own (``to_json``), else pydantic's (plain values as they are).

    The same form pydantic's serialisation of the record gives (a test holds them together); written out
    because SandboxInfo is built on the request path, where this is a quarter of pydantic's cost.
    """
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, _SEQUENCES):
        return [_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    to_json = getattr(value, "to_json", None)
    if to_json is not None:
        return to_json()
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


_PLAIN = (str, int, float, type(None))
_SHOWN = tuple(SHOWN.items())
_SEQUENCES = (list, tuple)


@dataclass
class Snapshot:
    """A checkpoint of a sandbox: its filesystem and the settings a restore inherits."""

    id: str
    owner: str
    namespace: str
    sandbox_id: str
    created_at: float
    ready_at: float
    snapshot_type: str
    config: dict[str, Any]
    fs: dict[str, Any]
    size_bytes: int

    def status_at(self, now: float) -> str:
        """Return the snapshot status at virtual time ``now``."""
        return "completed" if now >= self.ready_at else "in_progress"

    def info(self, now: float) -> dict[str, Any]:
        """Return the SnapshotInfo JSON."""
        return {
            "id": self.id,
            "namespace": self.namespace,
            "sandbox_id": self.sandbox_id,
            "status": self.status_at(now),
            "snapshot_type": self.snapshot_type,
            "base_image": self.config.get("image"),
            "size_bytes": self.size_bytes,
            "created_at": ms(self.created_at),
            "error": None,
        }

    def dump(self) -> dict[str, Any]:
        """Return the record as JSON state."""
        return {
            "id": self.id,
            "owner": self.owner,
            "namespace": self.namespace,
            "sandbox_id": self.sandbox_id,
            "created_at": self.created_at,
            "ready_at": self.ready_at,
            "snapshot_type": self.snapshot_type,
            "config": self.config,
            "fs": self.fs,
            "size_bytes": self.size_bytes,
        }

    @classmethod
    def load(cls, data: dict[str, Any]) -> Snapshot:
        """Rebuild from :meth:`dump` output."""
        return cls(
            id=str(data["id"]),
            owner=str(data["owner"]),
            namespace=str(data["namespace"]),
            sandbox_id=str(data["sandbox_id"]),
            created_at=float(data["created_at"]),
            ready_at=float(data["ready_at"]),
            snapshot_type=str(data["snapshot_type"]),
            config=dict(data["config"]),
            fs=dict(data["fs"]),
            size_bytes=int(data["size_bytes"]),
        )


@dataclass(frozen=True)
class Session:
    """A browser session (the ``tl.session_token`` cookie) of a user of one project."""

    token: str
    owner: str
    organization_id: str
    project_id: str

    def dump(self) -> dict[str, str]:
        """Return the record as JSON state."""
        return {
            "token": self.token,
            "owner": self.owner,
            "organization_id": self.organization_id,
            "project_id": self.project_id,
        }
