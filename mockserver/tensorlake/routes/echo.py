"""The app a sandbox's user port serves unless a test registered one: it answers what reached the sandbox.

An HTTP request gets ``{"sandbox_id", "port", "method", "path", "query", "headers", "cookies", "body"}`` as
JSON (repeated headers joined with ``", "``), so a test sees exactly what the proxy forwarded; a WebSocket
gets each message echoed back, except :data:`REQUEST_MESSAGE`, answered with the same JSON for its handshake.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Receive, Scope, Send

from ..model.auth import parse_cookies
from .common import PORT_KEY, SANDBOX_KEY

__all__ = ["REQUEST_MESSAGE", "echo_app"]

#: The WebSocket message the echo app answers with what reached it (the handshake's headers and cookies).
REQUEST_MESSAGE = "sandproof:request"


async def _echo_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") == REQUEST_MESSAGE:
            await send({"type": "websocket.send", "text": _payload(scope, b"").decode()})
        elif message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message.get("bytes") or b""})


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer an HTTP request with what reached the sandbox, as JSON; echo WebSocket messages back."""
    if scope["type"] == "websocket":
        await _echo_websocket(scope, receive, send)
        return
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if not message.get("more_body"):
            break
    data = _payload(scope, bytes(body))
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _payload(scope: Scope, body: bytes) -> bytes:
    """Return what reached the sandbox, as JSON."""
    state = scope.get("state") or {}
    sandbox = state.get(SANDBOX_KEY)
    headers: dict[str, str] = {}
    for key, value in scope.get("headers") or []:
        name, text = key.decode("latin-1"), value.decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    payload: dict[str, Any] = {
        "sandbox_id": None if sandbox is None else sandbox.id,
        "port": state.get(PORT_KEY),
        "method": scope.get("method"),
        "path": scope.get("path"),
        "query": bytes(scope.get("query_string", b"")).decode("latin-1"),
        "headers": headers,
        "cookies": parse_cookies(headers.get("cookie", "")),
        "body": body.decode("utf-8", "replace"),
    }
    return json.dumps(payload).encode()
