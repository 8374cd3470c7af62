"""The request bodies, derived from the settings (:mod:`.settings`) and validated by pydantic.

A create body takes every setting (optional, in its request type) plus ``wait`` and ``pool_id``; a PATCH body
the settings marked ``updatable``, with the rules that span fields (at least one; a resize stands alone).
:meth:`Body.given` is what a body sets, :meth:`Body.unknown` what the mock does not know (journalled). The
snapshot and detach bodies are declared here too.

Loaded by the first body :mod:`.validation` parses (its validators are built then, not when the mock starts).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model, model_validator
from pydantic.json_schema import SkipJsonSchema

from .settings import MARKERS, request_type
from .wire import Bool, Record, refuse

__all__ = [
    "Body",
    "CreateBody",
    "CreateRequest",
    "DetachFileSystem",
    "SnapshotRequest",
    "UpdateBody",
    "UpdateRequest",
]


# -- requests --------------------------------------------------------------------------------------


def _no_pools(value: Any) -> Any:
    if value is not None:
        raise refuse("not_supported", "claiming from a sandbox pool is not supported by this mock", 501)
    return value


@functools.cache
def _settings_of(body: type[BaseModel]) -> tuple[tuple[str, str | None, bool], ...]:
    """Return the settings a body class takes: (name, deprecated name, whether null clears it)."""
    return tuple((name, wire.old_name, wire.clears) for name, wire in MARKERS.items() if name in body.model_fields)


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
    for name, wire in MARKERS.items():
        if kind == "update" and not wire.updatable:
            continue
        taken = request_type(name, kind)
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
