"""The TensorLake wire records, declared once: request bodies, what a sandbox keeps, and the answers.

Each record is a pydantic class (or an annotated type) whose fields carry their rule: the type, the bounds of
:data:`LIMITS`, and a validator where the rule is more than a type (a name, a port, a policy through the
reference policy). From these declarations come

* validation: :func:`.refusals.parse` validates a body and turns the first defect into TensorLake's
  ``{"code", "message"}`` answer;
* the stored form: :class:`~.records.Sandbox` is :class:`~.settings.SandboxSettings` plus its lifecycle,
  dumped and loaded by pydantic (``--state-file``);
* the OpenAPI document: :mod:`mockserver.tensorlake.openapi` generates ``openapi.json`` from these classes.

A sandbox's settings, and the create and PATCH bodies derived from them, are declared in :mod:`.settings`
from the types and records here.

Known deviations from the real service: the upper bounds of ``LIMITS`` (timeouts, resources, GPU counts,
``wait_ms``, copies, log paging) are the mock's own choice; the real service's limits are not published.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any, ClassVar, Literal

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
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import CoreSchema, PydanticCustomError, core_schema
from typing_extensions import TypeAliasType, TypedDict

from contracts.tensorlake import NetworkConfig, PolicyError, apply_network_update

from .patterns import ALLOW_ENTRY, DENY_ENTRY
from .settings import DEFAULT_DISK_MB, GPU_MODELS, LIMITS, MANAGEMENT_PORT

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


def bounded(key: str, *, minimum: int | None = 0, positive: bool = False) -> Any:
    """Return the bounds of a number: at most its :data:`LIMITS` entry, at least ``minimum`` (or above 0)."""
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

    count: Annotated[int, bounded("gpu_count", minimum=1)]
    model: Annotated[Literal[GPU_MODELS], BeforeValidator(_gpu_model)] = "A10"  # type: ignore[valid-type]


def _no_gpus(value: list[GpuRequest]) -> bool:
    return not value


class Resources(Record):
    """The resources of a sandbox (SandboxInfo ``resources``; ``gpu_configs`` only when GPUs were asked for).

    The wire form is the current API's, ``cpus``, ``memory_mb`` and ``disk_mb``. A choice: the mock does not serve
    ``ephemeral_disk_mb``, the field older SDKs (tensorlake 0.4.x) require in a GET and the current API dropped,
    so the mock fails those SDKs as the real service does; a create's ``ephemeral_disk_mb`` is still read as
    ``disk_mb`` (:class:`CreateResources`).
    """

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


Cpus = Annotated[float, Field(allow_inf_nan=False), bounded("cpus", positive=True)]
MemoryMb = Annotated[int, bounded("memory_mb", minimum=1)]
DiskMb = Annotated[int, bounded("disk_mb", minimum=1)]


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


def unique_paths(mounts: list[FileSystemMount]) -> list[FileSystemMount]:
    """Return the mounts of one request when their paths differ (409 ``mount_path_in_use`` otherwise)."""
    paths = [m.mount_path for m in mounts]
    if len(set(paths)) != len(paths):
        raise refuse("mount_path_in_use", "file system mount paths must be unique", 409)
    return mounts


#: The mounts a create asks for: their paths must differ.
UniqueMounts = Annotated[list[FileSystemMount], AfterValidator(unique_paths)]


def _auto_resume_needs_name(value: bool, info: ValidationInfo) -> bool:
    if value is False and info.data.get("name") is None:
        raise refuse("invalid_auto_resume", "auto_resume=false requires a named sandbox")
    return value


#: A create's ``auto_resume``: false only for a named sandbox (the name is checked before it).
NamedAutoResume = Annotated[bool, Strict(), AfterValidator(_auto_resume_needs_name)]


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
