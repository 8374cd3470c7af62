"""Reading request bodies in the routes: bounded size, JSON parsed or refused with a 4xx :class:`ApiError`.

A body the client cuts short (it closes the connection before the declared length or the last chunk)
is refused with 400 ``incomplete_body`` before any rule runs: nothing is stored, and the route ends at once
(the client is gone, so the answer goes nowhere, but no error escapes into the server's log).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request

from mockserver.core.errors import ApiError
from mockserver.core.jsontext import parse_json

__all__ = ["MAX_BODY", "read_body", "read_json"]

MAX_BODY = 1024 * 1024


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """Read the raw body, refusing more than ``limit`` bytes with 413."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "payload_too_large", f"request body exceeds {limit} bytes")
    chunks = bytearray()
    try:
        async for chunk in request.stream():
            chunks.extend(chunk)
            if len(chunks) > limit:
                raise ApiError(413, "payload_too_large", f"request body exceeds {limit} bytes")
    except ClientDisconnect:
        raise ApiError(400, "incomplete_body", "the client closed the connection before the body ended") from None
    return bytes(chunks)


async def read_json(request: Request, *, limit: int = MAX_BODY, empty: Any = None) -> Any:
    """Parse the JSON body (``empty`` when there is none); 400 ``invalid_json`` when malformed or too deep."""
    raw = await read_body(request, limit)
    if not raw.strip():
        return empty
    try:
        return parse_json(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from exc
