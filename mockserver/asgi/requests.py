"""Reading request bodies in the routes: bounded size, JSON parsed or refused with a 4xx :class:`ApiError`."""

from __future__ import annotations

import array
import itertools
import json
from typing import Any

from starlette.requests import Request

from mockserver.core.errors import ApiError

__all__ = ["MAX_BODY", "MAX_DEPTH", "json_depth", "parse_json", "read_body", "read_json"]

MAX_BODY = 1024 * 1024
#: The deepest nesting of arrays and objects a JSON body may have (deeper answers 400, never a crash).
MAX_DEPTH = 64
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", bytes([1, 1, 255, 255]))


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """Read the raw body, refusing more than ``limit`` bytes with 413."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "payload_too_large", f"request body exceeds {limit} bytes")
    chunks = bytearray()
    async for chunk in request.stream():
        chunks.extend(chunk)
        if len(chunks) > limit:
            raise ApiError(413, "payload_too_large", f"request body exceeds {limit} bytes")
    return bytes(chunks)


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


async def read_json(request: Request, *, limit: int = MAX_BODY, empty: Any = None) -> Any:
    """Parse the JSON body (``empty`` when there is none); 400 ``invalid_json`` when malformed or too deep."""
    raw = await read_body(request, limit)
    if not raw.strip():
        return empty
    try:
        return parse_json(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from exc
