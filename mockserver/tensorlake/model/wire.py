"""The TensorLake wire records, declared once: request bodies, what a sandbox keeps, and the answers.

Each record is a pydantic class (or an annotated type) whose fields carry their rule: the type, the bounds of
:data:`LIMITS`, and a validator where the rule is more than a type (a name, a port, a policy through the
reference policy). From these declarations come

* validation: :func:`.refusals.parse` validates a body and turns the first defect into TensorLake's
  ``{"code", "message"}`` answer;
* the stored form: :class:`~.records.Sandbox` is :class:`SandboxSettings` plus its lifecycle, dumped and
  loaded by pydantic (``--state-file``);
* the OpenAPI document: :mod:`mockserver.tensorlake.openapi` generates ``openapi.json`` from these classes.

A sandbox setting is one field of :class:`SandboxSettings` with a :class:`Wire` marker: what the create
request takes (:func:`create_request` derives it), whether SandboxInfo shows it and under which key, whether
a restore from a snapshot inherits it, whether PATCH may change it. Adding a create field is adding one field
here (plus its rule where the model acts on it).

Known deviations from the real service: the upper bounds of ``LIMITS`` (timeouts, resources, GPU counts,
``wait_ms``, copies, log paging) are the mock's own choice; the real service's limits are not published.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PlainValidator,
    Strict,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import CoreSchema, PydanticCustomError, core_schema
from typing_extensions import TypeAliasType, TypedDict

from contracts.tensorlake import NetworkConfig, PolicyError, apply_network_update

from .patterns import ALLOW_ENTRY, DENY_ENTRY

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

Resolver = Callable[[str], Iterable[str]]


def refuse(code: str, message: str, status: int = 400) -> PydanticCustomError:
    """Return a rule's refusal as a pydantic error that :mod:`.refusals` answers as ``status``/``code``/``message``."""
    return PydanticCustomError(code, "{message}", {"message": message, "status": status})


# -- the rules of single values --------------------------------------------------------------------

#: White space as the served document's ``pattern: "\\S"`` means it: ECMA-262's, which JSON Schema patterns use
#: (Python's ``str.isspace`` also counts the separators U+001C to U+001F and U+0085, which ECMA-262 does not).
_ECMA_BLANK = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*")
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_ID_LIKE = re.compile(r"^[a-z0-9]{21}$")


def _not_blank(value: str, info: ValidationInfo) -> str:
    if _ECMA_BLANK.fullmatch(value):
        raise refuse("invalid_value", f"{info.field_name} must not be empty")
    return value


def _name(value: str) -> str:
    if _ECMA_BLANK.fullmatch(value):
        raise refuse("invalid_value", "name must not be empty")
    if not _NAME.match(value) or value.endswith("-"):
        raise refuse("invalid_name", f"name {value!r} must match ^[a-z][a-z0-9-]{{0,62}}$ and must not end with '-'")
    if _ID_LIKE.match(value):
        raise refuse("invalid_name", f"name {value!r} is ambiguous: 21 lowercase alphanumerics look like an id")
    return value


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse("invalid_port", f"exposed port {value!r} is not an integer")
    if not 1 <= value <= 65535:
        raise refuse("invalid_port", f"exposed port {value} is outside 1-65535")
    if value == MANAGEMENT_PORT:
        raise refuse("invalid_port", f"port {MANAGEMENT_PORT} is the management API and cannot be exposed")
    return value


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise refuse("invalid_value", "mount_path must be absolute")
    return value


def _gpu_model(value: Any) -> Any:
    if not isinstance(value, str) or value not in GPU_MODELS:
        raise refuse("invalid_gpu_model", f"unknown GPU model {value!r}")
    return value


def _policy(value: Any, info: ValidationInfo) -> NetworkConfig:
    """A ``network`` object through the reference policy (hostnames resolved when the context has a resolver)."""
    if isinstance(value, NetworkConfig):
        return value
    resolve: Resolver | None = (info.context or {}).get("resolve")
    try:
        if resolve is None:  # a stored policy: it was resolved when it was set
            return NetworkConfig.from_json(value)
        updated = apply_network_update(None, {"network": value}, resolve)
    except PolicyError as exc:
        raise refuse(exc.code, str(exc)) from exc
    assert updated is not None  # a value (not null) replaces the policy
    return updated


def _sorted_ports(ports: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(set(ports)))


def _bounded(key: str, *, minimum: int | None = 0, positive: bool = False) -> Any:
    bounds: dict[str, Any] = {"le": LIMITS[key]}
    if positive:
        bounds["gt"] = 0
    elif minimum is not None:
        bounds["ge"] = minimum
    return Field(**bounds)


Bool = Annotated[bool, Strict()]
Int = Annotated[int, Strict()]
Str = Annotated[str, Strict()]


#: The JSON Schema of a value that only states, not enforces (the rule is the validator beside it).
def _states(**schema: Any) -> Any:
    return Field(json_schema_extra=schema)


NonBlank = Annotated[str, Strict(), AfterValidator(_not_blank), _states(minLength=1, pattern=r"\S")]
SandboxName = TypeAliasType(
    "SandboxName",
    Annotated[
        str,
        Strict(),
        AfterValidator(_name),
        WithJsonSchema(
            {
                "type": "string",
                "pattern": "^(?![a-z0-9]{21}$)[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$",
                "description": "a DNS label that does not look like a sandbox id (21 lowercase alphanumerics)",
            }
        ),
    ],
)
Port = TypeAliasType(
    "Port",
    Annotated[
        int,
        PlainValidator(_port),
        WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 65535, "not": {"enum": [MANAGEMENT_PORT]}}),
    ],
)
Ports = Annotated[tuple[Port, ...], Field(strict=False), AfterValidator(_sorted_ports)]
AbsolutePath = Annotated[str, Strict(), AfterValidator(_not_blank), AfterValidator(_absolute), _states(pattern="^/")]
EpochMs = Annotated[int, Field(description="epoch milliseconds")]


class Record(BaseModel):
    """A wire record: fields are read as declared (strictly typed), records are immutable.

    Validators are built on first use (``defer_build``): importing the declarations costs little.
    """

    model_config = ConfigDict(strict=True, frozen=True, defer_build=True)


# -- resources -------------------------------------------------------------------------------------


class GpuRequest(Record):
    """One GPU request: a count of one model (A10 unless named)."""

    count: Annotated[int, _bounded("gpu_count", minimum=1)]
    model: Annotated[Literal[GPU_MODELS], BeforeValidator(_gpu_model)] = "A10"  # type: ignore[valid-type]


def _no_gpus(value: list[GpuRequest]) -> bool:
    return not value


class Resources(Record):
    """The resources of a sandbox (SandboxInfo ``resources``; ``gpu_configs`` only when GPUs were asked for)."""

    cpus: float
    memory_mb: int
    disk_mb: int
    gpu_configs: list[GpuRequest] = Field(default_factory=list, exclude_if=_no_gpus)

    def to_json(self) -> dict[str, Any]:
        """Return the wire form (also the stored one)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: Any) -> Resources:
        """Rebuild from :meth:`to_json` output."""
        return cls.model_validate(data, strict=False)


@functools.cache
def default_resources() -> Resources:
    """Return the resources of a create that asks for none (made on first use, as the validators are)."""
    return Resources(cpus=1.0, memory_mb=1024, disk_mb=DEFAULT_DISK_MB)


Cpus = Annotated[float, Field(allow_inf_nan=False), _bounded("cpus", positive=True)]
MemoryMb = Annotated[int, _bounded("memory_mb", minimum=1)]
DiskMb = Annotated[int, _bounded("disk_mb", minimum=1)]


class Partial:
    """A setting a request gives in part: applied over the value kept (or inherited) so far."""

    def over(self, base: Any) -> Any:
        """Return the whole value: this part over ``base`` (None: the default)."""
        raise NotImplementedError


class CreateResources(Record, Partial):
    """The resources a create asks for; what it leaves out comes from the snapshot or the defaults."""

    model_config = ConfigDict(extra="allow")

    cpus: Cpus | None = None
    memory_mb: MemoryMb | None = None
    disk_mb: DiskMb | None = None
    ephemeral_disk_mb: Annotated[DiskMb | None, Field(json_schema_extra={"deprecated": True})] = None
    gpus: list[GpuRequest] | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_disk_name(cls, data: Any) -> Any:
        """Read ``ephemeral_disk_mb`` as ``disk_mb`` when that is not sent (and ignore it when it is)."""
        if isinstance(data, dict) and "ephemeral_disk_mb" in data:
            data = dict(data)
            disk = data.pop("ephemeral_disk_mb")
            data.setdefault("disk_mb", disk)
        return data

    def over(self, base: Resources | None) -> Resources:
        """Return these requests applied over ``base`` (the defaults when None)."""
        start = base or default_resources()
        return Resources(
            cpus=start.cpus if self.cpus is None else self.cpus,
            memory_mb=start.memory_mb if self.memory_mb is None else self.memory_mb,
            disk_mb=start.disk_mb if self.disk_mb is None else self.disk_mb,
            gpu_configs=start.gpu_configs if self.gpus is None else self.gpus,
        )


def _whole_cpus(value: float) -> float:
    if not value.is_integer():
        raise refuse("invalid_value", "resources.cpus must be a whole number of vCPUs")
    return value


#: The default of a field that must not be null when given (defaults are not validated; requests are).
_NOT_ASKED: Any = None


class ResizeResources(Record):
    """A live resize: at least one of cpus (whole vCPUs), memory_mb, disk_mb."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    # A null is not a dimension (400): the defaults only stand for "not asked for" (see :meth:`requested`).
    cpus: Annotated[
        Cpus,
        AfterValidator(_whole_cpus),
        WithJsonSchema({"type": "number", "minimum": 1, "multipleOf": 1, "maximum": LIMITS["cpus"]}),
    ] = _NOT_ASKED
    memory_mb: MemoryMb = _NOT_ASKED
    disk_mb: DiskMb = _NOT_ASKED

    @model_validator(mode="before")
    @classmethod
    def _only_dimensions(cls, data: Any) -> Any:
        if isinstance(data, dict):
            extra = sorted(set(data) - set(cls.model_fields))
            if extra:
                raise refuse("unknown_field", f"resources cannot resize {', '.join(extra)}")
            if not data:
                raise refuse("empty_update", "resources must name at least one of cpus, memory_mb, disk_mb")
        return data

    def requested(self) -> dict[str, Any]:
        """Return the dimensions asked for."""
        return self.model_dump(exclude_unset=True)


class ResourceResize(Record):
    """The latest live resize of a sandbox (SandboxInfo ``resource_resize``); ``done_at`` is kept, not shown."""

    model_config = ConfigDict(frozen=False)

    generation: Annotated[int, Field(ge=1)]
    requested: Resources
    status: Literal["pending", "succeeded", "failed"]
    error_message: str | SkipJsonSchema[None] = Field(default=None, exclude_if=lambda v: v is None)
    done_at: SkipJsonSchema[float] = 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the wire form."""
        return self.model_dump(mode="json", exclude={"done_at"})

    def dump(self) -> dict[str, Any]:
        """Return the record as JSON state (with ``done_at``)."""
        return self.model_dump(mode="json")

    @classmethod
    def load(cls, data: Any) -> ResourceResize:
        """Rebuild from :meth:`dump` output."""
        return cls.model_validate(data, strict=False)


# -- file systems and network policies -------------------------------------------------------------


def _flag(value: bool | None) -> bool | None:
    return True if value else None


def _absent(value: object) -> bool:
    return value is None


class FileSystemMount(Record):
    """A file-system mount of a sandbox; false flags and absent ids are left out of its JSON."""

    NOT_AN_OBJECT: ClassVar[str] = "a file system mount must be an object"

    model_config = ConfigDict(extra="forbid")

    file_system_id: NonBlank
    mount_path: AbsolutePath
    read_only: Annotated[Bool | None, AfterValidator(_flag)] = Field(default=None, exclude_if=_absent)
    prefetch: Annotated[Bool | None, AfterValidator(_flag)] = Field(default=None, exclude_if=_absent)
    snapshot_id: NonBlank | None = Field(default=None, exclude_if=_absent)
    owner: NonBlank | None = Field(default=None, exclude_if=_absent)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise refuse("unknown_field", f"unknown file system mount key(s): {', '.join(unknown)}")
        return data

    def to_json(self) -> dict[str, Any]:
        """Return the wire form."""
        return self.model_dump(mode="json")


def _unique_paths(mounts: list[FileSystemMount]) -> list[FileSystemMount]:
    paths = [m.mount_path for m in mounts]
    if len(set(paths)) != len(paths):
        raise refuse("mount_path_in_use", "file system mount paths must be unique", 409)
    return mounts


class NetworkConfigBody(BaseModel):
    """A ``network`` object as a request writes it (its rules are the reference policy's)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    allow_internet_access: bool = True
    allow_out: list[
        Annotated[
            str,
            _states(
                pattern=ALLOW_ENTRY,
                description="a domain, a *.wildcard domain, an IPv4 address or an IPv4 CIDR (no host bits set)",
            ),
        ]
    ] = []
    deny_out: list[
        Annotated[
            str,
            _states(
                pattern=DENY_ENTRY,
                description="a domain, an IPv4 address or an IPv4 CIDR (no host bits set); no wildcards",
            ),
        ]
    ] = []


class NetworkPolicy(TypedDict):
    """The policy SandboxInfo shows (``network_policy``): all three keys."""

    allow_internet_access: bool
    allow_out: list[str]
    deny_out: list[str]


class _PolicyType:
    """How pydantic reads, writes and describes a policy: the reference policy's own object, JSON both ways."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.with_info_plain_validator_function(
            _policy,
            json_schema_input_schema=handler.generate_schema(NetworkConfigBody),
            serialization=core_schema.plain_serializer_function_ser_schema(
                NetworkConfig.to_json, return_schema=handler.generate_schema(NetworkPolicy)
            ),
        )


Network = Annotated[NetworkConfig, _PolicyType()]


# -- sandbox settings: declared once ---------------------------------------------------------------


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
        Annotated[int, _bounded("timeout_secs")] | None, Wire(shown="timeout_secs", inherit=True)
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
        Wire(request=Annotated[list[FileSystemMount], AfterValidator(_unique_paths)], shown="file_systems"),
    ] = field(default_factory=list)
    max_pending_secs: Annotated[Annotated[int, _bounded("max_pending_secs", minimum=1)] | None, Wire()] = None
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
