"""An app that answers what reached it: the stand-in for a program listening on a sandbox's own port.

Both mocks serve one on a sandbox's ports where nothing of the sandbox's listens (the emulator runs no
processes), so a test sees exactly what a proxy forwarded. :func:`echo_app` builds it from a function that
describes a request; an HTTP request gets that description as JSON, a WebSocket has each message echoed back,
except :data:`REQUEST_MESSAGE`, answered with the description of its handshake.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["REQUEST_MESSAGE", "Describe", "echo_app", "joined_headers"]

#: The WebSocket message an echo app answers with what reached it (the handshake's headers).
REQUEST_MESSAGE = "sandproof:request"

#: Describe a request (its scope and body) as a JSON object.
Describe = Callable[[Scope, bytes], dict[str, Any]]


def joined_headers(scope: Scope) -> dict[str, str]:
    """Return the request's headers by lower-case name, repeated ones joined with ``", "``."""
    headers: dict[str, str] = {}
    for key, value in scope.get("headers") or []:
        name, text = bytes(key).decode("latin-1").lower(), bytes(value).decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    return headers


def echo_app(describe: Describe) -> ASGIApp:
    """Return an app that answers each request with ``describe``'s JSON and echoes WebSocket messages."""

    def encoded(scope: Scope, body: bytes) -> bytes:
        return json.dumps(describe(scope, body)).encode()

    async def websocket(scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text == REQUEST_MESSAGE:
                await send({"type": "websocket.send", "text": encoded(scope, b"").decode()})
            elif text is not None:
                await send({"type": "websocket.send", "text": text})
            else:
                await send({"type": "websocket.send", "bytes": message.get("bytes") or b""})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await websocket(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            body.extend(message.get("body", b""))
            if not message.get("more_body"):
                break
        data = encoded(scope, bytes(body))
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app
