"""The app the emulator serves on a sandbox's own ports (any port but execd's and the sidecar's): it answers
what reached the sandbox.

The emulator runs no processes, so nothing of the sandbox's own listens on a port; this app stands in for one.
An HTTP request gets ``{"sandbox_id", "port", "method", "path", "query", "headers"}`` as JSON (header names
lowercase, repeated headers joined with ``", "``), so a test sees exactly what the proxy forwarded. A WebSocket
is accepted; the text message :data:`REQUEST_MESSAGE` is answered with the same JSON for the handshake, any
other message is echoed back. On the linux runtime the sandbox's real processes answer instead.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Receive, Scope, Send

from .render import SANDBOX_KEY

__all__ = ["REQUEST_MESSAGE", "echo_app"]

#: The WebSocket message the echo app answers with what reached it.
REQUEST_MESSAGE = "sandproof:request"


def _path(scope: Scope) -> str:
    """Return the request path below the proxy's mount (what the sandbox's app sees)."""
    path = str(scope.get("path") or "/")
    root = str(scope.get("root_path") or "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path if path.startswith("/") else "/" + path


def _payload(scope: Scope, body: bytes) -> bytes:
    state = scope.get("state") or {}
    sandbox = state.get(SANDBOX_KEY)
    params = scope.get("path_params") or {}
    headers: dict[str, str] = {}
    for key, value in scope.get("headers") or []:
        name, text = bytes(key).decode("latin-1").lower(), bytes(value).decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    payload: dict[str, Any] = {
        "sandbox_id": None if sandbox is None else sandbox.id,
        "port": params.get("port"),
        "method": scope.get("method", "GET"),
        "path": _path(scope),
        "query": bytes(scope.get("query_string", b"")).decode("latin-1"),
        "headers": headers,
        "body": body.decode("utf-8", "replace"),
    }
    return json.dumps(payload).encode()


async def _echo_websocket(scope: Scope, receive: Receive, send: Send) -> None:
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
            await send({"type": "websocket.send", "text": _payload(scope, b"").decode()})
        elif text is not None:
            await send({"type": "websocket.send", "text": text})
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
