"""Request validation that answers like the real server's FastAPI/pydantic layer, as plain data.

:class:`Checker` collects pydantic-style error entries and raises them as a :class:`RequestValidationError`;
the routes render that as FastAPI's 422 ``{"detail": [...]}``. :func:`decode_json_body` is FastAPI's body
decoding (content type, empty body, malformed JSON) over bytes the HTTP layer has read.

Known deviations: a lone surrogate anywhere but ``image.uri`` (in ``metadata``, ``entrypoint``, a key) and a
``NaN``, ``Infinity`` or ``1e999`` anywhere in a body make the real server answer 500 ``Internal Server Error``
(text: a non-finite input cannot be rendered in its 422, a surrogate fails where the value is encoded); the mock
refuses every lone surrogate as the real server refuses one in ``image.uri`` (400
``SANDBOX::INVALID_PARAMETER``, the encoder's message) and a non-finite number with 422 ``json_invalid``, and
stores nothing.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mockserver.core.errors import ApiError
from mockserver.core.jsontext import JsonTextError, parse_json

from .errors import body_not_parsed

CREATE_FIELDS = frozenset(
    {
        "image",
        "snapshotId",
        "platform",
        "timeout",
        "resourceLimits",
        "resourceRequests",
        "env",
        "metadata",
        "lifecycle",
        "entrypoint",
        "networkPolicy",
        "credentialProxy",
        "secureAccess",
        "volumes",
        "extensions",
        "templateId",
    }
)
_MESSAGES = {
    "missing": "Field required",
    "dict_type": "Input should be a valid dictionary",
    "model_attributes_type": "Input should be a valid dictionary or object to extract fields from",
    "string_type": "Input should be a valid string",
    "int_type": "Input should be a valid integer",
    "int_parsing": "Input should be a valid integer, unable to parse string as an integer",
    "int_from_float": "Input should be a valid integer, got a number with a fractional part",
    "bool_type": "Input should be a valid boolean",
    "bool_parsing": "Input should be a valid boolean, unable to interpret input",
    "list_type": "Input should be a valid list",
    "datetime_type": "Input should be a valid datetime",
}


#: The strings pydantic reads as booleans (compared in lower case).
_BOOL_WORDS = {
    **dict.fromkeys(("1", "on", "t", "true", "y", "yes"), True),
    **dict.fromkeys(("0", "off", "f", "false", "n", "no"), False),
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: A string pydantic reads as a Unix time rather than as an ISO date (``"1900000000"``, ``"-1.5"``, ``"1.5e3"``).
_EPOCH_TEXT = re.compile(r"[+-]?(?:\d+|\d*\.\d*(?:[eE][+-]?\d+)?)", re.ASCII)
#: Numbers larger than this (in magnitude) are Unix milliseconds, smaller ones Unix seconds.
_MS_THRESHOLD = 2e10
_FIRST_SECOND_10000 = 253402300800
_FIRST_SECOND_YEAR_0 = -62167219200
_FIRST_SECOND_YEAR_1 = -62135596800


class Pattern:
    """A pydantic ``pattern`` constraint: its source as the error message shows it, matched as Rust's regex does.

    pydantic searches the string (``^`` anchors at the start); a ``$`` matches only at the very end of the
    text (Python's would also match before a final newline), so ``$`` is matched as ``\\Z``.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled = re.compile(source.replace("$", r"\Z"))

    def matches(self, value: str) -> bool:
        """Tell whether ``value`` matches the pattern."""
        return self._compiled.search(value) is not None


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
    """Collect type errors over a JSON body the way pydantic's lax mode would."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []

    def raise_if_any(self) -> None:
        """Raise the collected errors as a 422."""
        if self.errors:
            raise RequestValidationError(self.errors)

    def add(self, kind: str, loc: list[str | int], value: Any, msg: str | None = None, **ctx: Any) -> None:
        """Record one error."""
        self.errors.append(error(kind, loc, value, msg, **ctx))

    def string(
        self,
        value: Any,
        loc: list[str | int],
        *,
        min_length: int = 0,
        max_length: int | None = None,
        pattern: Pattern | None = None,
    ) -> str | None:
        """Return ``value`` if it is a string meeting the constraints, else record the first one it breaks.

        pydantic checks the type, then ``min_length``, ``max_length`` and ``pattern``, in that order.
        """
        if not isinstance(value, str):
            self.add("string_type", loc, value)
            return None
        if len(value) < min_length:
            self.add(
                "string_too_short",
                loc,
                value,
                f"String should have at least {min_length} character{'s' if min_length > 1 else ''}",
                min_length=min_length,
            )
            return None
        if max_length is not None and len(value) > max_length:
            self.add(
                "string_too_long",
                loc,
                value,
                f"String should have at most {max_length} character{'s' if max_length > 1 else ''}",
                max_length=max_length,
            )
            return None
        if pattern is not None and not pattern.matches(value):
            self.add(
                "string_pattern_mismatch",
                loc,
                value,
                f"String should match pattern '{pattern.source}'",
                pattern=pattern.source,
            )
            return None
        return value

    def literal(self, value: Any, loc: list[str | int], choices: tuple[str, ...]) -> str | None:
        """Return ``value`` if it is one of ``choices``, else record pydantic's ``literal_error``."""
        if value in choices and isinstance(value, str):
            return value
        quoted = [f"'{c}'" for c in choices]
        expected = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        self.add("literal_error", loc, value, f"Input should be {expected}", expected=expected)
        return None

    def integer(self, value: Any, loc: list[str | int], *, ge: int | None = None) -> int | None:
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
        if ge is not None and result < ge:
            self.add("greater_than_equal", loc, value, f"Input should be greater than or equal to {ge}", ge=ge)
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

    def str_map(self, value: Any, loc: list[str | int], *, nullable_values: bool = False) -> dict[str, Any] | None:
        """Return ``value`` if it is an object of strings, else record errors."""
        if not isinstance(value, dict):
            self.add("dict_type", loc, value)
            return None
        before = len(self.errors)
        for key, item in value.items():
            if item is None and nullable_values:
                continue
            self.string(item, [*loc, key])
        return value if len(self.errors) == before else None

    def str_list(self, value: Any, loc: list[str | int], *, min_items: int = 0) -> list[str] | None:
        """Return ``value`` if it is a list of strings (of ``min_items``), else record errors."""
        if not isinstance(value, list):
            self.add("list_type", loc, value)
            return None
        if len(value) < min_items:
            self.add(
                "too_short",
                loc,
                value,
                f"List should have at least {min_items} item after validation, not {len(value)}",
                field_type="List",
                min_length=min_items,
                actual_length=len(value),
            )
            return None
        before = len(self.errors)
        for i, item in enumerate(value):
            self.string(item, [*loc, i])
        return value if len(self.errors) == before else None

    def obj(self, value: Any, loc: list[str | int]) -> dict[str, Any] | None:
        """Return ``value`` if it is a JSON object, else record a model-type error."""
        if not isinstance(value, dict):
            self.add("model_attributes_type", loc, value)
            return None
        return value

    def datetime_value(self, value: Any, loc: list[str | int]) -> datetime | None:
        """Return an aware UTC datetime from RFC 3339 text or a Unix time (number or numeric text), else record an error."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self._epoch(value, value, loc, "datetime_parsing", "Input should be a valid datetime")
        if isinstance(value, str) and _EPOCH_TEXT.fullmatch(value) and any(c.isdigit() for c in value):
            number = int(value) if value.lstrip("+-").isdigit() else float(value)
            if not isinstance(number, int) or -(2**63) <= number < 2**63:
                return self._epoch(
                    number, value, loc, "datetime_from_date_parsing", "Input should be a valid datetime or date"
                )
        if not isinstance(value, str):
            self.add("datetime_type", loc, value)
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            self.add(
                "datetime_from_date_parsing",
                loc,
                value,
                "Input should be a valid datetime or date, invalid character in year",
                error="invalid character in year",
            )
            return None
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            return parsed  # pydantic accepts it; the handler's own UTC conversion fails later

    def _epoch(self, number: float, value: Any, loc: list[str | int], kind: str, prefix: str) -> datetime | None:
        """Return the UTC time of Unix seconds (milliseconds above 2e10) like pydantic, else record an error."""
        try:
            return unix_time(number)
        except ValueError as exc:
            self.add(kind, loc, value, f"{prefix}, {exc}", error=str(exc))
            return None


def unix_time(number: float) -> datetime:
    """Return the UTC time of a Unix timestamp as pydantic reads one; raise ValueError with its reason."""
    if isinstance(number, float) and math.isnan(number):
        raise ValueError("NaN values not permitted")
    if isinstance(number, float) and math.isinf(number):
        raise ValueError(f"dates {'after 9999' if number > 0 else 'before 0000'} are not supported as unix timestamps")
    scale = 1000 if abs(number) > _MS_THRESHOLD else 1
    whole = math.floor(number)
    seconds, rest = divmod(whole, scale)
    micros = rest * (1_000_000 // scale) + math.floor((number - whole) * (1_000_000 // scale) + 0.5)
    seconds, micros = seconds + micros // 1_000_000, micros % 1_000_000
    if seconds >= _FIRST_SECOND_10000:
        raise ValueError("dates after 9999 are not supported as unix timestamps")
    if seconds < _FIRST_SECOND_YEAR_0:
        raise ValueError("dates before 0000 are not supported as unix timestamps")
    if seconds < _FIRST_SECOND_YEAR_1:
        raise ValueError("year 0 is out of range")
    return _EPOCH + timedelta(seconds=seconds, microseconds=micros)


def value_error(body: Any, message: str, loc: list[str | int] | None = None) -> RequestValidationError:
    """Return a model-level ``value_error`` as pydantic reports a failed ``model_validator`` (at ``loc``)."""
    return RequestValidationError([value_error_entry(body, message, loc or ["body"])])


def value_error_entry(value: Any, message: str, loc: list[str | int]) -> dict[str, Any]:
    """Return the error entry of a failed ``model_validator`` of the model at ``loc``."""
    return error("value_error", loc, value, f"Value error, {message}", error={})
