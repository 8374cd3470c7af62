"""Parse JSON request text with a bound on nesting, so a deep body is refused instead of crashing a rule.

Transport-free: the HTTP layer (:func:`mockserver.asgi.requests.read_json`) and the models that decode bodies in
their provider's own way both call :func:`parse_json`.
"""

from __future__ import annotations

import array
import itertools
import json
from typing import Any

__all__ = ["MAX_DEPTH", "json_depth", "parse_json"]

#: The deepest nesting of arrays and objects a JSON body may have (deeper is refused, never a crash).
MAX_DEPTH = 64
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", bytes([1, 1, 255, 255]))


def json_depth(raw: bytes) -> int:
    """Return the deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings are not counted)."""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")  # what is left of '"' delimits strings
    outside = b"".join(unescaped.split(b'"')[::2])
    brackets = outside.translate(None, _NOT_BRACKETS)
    steps = array.array("b", brackets.translate(_STEPS))  # opening: +1, closing: -1
    return max(itertools.accumulate(steps), default=0)


def parse_json(raw: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse a JSON text; raise ``ValueError`` when it is malformed or nested deeper than ``max_depth``."""
    if raw.count(b"[") + raw.count(b"{") > max_depth and json_depth(raw) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
