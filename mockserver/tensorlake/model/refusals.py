"""TensorLake's error answers for what pydantic finds wrong in a request body: the one place they are mapped.

The declarations (:mod:`.wire`) are validated by pydantic; the first defect it reports (fields are checked in
declared order) becomes an :class:`~mockserver.core.errors.ApiError` in the mock's ``{"code", "message"}``
shape. A rule's own refusal (:func:`.wire.refuse`) carries its code, status and message; pydantic's own error
types are worded here, by what the declaration expected at the defect's location:

* a wrong type: 400 ``invalid_type``, e.g. ``timeout_secs must be an integer, got float``;
* a number out of bounds: 400 ``invalid_value``, e.g. ``resources.cpus must be at most 256, got 1e+300``;
* a body that is not an object: 400 ``invalid_type``, ``request body must be a JSON object`` (or what the
  record's ``NOT_AN_OBJECT`` says, e.g. ``a file system mount must be an object``).

Locations read as paths: ``resources.gpus[].count`` is the count of any GPU request.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from mockserver.core.errors import ApiError

__all__ = ["parse", "refusal"]

M = TypeVar("M", bound=BaseModel)

#: What a value of each pydantic type error should have been.
_EXPECTED = {
    "bool_type": "a boolean",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "float_type": "a number",
    "finite_number": "a number",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "missing": None,
}
_OBJECT_TYPES = frozenset({"dict_type", "model_type", "model_attributes_type", "dataclass_type"})
_NOT_AN_OBJECT = "request body must be a JSON object"
#: Types whose message also names the type that came instead.
_NAMES_GOT = frozenset({"bool_type", "int_type", "int_from_float", "string_type", "missing"})


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _bound(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _label(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += "[]" if isinstance(part, int) else ("." if text else "") + part
    return text


def refusal(error: Mapping[str, Any], *, declared: Any = None) -> ApiError:
    """Return the TensorLake answer to one pydantic error (``declared``: the type declared at its location)."""
    kind, loc, ctx = str(error["type"]), tuple(error["loc"]), error.get("ctx") or {}
    if "status" in ctx and "message" in ctx:  # a rule's own refusal
        return ApiError(int(ctx["status"]), kind, str(ctx["message"]))
    label = _label(loc)
    if kind in _OBJECT_TYPES and isinstance(declared, type) and issubclass(declared, BaseModel):
        words = getattr(declared, "NOT_AN_OBJECT", None)
        return ApiError(400, "invalid_type", words or (f"{label} must be an object" if loc else _NOT_AN_OBJECT))
    if kind == "greater_than_equal":
        return ApiError(
            400, "invalid_value", f"{label} must be at least {_bound(ctx['ge'])}, got {_short(error['input'])}"
        )
    if kind == "less_than_equal":
        return ApiError(
            400, "invalid_value", f"{label} must be at most {_bound(ctx['le'])}, got {_short(error['input'])}"
        )
    if kind == "greater_than":
        return ApiError(400, "invalid_value", f"{label} must be positive")
    if kind not in _EXPECTED:
        return ApiError(400, "invalid_value", f"{label}: {error['msg']}")
    items = _items_of(declared)
    if items is not None and (kind in ("list_type", "tuple_type") or isinstance(loc[-1], int)):
        where = _label(loc[:-1]) if isinstance(loc[-1], int) else label
        return ApiError(400, "invalid_type", f"{where} must be a list of {items}")
    expected = _EXPECTED[kind] or _describe(declared)
    got = None if kind == "missing" else error["input"]
    tail = f", got {type(got).__name__}" if kind in _NAMES_GOT else ""
    return ApiError(400, "invalid_type", f"{label} must be {expected}{tail}")


_PLAIN = {str: "a string", int: "an integer", bool: "a boolean", float: "a number"}


def _describe(declared: Any) -> str:
    """Return what a value of the declared type is, in words."""
    return _PLAIN.get(declared, "given")


def _items_of(declared: Any) -> str | None:
    """Return "strings" when ``declared`` is a list of plain strings (the only list the mock words that way)."""
    if get_origin(declared) is list and [_plain(a) for a in get_args(declared)] == [str]:
        return "strings"
    return None


def _plain(declared: Any) -> Any:
    """Return the type under ``Annotated`` and ``| None``."""
    while True:
        if get_origin(declared) is Annotated:
            declared = get_args(declared)[0]
        elif get_origin(declared) in (Union, UnionType) and type(None) in get_args(declared):
            rest = [a for a in get_args(declared) if a is not type(None)]
            if len(rest) != 1:
                return declared
            declared = rest[0]
        else:
            return declared


def _declared(model: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """Return the type declared at ``loc`` (the list when ``loc`` ends in an item), None when it is not a field."""
    declared: Any = model
    for position, part in enumerate(loc):
        declared = _plain(declared)
        if isinstance(part, int):
            if get_origin(declared) not in (list, tuple) or position == len(loc) - 1:
                return declared
            declared = get_args(declared)[0]
        elif isinstance(declared, type) and issubclass(declared, BaseModel) and part in declared.model_fields:
            declared = declared.model_fields[part].annotation
        else:
            return None
    return _plain(declared)


def parse(model: type[M], body: Any, **context: Any) -> M:
    """Validate ``body`` as ``model`` (``context`` reaches the rules); raise the first defect as :class:`ApiError`."""
    try:
        return model.model_validate(body, context=context or None)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise refusal(first, declared=_declared(model, tuple(first["loc"]))) from None
