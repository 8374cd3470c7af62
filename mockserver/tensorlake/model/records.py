"""State records of the TensorLake mock (sandboxes, snapshots, sessions) and their JSON forms.

Records hold plain data only; the rules that change them live in :mod:`.state`. Times are
virtual epoch seconds; the wire shows them as epoch milliseconds.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from contracts.tensorlake import NetworkConfig
from mockserver.core.wire import WireDict
from mockserver.sandbox.filesystem import FileSystem

Status = Literal["pending", "running", "snapshotting", "suspending", "suspended", "terminated", "timeout", "failed"]
STATUSES: tuple[str, ...] = (
    "pending",
    "running",
    "snapshotting",
    "suspending",
    "suspended",
    "terminated",
    "timeout",
    "failed",
)
#: Statuses in which the sandbox has a management URL.
ROUTABLE: frozenset[str] = frozenset({"running", "snapshotting", "suspending", "suspended"})
DEFAULT_DISK_MB = 10_240
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


@dataclass
class Resources:
    """The resources of a sandbox.

    The wire form is the current API's, ``cpus``, ``memory_mb`` and ``disk_mb``. A choice: the mock does not serve
    ``ephemeral_disk_mb``, the field older SDKs (tensorlake 0.4.x) require in a GET and the current API dropped,
    so the mock fails those SDKs as the real service does; a create's ``ephemeral_disk_mb`` is still read as
    ``disk_mb`` (:func:`..validate.parse_resources`).
    """

    cpus: float = 1.0
    memory_mb: int = 1024
    disk_mb: int = DEFAULT_DISK_MB
    gpus: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Return the wire form (``gpu_configs`` only when GPUs were asked for)."""
        data: dict[str, Any] = {"cpus": self.cpus, "memory_mb": self.memory_mb, "disk_mb": self.disk_mb}
        if self.gpus:
            data["gpu_configs"] = [dict(g) for g in self.gpus]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Resources:
        """Rebuild from :meth:`to_json` output."""
        return cls(float(data["cpus"]), int(data["memory_mb"]), int(data["disk_mb"]), list(data.get("gpu_configs", [])))


@dataclass
class Resize:
    """The latest live resize of a sandbox."""

    generation: int
    requested: Resources
    status: str
    done_at: float
    error_message: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the wire form."""
        data: dict[str, Any] = {
            "generation": self.generation,
            "requested": self.requested.to_json(),
            "status": self.status,
        }
        if self.error_message is not None:
            data["error_message"] = self.error_message
        return data

    def dump(self) -> dict[str, Any]:
        """Return the record as JSON state."""
        return {**self.to_json(), "done_at": self.done_at}

    @classmethod
    def load(cls, data: dict[str, Any]) -> Resize:
        """Rebuild from :meth:`dump` output."""
        return cls(
            int(data["generation"]),
            Resources.from_json(data["requested"]),
            str(data["status"]),
            float(data["done_at"]),
            data.get("error_message"),
        )


@dataclass
class Sandbox:
    """One sandbox and everything the mock knows about it.

    The filesystem is built on first use (its timestamps are then those of the first use).
    ``network`` always holds an immutable :class:`NetworkConfig` (or None), so replacing it is one
    reference swap: a concurrent reader sees the old or the new policy, never a mix.
    ``ready_at`` is when a pending sandbox starts (None: not until told); ``transition_at`` is when a
    transitional status (suspending, snapshotting, or a pending resume) settles.
    ``rev`` counts the changes a rule made (:meth:`~.store.SandboxStore.changed`); ``wire_cache`` holds the
    SandboxInfo of one revision as one client origin sees it.
    """

    id: str
    owner: str
    namespace: str
    created_at: float
    filesystem: FileSystem | Callable[[], FileSystem] = field(repr=False, compare=False)
    status: str = "pending"
    name: str | None = None
    image: str | None = None
    resources: Resources = field(default_factory=Resources)
    timeout_secs: int | None = None
    entrypoint: list[str] | None = None
    network: NetworkConfig | None = None
    allow_unauthenticated_access: bool = False
    exposed_ports: tuple[int, ...] = ()
    auto_resume: bool = True
    pending_reason: str | None = None
    termination_reason: str | None = None
    error_details: Any = None
    terminated_at: float | None = None
    file_systems: list[dict[str, Any]] = field(default_factory=list)
    snapshot_id: str | None = None
    secret_names: list[str] = field(default_factory=list)
    template_id: str | None = None
    max_pending_secs: int | None = None
    ready_at: float | None = None
    transition_at: float | None = None
    resuming: bool = False
    running_since: float | None = None
    resize: Resize | None = None
    archived_at: float | None = None
    rev: int = field(default=0, compare=False)
    wire_cache: tuple[int, str | None, str | None, WireDict] | None = field(
        default=None, init=False, repr=False, compare=False
    )

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
        """Return the SandboxInfo JSON the wire shows for GET, PATCH and list items."""
        routable = self.status in ROUTABLE
        data: dict[str, Any] = {
            "id": self.id,
            "namespace": self.namespace,
            "status": self.status,
            "image": self.image,
            "runtime": RUNTIME,
            "resources": self.resources.to_json(),
            "timeout_secs": self.timeout_secs,
            "entrypoint": self.entrypoint,
            "network_policy": None if self.network is None else self.network.to_json(),
            "pool_id": None,
            "outcome": None,
            "termination_reason": self.termination_reason,
            "error_details": self.error_details,
            "pending_reason": self.pending_reason if self.status == "pending" else None,
            "created_at": ms(self.created_at),
            "terminated_at": ms(self.terminated_at),
            "name": self.name,
            "allow_unauthenticated_access": self.allow_unauthenticated_access,
            "exposed_ports": list(self.exposed_ports),
            "ingress_endpoint": ingress_endpoint,
            "sandbox_url": sandbox_url if routable else None,
            "routing_hint": ROUTING_HINT if routable else None,
            "file_systems": [dict(m) for m in self.file_systems],
            "auto_resume": self.auto_resume,
        }
        if self.resize is not None:
            data["resource_resize"] = self.resize.to_json()
        if self.archived_at is not None:
            data["archived_at"] = ms(self.archived_at)
        return data

    def dump(self, *, with_fs: bool = True) -> dict[str, Any]:
        """Return the record as JSON state (the filesystem included unless ``with_fs`` is false)."""
        out = {
            "id": self.id,
            "owner": self.owner,
            "namespace": self.namespace,
            "created_at": self.created_at,
            "status": self.status,
            "name": self.name,
            "image": self.image,
            "resources": self.resources.to_json(),
            "timeout_secs": self.timeout_secs,
            "entrypoint": self.entrypoint,
            "network": None if self.network is None else self.network.to_json(),
            "allow_unauthenticated_access": self.allow_unauthenticated_access,
            "exposed_ports": list(self.exposed_ports),
            "auto_resume": self.auto_resume,
            "pending_reason": self.pending_reason,
            "termination_reason": self.termination_reason,
            "error_details": self.error_details,
            "terminated_at": self.terminated_at,
            "file_systems": [dict(m) for m in self.file_systems],
            "snapshot_id": self.snapshot_id,
            "secret_names": list(self.secret_names),
            "template_id": self.template_id,
            "max_pending_secs": self.max_pending_secs,
            "ready_at": self.ready_at,
            "transition_at": self.transition_at,
            "resuming": self.resuming,
            "running_since": self.running_since,
            "resize": None if self.resize is None else self.resize.dump(),
            "archived_at": self.archived_at,
        }
        if with_fs:
            out["fs"] = self.fs.dump()
        return out

    @classmethod
    def load(cls, data: dict[str, Any], fs: FileSystem | Callable[[], FileSystem]) -> Sandbox:
        """Rebuild a record from :meth:`dump` output around an already loaded filesystem."""
        network = data.get("network")
        resize = data.get("resize")
        return cls(
            id=str(data["id"]),
            owner=str(data["owner"]),
            namespace=str(data["namespace"]),
            created_at=float(data["created_at"]),
            filesystem=fs,
            status=str(data["status"]),
            name=data.get("name"),
            image=data.get("image"),
            resources=Resources.from_json(data["resources"]),
            timeout_secs=data.get("timeout_secs"),
            entrypoint=data.get("entrypoint"),
            network=None if network is None else NetworkConfig.from_json(network),
            allow_unauthenticated_access=bool(data.get("allow_unauthenticated_access", False)),
            exposed_ports=tuple(int(p) for p in data.get("exposed_ports", [])),
            auto_resume=bool(data.get("auto_resume", True)),
            pending_reason=data.get("pending_reason"),
            termination_reason=data.get("termination_reason"),
            error_details=data.get("error_details"),
            terminated_at=data.get("terminated_at"),
            file_systems=list(data.get("file_systems", [])),
            snapshot_id=data.get("snapshot_id"),
            secret_names=list(data.get("secret_names", [])),
            template_id=data.get("template_id"),
            max_pending_secs=data.get("max_pending_secs"),
            ready_at=data.get("ready_at"),
            transition_at=data.get("transition_at"),
            resuming=bool(data.get("resuming", False)),
            running_since=data.get("running_since"),
            resize=None if resize is None else Resize.load(resize),
            archived_at=data.get("archived_at"),
        )


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
