"""Parse JSON request text into values every layer can keep: bounded nesting, text that is Unicode, finite numbers.

Python's ``json`` accepts more than JSON: ``NaN``, ``Infinity`` and ``-Infinity``, and a lone UTF-16
surrogate, either escaped (``"\\ud800"``) or as raw UTF-8 bytes (``ED A0 80``, decoded with
``surrogatepass``). A value holding either cannot be written back as JSON or UTF-8 (a list, a snapshot, the
state database), so one such request would break every later answer that shows it. :func:`parse_json`
refuses them with :class:`JsonTextError` (a ``ValueError``) before any rule sees the value, as it refuses a
body nested deeper than :data:`MAX_DEPTH`.

Transport-free: the HTTP layer (:func:`mockserver.asgi.requests.read_json`) and the models that decode bodies in
their provider's own way both call :func:`parse_json`; :func:`check_text` is the same rule for text that did
not come as JSON (a WebSocket frame's fields, a form's fields).
"""

from __future__ import annotations

import array
import itertools
import json
import math
import re
from typing import Any, Literal

__all__ = ["MAX_DEPTH", "JsonTextError", "check_text", "json_depth", "parse_json"]

#: The deepest nesting of arrays and objects a JSON body may have (deeper is refused, never a crash).
MAX_DEPTH = 64
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", bytes([1, 1, 255, 255]))
#: What a surrogate can come from: a ``\uD800``-``\uDFFF`` escape or its (invalid) UTF-8 form.
_MAY_HOLD_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")

Kind = Literal["depth", "surrogate", "non_finite"]


class JsonTextError(ValueError):
    """A JSON text a mock refuses: nested too deep, a lone surrogate, or a number that is not finite.

    ``kind`` says which; ``message`` is what a provider's error body quotes (for a surrogate, the text of
    the ``UnicodeEncodeError`` the value raises when encoded, as a Python server reports it).
    """

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message


def json_depth(raw: bytes) -> int:
    """Return the deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings are not counted)."""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")  # what is left of '"' delimits strings
    outside = b"".join(unescaped.split(b'"')[::2])
    brackets = outside.translate(None, _NOT_BRACKETS)
    steps = array.array("b", brackets.translate(_STEPS))  # opening: +1, closing: -1
    return max(itertools.accumulate(steps), default=0)


def _non_finite(name: str) -> Any:
    raise JsonTextError("non_finite", f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e999: a JSON number too large for a double
        raise JsonTextError("non_finite", f"{text} is out of the range of a double")
    return number


#: The one decoder :func:`parse_json` uses (json.loads would build one per call for these hooks).
_DECODER = json.JSONDecoder(parse_constant=_non_finite, parse_float=_finite)


def parse_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse a JSON text; raise ``ValueError`` when it is malformed, and :class:`JsonTextError` when it is nested
    deeper than ``max_depth``, holds a lone surrogate (in a key or a string) or a non-finite number."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") > max_depth and json_depth(data) > max_depth:
        raise JsonTextError("depth", f"JSON nested deeper than {max_depth} levels")
    try:
        # As json.loads reads bytes (its encoding detected, surrogates passed), with one decoder made once.
        value = _DECODER.decode(data.decode(json.detect_encoding(data), "surrogatepass"))
    except RecursionError:
        raise JsonTextError("depth", f"JSON nested deeper than {max_depth} levels") from None
    if _MAY_HOLD_SURROGATE.search(data):
        check_text(value)
    return value


def check_text(value: Any) -> None:
    """Raise :class:`JsonTextError` when a string anywhere in ``value`` (keys included) is not valid Unicode."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            _encodable(item)
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str):
                    _encodable(key)
                todo.append(inner)
        elif isinstance(item, list | tuple):
            todo.extend(item)


def _encodable(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JsonTextError("surrogate", str(exc)) from None
