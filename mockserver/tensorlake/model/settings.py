"""A sandbox's settings, declared once, and the request bodies derived from them.

A setting is one field of :class:`SandboxSettings`: its type carries its rule (bounds, a validator from
:mod:`.wire`), its default is a new sandbox's, and its :class:`Wire` marker says how it shows on the wire: what
the create request takes, whether SandboxInfo shows it (under which key), whether a restore from a snapshot
inherits it, whether PATCH may change it. From it follow

* the create and PATCH bodies (:data:`CreateRequest`, :data:`UpdateRequest`, pydantic models derived here);
* the record: :class:`~.records.Sandbox` is these settings plus its lifecycle, stored by pydantic;
* SandboxInfo (:meth:`~.records.Sandbox.info`) and a snapshot's kept settings (:data:`SHOWN`, :data:`INHERITED`);
* the OpenAPI document (:mod:`mockserver.tensorlake.openapi`).

Adding a create field is adding one field here; what the model does with it beyond keeping and showing it is
the rule written where the model acts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, TypeVar, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    create_model,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from .wire import (
    Bool,
    CreateResources,
    FileSystemMount,
    Network,
    NonBlank,
    Ports,
    Record,
    ResizeResources,
    Resources,
    SandboxName,
    Str,
    bounded,
    default_resources,
    refuse,
    unique_paths,
)


@dataclass(frozen=True)
class Wire:
    """How a sandbox setting shows on the wire (the marker of a :class:`SandboxSettings` field).

    ``request`` is the type a create (and ``update`` a PATCH) takes when it differs from the kept one;
    ``shown`` is the SandboxInfo key (None: not shown); ``inherit``: a restore from a snapshot inherits it when
    the create leaves it out; ``updatable``: PATCH may change it; ``clears``: an explicit ``null`` sets the
    default instead of meaning "not given"; ``old_name``: a deprecated request key read when this one is not
    given (checked right after it).
    """

    request: Any = None
    old_name: str | None = None
    update: Any = None
    shown: str | None = None
    inherit: bool = False
    updatable: bool = False
    clears: bool = False


def _auto_resume_needs_name(value: bool, info: ValidationInfo) -> bool:
    if value is False and info.data.get("name") is None:
        raise refuse("invalid_auto_resume", "auto_resume=false requires a named sandbox")
    return value


@dataclass(kw_only=True)
class SandboxSettings:
    """What a create sets on a sandbox: one field each, its rule in its type and its wire in its :class:`Wire`.

    The order is the order a create body is checked in (the first defect is the one answered).
    """

    name: Annotated[SandboxName | None, Wire(shown="name", updatable=True)] = None
    image: Annotated[NonBlank | None, Wire(shown="image", inherit=True)] = None
    resources: Annotated[
        Resources,
        Wire(request=CreateResources, update=ResizeResources, shown="resources", inherit=True, updatable=True),
    ] = field(default_factory=default_resources)
    timeout_secs: Annotated[
        Annotated[int, bounded("timeout_secs")] | None, Wire(shown="timeout_secs", inherit=True)
    ] = None
    entrypoint: Annotated[list[Str] | None, Wire(shown="entrypoint", inherit=True)] = None
    network: Annotated[Network | None, Wire(shown="network_policy", inherit=True, updatable=True, clears=True)] = None
    snapshot_id: Annotated[NonBlank | None, Wire()] = None
    allow_unauthenticated_access: Annotated[
        Bool,
        Wire(
            shown="allow_unauthenticated_access",
            inherit=True,
            updatable=True,
            old_name="allow_unauthenticated_proxy_access",
        ),
    ] = False
    exposed_ports: Annotated[Ports, Wire(shown="exposed_ports", inherit=True, updatable=True)] = ()
    auto_resume: Annotated[
        Bool,
        Wire(
            request=Annotated[bool, Strict(), AfterValidator(_auto_resume_needs_name)],
            shown="auto_resume",
            updatable=True,
        ),
    ] = True
    file_systems: Annotated[
        list[FileSystemMount],
        Wire(request=Annotated[list[FileSystemMount], AfterValidator(unique_paths)], shown="file_systems"),
    ] = field(default_factory=list)
    max_pending_secs: Annotated[Annotated[int, bounded("max_pending_secs", minimum=1)] | None, Wire()] = None
    secret_names: Annotated[list[Str], Wire()] = field(default_factory=list)
    template_id: Annotated[NonBlank | None, Wire()] = None


def _wire_fields() -> dict[str, tuple[Any, Wire]]:
    """Return each setting's kept type (its :class:`Wire` marker taken off) and marker, in declared order."""
    hints = get_type_hints(SandboxSettings, include_extras=True)
    found: dict[str, tuple[Any, Wire]] = {}
    for item in fields(SandboxSettings):
        hint = hints[item.name]
        marker = next(m for m in hint.__metadata__ if isinstance(m, Wire))
        rest = tuple(m for m in hint.__metadata__ if not isinstance(m, Wire))
        found[item.name] = (Annotated[(hint.__origin__, *rest)] if rest else hint.__origin__, marker)
    return found


#: Every sandbox setting: name -> (kept type, marker).
SETTINGS: dict[str, tuple[Any, Wire]] = _wire_fields()
#: The settings a restore from a snapshot inherits (a snapshot keeps them).
INHERITED: tuple[str, ...] = tuple(name for name, (_, wire) in SETTINGS.items() if wire.inherit)
#: SandboxInfo's key of each shown setting.
SHOWN: dict[str, str] = {name: wire.shown for name, (_, wire) in SETTINGS.items() if wire.shown is not None}


# -- requests --------------------------------------------------------------------------------------


def _no_pools(value: Any) -> Any:
    if value is not None:
        raise refuse("not_supported", "claiming from a sandbox pool is not supported by this mock", 501)
    return value


@functools.cache
def _settings_of(body: type[BaseModel]) -> tuple[tuple[str, str | None, bool], ...]:
    """Return the settings a body class takes: (name, deprecated name, whether null clears it)."""
    return tuple(
        (name, wire.old_name, wire.clears) for name, (_, wire) in SETTINGS.items() if name in body.model_fields
    )


class Body(Record):
    """A request body: unknown keys are kept (and journalled); the settings it names are :meth:`given`."""

    model_config = ConfigDict(extra="allow")

    def given(self) -> dict[str, Any]:
        """Return the settings this body sets (``null`` is "not given" unless the setting ``clears``)."""
        found: dict[str, Any] = {}
        for name, old_name, clears in _settings_of(type(self)):
            value = getattr(self, name)
            if value is None and old_name is not None:
                value = getattr(self, old_name)
            if value is not None or (clears and name in self.model_fields_set):
                found[name] = value
        return found

    def unknown(self) -> list[str]:
        """Return the keys the mock does not know, nested ones as ``resources.key``."""
        keys = sorted(self.model_extra or ())
        resources = getattr(self, "resources", None)
        if isinstance(resources, BaseModel) and resources.model_extra:
            keys += [f"resources.{key}" for key in resources.model_extra]
        return keys


class CreateBody(Body):
    """The fields only a create has (the settings are added by :func:`_request`)."""

    model_config = ConfigDict(
        json_schema_extra={
            "not": {
                "required": ["auto_resume"],
                "properties": {"auto_resume": {"enum": [False]}, "name": {"not": {"type": "string"}}},
            },
            "description": "auto_resume=false needs a name",
        },
    )

    pool_id: SkipJsonSchema[Annotated[Any, AfterValidator(_no_pools)]] = None
    wait: Bool | None = None


def _update_rules(schema: dict[str, Any]) -> None:
    """State PATCH's rules that span fields: any one field makes an update; a resize stands alone."""
    schema["anyOf"] = [{"required": [key]} for key in schema.get("properties", {})]
    schema["not"] = {"required": ["resources"], "properties": {"resources": {"type": "object"}}, "minProperties": 2}
    schema["description"] = "at least one field; a resources resize stands alone"


class UpdateBody(Body):
    """The fields only a PATCH has; the rules that span fields (at least one; a resize stands alone)."""

    model_config = ConfigDict(json_schema_extra=lambda schema, _: _update_rules(schema))

    @model_validator(mode="before")
    @classmethod
    def _not_empty(cls, data: Any) -> Any:
        if isinstance(data, dict) and not any(key in cls.model_fields for key in data):
            raise refuse("empty_update", "at least one sandbox update field must be provided")
        return data

    @model_validator(mode="after")
    def _resize_alone(self) -> UpdateBody:
        if (
            getattr(self, "resources", None) is not None
            and len(self.model_fields_set | set(self.model_extra or ())) > 1
        ):
            raise refuse("invalid_update", "a resource resize cannot be combined with other update fields")
        return self


B = TypeVar("B", bound="Body")


def _request(title: str, base: type[B], kind: Literal["create", "update"]) -> type[B]:
    """Derive a request body from the settings: each one it may set, optional, in its request type."""
    extra: dict[str, Any] = {}
    for name, (kept, wire) in SETTINGS.items():
        if kind == "update" and not wire.updatable:
            continue
        taken = (wire.update if kind == "update" else wire.request) or kept
        described: dict[str, Any] = {}
        if kind == "update" and wire.clears:
            described["description"] = "absent: keep; object: replace; null: clear"
        extra[name] = (taken | None, Field(default=None, **described))
        if wire.old_name is not None:
            extra[wire.old_name] = (taken | None, Field(default=None, json_schema_extra={"deprecated": True}))
    model: type[B] = create_model(title, __base__=base, **extra)
    return model


CreateRequest = _request("CreateSandboxRequest", CreateBody, "create")
UpdateRequest = _request("UpdateSandboxRequest", UpdateBody, "update")


class SnapshotRequest(Record):
    """A snapshot body: the snapshot's type (memory unless named)."""

    snapshot_type: Annotated[
        Literal["memory", "filesystem"] | None,
        BeforeValidator(lambda v: _snapshot_type(v)),
    ] = None


def _snapshot_type(value: Any) -> Any:
    if value is not None and value not in ("memory", "filesystem"):
        raise refuse("invalid_snapshot_type", "snapshot_type must be 'memory' or 'filesystem'")
    return value


class DetachFileSystem(Record):
    """The body of a detach: the mount path to free."""

    mount_path: str

    @model_validator(mode="before")
    @classmethod
    def _a_path(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("mount_path"), str):
            raise refuse("invalid_type", "mount_path must be a string")
        return data
