"""A sandbox's settings, declared once: one field each, its rule in its type, its wire in its :class:`Wire` marker.

A setting's type carries its rule (bounds, a validator from :mod:`.wire`), its default is a new sandbox's, and
its marker says how it shows on the wire: what the create request takes, whether SandboxInfo shows it (under
which key), whether a restore from a snapshot inherits it, whether PATCH may change it. From it follow

* the create and PATCH bodies (:mod:`.bodies` derives them);
* the record: :class:`~.records.Sandbox` is these settings plus its lifecycle, stored by pydantic;
* SandboxInfo (:meth:`~.records.Sandbox.info`) and a snapshot's kept settings (:data:`SHOWN`, :data:`INHERITED`);
* the OpenAPI document (:mod:`mockserver.tensorlake.openapi`).

Adding a create field is adding one field here; what the model does with it beyond keeping and showing it is
the rule written where the model acts.

This module loads no pydantic: the types are named here and read (:func:`kept_types`) where a body is first
validated or a record first stored, so importing the mock costs no validator.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

if TYPE_CHECKING:
    from .wire import Bool, FileSystemMount, Network, NonBlank, Ports, Resources, SandboxName, Str, bounded

__all__ = [
    "DEFAULT_DISK_MB",
    "GPU_MODELS",
    "INHERITED",
    "LIMITS",
    "MANAGEMENT_PORT",
    "MARKERS",
    "SHOWN",
    "SNAPSHOT_STATUSES",
    "STATUSES",
    "SandboxSettings",
    "Wire",
    "kept_types",
]

MANAGEMENT_PORT = 9501
DEFAULT_DISK_MB = 10_240
GPU_MODELS = ("A10", "H100", "T4", "A6000", "A100-40GB", "A100-80GB", "RTX-PRO-6000", "L40")
STATUSES = ("pending", "running", "snapshotting", "suspending", "suspended", "terminated", "timeout", "failed")
SNAPSHOT_STATUSES = ("in_progress", "local_ready", "completed", "failed", "deleting", "replicating")

#: Upper bounds of the numbers a request may carry (the OpenAPI document states the same ``maximum``).
LIMITS: dict[str, int] = {
    "timeout_secs": 30 * 86_400,
    "max_pending_secs": 86_400,
    "cpus": 256,
    "memory_mb": 1_048_576,
    "disk_mb": 16_777_216,
    "gpu_count": 16,
    "wait_ms": 600_000,
    "times": 32,
    "head": 1_000_000,
    "tail": 1_000_000,
    "limit": 1_000,
}


@dataclass(frozen=True)
class Wire:
    """How a sandbox setting shows on the wire (the marker of a :class:`SandboxSettings` field).

    ``request`` names the type (in :mod:`.wire`) a create takes when it differs from the kept one, ``update`` the
    one a PATCH takes; ``shown`` is the SandboxInfo key (None: not shown); ``inherit``: a restore from a snapshot
    inherits it when the create leaves it out; ``updatable``: PATCH may change it; ``clears``: an explicit
    ``null`` sets the default instead of meaning "not given"; ``old_name``: a deprecated request key read when
    this one is not given (checked right after it).
    """

    request: str | None = None
    update: str | None = None
    shown: str | None = None
    inherit: bool = False
    updatable: bool = False
    clears: bool = False
    old_name: str | None = None


def _wire(**marker: Any) -> dict[str, Wire]:
    return {"wire": Wire(**marker)}


@functools.cache
def _default_resources() -> Resources:
    from .wire import default_resources

    return default_resources()


@dataclass(kw_only=True)
class SandboxSettings:
    """What a create sets on a sandbox.

    The order is the order a create body is checked in (the first defect is the one answered).
    """

    name: SandboxName | None = field(default=None, metadata=_wire(shown="name", updatable=True))
    image: NonBlank | None = field(default=None, metadata=_wire(shown="image", inherit=True))
    resources: Resources = field(
        default_factory=_default_resources,
        metadata=_wire(
            request="CreateResources", update="ResizeResources", shown="resources", inherit=True, updatable=True
        ),
    )
    timeout_secs: Annotated[int, bounded("timeout_secs")] | None = field(
        default=None, metadata=_wire(shown="timeout_secs", inherit=True)
    )
    entrypoint: list[Str] | None = field(default=None, metadata=_wire(shown="entrypoint", inherit=True))
    network: Network | None = field(
        default=None, metadata=_wire(shown="network_policy", inherit=True, updatable=True, clears=True)
    )
    snapshot_id: NonBlank | None = field(default=None, metadata=_wire())
    allow_unauthenticated_access: Bool = field(
        default=False,
        metadata=_wire(
            shown="allow_unauthenticated_access",
            inherit=True,
            updatable=True,
            old_name="allow_unauthenticated_proxy_access",
        ),
    )
    exposed_ports: Ports = field(default=(), metadata=_wire(shown="exposed_ports", inherit=True, updatable=True))
    auto_resume: Bool = field(
        default=True, metadata=_wire(request="NamedAutoResume", shown="auto_resume", updatable=True)
    )
    file_systems: list[FileSystemMount] = field(
        default_factory=list, metadata=_wire(request="UniqueMounts", shown="file_systems")
    )
    max_pending_secs: Annotated[int, bounded("max_pending_secs", minimum=1)] | None = field(
        default=None, metadata=_wire()
    )
    secret_names: list[Str] = field(default_factory=list, metadata=_wire())
    template_id: NonBlank | None = field(default=None, metadata=_wire())


#: Every setting's marker, in declared order.
MARKERS: dict[str, Wire] = {item.name: item.metadata["wire"] for item in fields(SandboxSettings)}
#: The settings a restore from a snapshot inherits (a snapshot keeps them).
INHERITED: tuple[str, ...] = tuple(name for name, wire in MARKERS.items() if wire.inherit)
#: SandboxInfo's key of each shown setting.
SHOWN: dict[str, str] = {name: wire.shown for name, wire in MARKERS.items() if wire.shown is not None}


@functools.cache
def kept_types() -> dict[str, Any]:
    """Return each setting's declared type, in declared order (read on first use: the types are pydantic's)."""
    from . import wire

    hints = get_type_hints(SandboxSettings, globalns={**vars(wire), **globals()}, include_extras=True)
    return {name: hints[name] for name in MARKERS}


def request_type(name: str, kind: str) -> Any:
    """Return the type a create (``kind="create"``) or a PATCH (``"update"``) takes for setting ``name``."""
    from . import wire

    marker = MARKERS[name]
    named = marker.update if kind == "update" else marker.request
    return getattr(wire, named) if named is not None else kept_types()[name]
