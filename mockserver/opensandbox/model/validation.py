"""What FastAPI does before a handler runs: decode the body, and refuse a request with its 422, as plain data.

:class:`RequestValidationError` carries FastAPI's 422 entries; the routes render it as ``{"detail": [...]}``.
A body is validated by its pydantic declaration (:mod:`.bodies`, which also renders pydantic's errors);
:func:`decode_json_body` is FastAPI's body decoding (content type, empty body, malformed JSON) over bytes the
HTTP layer has read. :class:`Checker` reads the few query and path parameters (an integer, a boolean) the way
pydantic's lax mode does, without importing pydantic on the listing's path.

Known deviations: a lone surrogate anywhere but ``image.uri`` (in ``metadata``, ``entrypoint``, a key) and a
``NaN``, ``Infinity`` or ``1e999`` anywhere in a body make the real server answer 500 ``Internal Server Error``
(text: a non-finite input cannot be rendered in its 422, a surrogate fails where the value is encoded); the mock
refuses every lone surrogate as the real server refuses one in ``image.uri`` (400
``SANDBOX::INVALID_PARAMETER``, the encoder's message) and a non-finite number with 422 ``json_invalid``, and
stores nothing.
"""

from __future__ import annotations

import json
from typing import Any

from mockserver.core.errors import ApiError
from mockserver.core.jsontext import JsonTextError, parse_json

from .errors import body_not_parsed

_MESSAGES = {
    "missing": "Field required",
    "int_type": "Input should be a valid integer",
    "int_parsing": "Input should be a valid integer, unable to parse string as an integer",
    "int_from_float": "Input should be a valid integer, got a number with a fractional part",
    "bool_type": "Input should be a valid boolean",
    "bool_parsing": "Input should be a valid boolean, unable to interpret input",
}


#: The strings pydantic reads as booleans (compared in lower case).
_BOOL_WORDS = {
    **dict.fromkeys(("1", "on", "t", "true", "y", "yes"), True),
    **dict.fromkeys(("0", "off", "f", "false", "n", "no"), False),
}


class RequestValidationError(Exception):
    """Carry pydantic-style error entries (plain data); the routes render them as FastAPI's 422."""

    status = 422

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} validation error(s)")
        self.errors = errors


def error(kind: str, loc: list[str | int], value: Any, msg: str | None = None, **ctx: Any) -> dict[str, Any]:
    """Return one pydantic-style error entry."""
    entry: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg or _MESSAGES.get(kind, kind), "input": value}
    if ctx:
        entry["ctx"] = ctx
    return entry


def is_json_media_type(content_type: str | None) -> bool:
    """Return whether a ``content-type`` is one FastAPI parses as JSON (``application/json``, ``application/*+json``)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    main, _, sub = media.partition("/")
    return main == "application" and "/" not in sub and (sub == "json" or sub.endswith("+json"))


def decode_json_body(raw: bytes, content_type: str | None, *, required: bool = True) -> Any:
    """Decode a request body as FastAPI does (422 ``json_invalid`` / ``missing``); None when optional and empty.

    A non-empty body without a JSON ``content-type`` is not parsed: it comes back as its text, which the body
    model then rejects, as FastAPI's strict content-type check leads to. Bytes that are not UTF-8 are 400
    ``{"detail": "There was an error parsing the body"}`` (observed). A lone surrogate anywhere in the body
    is 400 ``SANDBOX::INVALID_PARAMETER`` with the encoder's message (observed for ``image.uri``; the real
    server 500s when it is elsewhere); ``NaN``/``Infinity`` and a body nested too deep are 422 ``json_invalid``
    (a choice: the real server's 422 cannot render a non-finite input and 500s, a deep one overflows).
    """
    if raw and not is_json_media_type(content_type):
        return raw.decode("utf-8", "replace")
    if not raw.strip():
        if required:
            raise RequestValidationError([error("missing", ["body"], None)])
        return None
    try:
        return parse_json(raw)
    except JsonTextError as exc:
        if exc.kind == "surrogate":
            raise ApiError(400, "SANDBOX::INVALID_PARAMETER", exc.message) from exc
        raise RequestValidationError(
            [error("json_invalid", ["body", 0], {}, "JSON decode error", error=exc.message)]
        ) from exc
    except UnicodeDecodeError as exc:  # not UTF-8: FastAPI's catch-all 400 (observed)
        raise body_not_parsed() from exc
    except json.JSONDecodeError as exc:
        raise RequestValidationError(
            [error("json_invalid", ["body", exc.pos], {}, "JSON decode error", error=exc.msg)]
        ) from exc
    except ValueError as exc:  # an integer too long to convert, say
        raise RequestValidationError(
            [error("json_invalid", ["body", 0], {}, "JSON decode error", error=str(exc))]
        ) from exc


class Checker:
    """Collect errors over query and path parameters the way pydantic's lax mode would."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []

    def raise_if_any(self) -> None:
        """Raise the collected errors as a 422."""
        if self.errors:
            raise RequestValidationError(self.errors)

    def add(self, kind: str, loc: list[str | int], value: Any, msg: str | None = None, **ctx: Any) -> None:
        """Record one error."""
        self.errors.append(error(kind, loc, value, msg, **ctx))

    def integer(self, value: Any, loc: list[str | int]) -> int | None:
        """Return ``value`` as an int under lax rules (``"60"``, ``60.0``), else record an error."""
        result: int | None = None
        if isinstance(value, bool):
            result = int(value)
        elif isinstance(value, int):
            result = value
        elif isinstance(value, float):
            if value.is_integer():
                result = int(value)
            else:
                self.add("int_from_float", loc, value)
                return None
        elif isinstance(value, str):
            try:
                result = int(value.strip())
            except ValueError:
                self.add("int_parsing", loc, value)
                return None
        else:
            self.add("int_type", loc, value)
            return None
        return result

    def boolean(self, value: Any, loc: list[str | int]) -> bool | None:
        """Return ``value`` as a bool under pydantic's lax rules, else record its error.

        Integers 0 and 1, floats 0.0 and 1.0, and the words of :data:`_BOOL_WORDS` (any case) are booleans;
        another whole number or string is ``bool_parsing``, anything else (null, 1.5, a list) ``bool_type``.
        """
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = _BOOL_WORDS.get(value.lower())
            if word is None:
                self.add("bool_parsing", loc, value)
            return word
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        self.add("bool_parsing" if whole else "bool_type", loc, value)
        return None
