"""Reading a whole request body in the mutants' ASGI wrappers."""

from __future__ import annotations

from starlette.types import Receive

__all__ = ["read_request"]


async def read_request(receive: Receive) -> bytes:
    """Return the whole request body (every ``http.request`` message until one without ``more_body``)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)
