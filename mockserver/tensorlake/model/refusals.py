"""TensorLake's error answers for what pydantic finds wrong in a request body: the one place they are mapped.

The declarations (:mod:`.wire`) are validated by pydantic; the first defect it reports (fields are checked in
declared order) becomes an :class:`~mockserver.core.errors.ApiError` in the mock's ``{"code", "message"}``
shape. A rule's own refusal (:func:`.wire.refuse`) carries its code, status and message; pydantic's own error
types are worded here, by what the declaration expected at the defect's location:

* a wrong type: 400 ``invalid_type``, e.g. ``timeout_secs must be an integer, got float``;
* a number out of bounds: 400 ``invalid_value``, e.g. ``resources.cpus must be at most 256, got 1e+300``;
* a body that is not an object: 400 ``invalid_type``, ``request body must be a JSON object``.

Locations read as paths: ``resources.gpus[].count`` is the count of any GPU request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

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


def refusal(error: Mapping[str, Any], *, item_of: str | None = None) -> ApiError:
    """Return the TensorLake answer to one pydantic error (``item_of``: what a list's items should be)."""
    kind, loc, ctx = str(error["type"]), tuple(error["loc"]), error.get("ctx") or {}
    if "status" in ctx and "message" in ctx:  # a rule's own refusal
        return ApiError(int(ctx["status"]), kind, str(ctx["message"]))
    label = _label(loc)
    if not loc and kind in _EXPECTED:
        return ApiError(400, "invalid_type", "request body must be a JSON object")
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
    if kind in _EXPECTED:
        expected = _EXPECTED[kind] or "given"
        got = None if kind == "missing" else error["input"]
        if loc and isinstance(loc[-1], int) and item_of:  # an item of a list of plain values
            return ApiError(400, "invalid_type", f"{_label(loc[:-1])} must be a list of {item_of}")
        if kind in ("list_type", "tuple_type") and item_of:
            return ApiError(400, "invalid_type", f"{label} must be a list of {item_of}")
        tail = f", got {type(got).__name__}" if kind in _NAMES_GOT else ""
        return ApiError(400, "invalid_type", f"{label} must be {expected}{tail}")
    return ApiError(400, "invalid_value", f"{label}: {error['msg']}")


def _items(model: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """Return "strings" or "integers" when the field at ``loc`` is a list of plain strings or integers."""
    for part in loc:
        if isinstance(part, int):
            continue
        info = model.model_fields.get(part)
        if info is None:
            return None
        text = repr(info.annotation)
        nested = [
            a for a in getattr(info.annotation, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if nested and part != loc[-1] and not isinstance(loc[-1], int):
            model = nested[0]
            continue
        if "list[" in text and "str" in text and "Model" not in text:
            return "strings"
        return None
    return None


def parse(model: type[M], body: Any, **context: Any) -> M:
    """Validate ``body`` as ``model`` (``context`` reaches the rules); raise the first defect as :class:`ApiError`."""
    try:
        return model.model_validate(body, context=context or None)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise refusal(first, item_of=_items(model, tuple(first["loc"]))) from None
