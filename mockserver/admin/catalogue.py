"""Named fault catalogues over HTTP: describe a provider's named faults and arm one from a JSON object.

A provider's catalogue is a class whose fault methods are marked with :func:`named_fault`. The mark holds
what a signature cannot say (what the SDKs do on the fault, what each parameter means); the parameters'
names, types and defaults are read from the method's signature, so the Python call and the HTTP call are
the same thing. :func:`catalogue_of` collects the marked methods of a catalogue object, :func:`describe`
renders them (``GET /_mock/faults/catalogue``) and :func:`arm` checks a JSON object of parameters and calls
the method (``POST /_mock/faults/catalogue/{name}``). A refused call arms nothing: 400 ``unknown_fault`` or
``invalid_fault_params`` before the method runs, or the method's own :class:`ApiError`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from mockserver.core.errors import ApiError
from mockserver.core.faults import FaultRule

__all__ = ["FaultParam", "NamedFault", "arm", "catalogue_of", "describe", "named_fault"]

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__sandproof_fault__"
#: Set while a named fault runs, so a fault that calls another is named after the one that was asked for.
_ARMING: contextvars.ContextVar[bool] = contextvars.ContextVar("sandproof_arming_fault", default=False)
_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object"}


@dataclass(frozen=True)
class FaultParam:
    """One parameter of a named fault: its JSON type, default (``required`` when it has none) and meaning."""

    name: str
    type: str
    default: Any
    description: str
    required: bool = False
    nullable: bool = False

    def to_json(self) -> dict[str, Any]:
        """Return the parameter as the catalogue lists it."""
        return {
            "name": self.name,
            "type": self.type,
            "default": self.default,
            "description": self.description,
            "required": self.required,
            "nullable": self.nullable,
        }

    def accepts(self, value: Any) -> bool:
        """Tell whether ``value`` is a JSON value of this parameter's type."""
        if value is None:
            return self.nullable
        if self.type == "boolean":
            return isinstance(value, bool)
        if self.type == "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        if self.type == "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        if self.type == "string":
            return isinstance(value, str)
        return isinstance(value, dict)


@dataclass(frozen=True)
class NamedFault:
    """A named fault: what it does, its parameters, what the SDKs do on it, and the call that arms it."""

    name: str
    description: str
    params: tuple[FaultParam, ...]
    sdk_reaction: str
    call: Callable[..., Any]

    def to_json(self) -> dict[str, Any]:
        """Return the fault as ``GET /_mock/faults/catalogue`` lists it."""
        return {
            "name": self.name,
            "description": self.description,
            "params": [p.to_json() for p in self.params],
            "sdk_reaction": self.sdk_reaction,
        }


@dataclass(frozen=True)
class _Mark:
    sdk_reaction: str
    params: Mapping[str, str]


def named_fault(sdk_reaction: str, **params: str) -> Callable[[F], F]:
    """Mark a catalogue method as a named fault; ``params`` describe its parameters by name.

    The rules the method adds carry the fault's name (the method's), unless the method named them itself, so
    ``GET /_mock/faults`` and the journal say which catalogue fault fired, however it was armed.
    """

    def mark(method: F) -> F:
        @functools.wraps(method)
        def named(*args: Any, **kwargs: Any) -> Any:
            if _ARMING.get():  # a fault built on another: the outermost names the rules
                return method(*args, **kwargs)
            token = _ARMING.set(True)
            try:
                result = method(*args, **kwargs)
            finally:
                _ARMING.reset(token)
            for rule in _armed(result):
                if not rule.named:
                    rule.name = method.__name__
            return result

        setattr(named, _MARK, _Mark(sdk_reaction, params))
        return typing.cast(F, named)

    return mark


def _json_type(annotation: Any) -> tuple[str, bool]:
    """Return (JSON type, nullable) of a parameter annotation; TypeError for one JSON cannot carry."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported parameter type {annotation!r}")
        return _json_type(args[0])[0], True
    base = origin or annotation
    if base not in _TYPES:
        raise TypeError(f"unsupported parameter type {annotation!r}")
    return _TYPES[base], False


def _described(function: Callable[..., Any], mark: _Mark, common: Mapping[str, str]) -> NamedFault:
    """Describe a marked catalogue method (``self`` left out); the call is bound later, per catalogue object."""
    hints = typing.get_type_hints(function)
    params = []
    for name, parameter in list(inspect.signature(function).parameters.items())[1:]:
        kind, nullable = _json_type(hints[name])
        required = parameter.default is inspect.Parameter.empty
        description = mark.params.get(name) or common.get(name)
        if not description:
            raise TypeError(f"parameter {name!r} of fault {function.__name__!r} has no description")
        default = None if required else parameter.default
        params.append(FaultParam(name, kind, default, description, required, nullable))
    doc = inspect.getdoc(function) or ""
    description = " ".join(doc.split()).replace("``", "`")
    return NamedFault(function.__name__, description, tuple(params), mark.sdk_reaction, function)


_Described = tuple[tuple[str, NamedFault], ...]
#: Each catalogue class's described faults, by (class, common parameter descriptions).
_DESCRIBED: dict[tuple[type, tuple[tuple[str, str], ...]], _Described] = {}


def _class_catalogue(cls: type, common: tuple[tuple[str, str], ...]) -> _Described:
    """Return the named faults a catalogue class describes, by attribute name, sorted (read once per class)."""
    found = _DESCRIBED.get((cls, common))
    if found is None:
        marked = [(name, getattr(cls, name)) for name in sorted(dir(cls))]
        found = tuple(
            (name, _described(function, mark, dict(common)))
            for name, function in marked
            if isinstance(mark := getattr(function, _MARK, None), _Mark)
        )
        _DESCRIBED[(cls, common)] = found
    return found


def catalogue_of(catalogue: object, common: Mapping[str, str] | None = None) -> dict[str, NamedFault]:
    """Return the named faults of a catalogue object, by name; ``common`` describes shared parameter names.

    The descriptions (signatures, type hints, docstrings) are read once per catalogue class; each call binds
    the calls to ``catalogue``.
    """
    described = _class_catalogue(type(catalogue), tuple(sorted((common or {}).items())))
    return {name: dataclasses.replace(fault, call=getattr(catalogue, name)) for name, fault in described}


def describe(faults: Mapping[str, NamedFault]) -> dict[str, Any]:
    """Return ``{"faults": [...]}``: every named fault with its parameters and what the SDKs do on it."""
    return {"faults": [fault.to_json() for fault in faults.values()]}


def _armed(result: Any) -> list[FaultRule]:
    """Return the fault rules among what a fault method returned (a rule, a list of them, or anything else)."""
    rules = [result] if isinstance(result, FaultRule) else list(result) if isinstance(result, list | tuple) else []
    return [r for r in rules if isinstance(r, FaultRule)]


def _rules(result: Any) -> list[dict[str, Any]]:
    return [r.to_json() for r in _armed(result)]


def arm(faults: Mapping[str, NamedFault], name: str, body: Any) -> dict[str, Any]:
    """Arm the fault ``name`` with the parameters in ``body`` (a JSON object); return what was armed.

    The answer is ``{"armed": name, "params": {...}, "rules": [...]}``: the parameters as used (defaults
    filled in) and the fault rules added (none for a fault armed on the state).
    """
    fault = faults.get(name)
    if fault is None:
        raise ApiError(400, "unknown_fault", f"no named fault {name!r}; GET /_mock/faults/catalogue lists them")
    given = {} if body is None else body
    if not isinstance(given, dict):
        raise ApiError(400, "invalid_fault_params", "the parameters must be a JSON object")
    known = {p.name: p for p in fault.params}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ApiError(400, "invalid_fault_params", f"{name} has no parameter {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for param in fault.params:
        if param.name not in given:
            if param.required:
                raise ApiError(400, "invalid_fault_params", f"{name} needs {param.name} ({param.type})")
            values[param.name] = param.default
            continue
        value = given[param.name]
        if not param.accepts(value):
            wanted = param.type + (" or null" if param.nullable else "")
            raise ApiError(400, "invalid_fault_params", f"{param.name} must be {wanted}, not {value!r}")
        values[param.name] = value
    try:
        result = fault.call(**values)
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(400, "invalid_fault_params", f"{name}: {exc}") from exc
    return {"armed": name, "params": values, "rules": _rules(result)}
