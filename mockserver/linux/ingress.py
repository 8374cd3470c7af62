"""An ASGI app that passes HTTP requests and WebSockets on to a port inside a sandbox.

The providers' ingress (TensorLake's ``<port>-<id>.sandbox.<domain>``, OpenSandbox's endpoints, direct or
through the server proxy) decides who may reach a port; :func:`port_proxy` is what then answers: it connects
to the port inside the sandbox (:func:`~mockserver.linux.forward.open_connection`: the sandbox's loopback,
from the host, without a route) and relays.

* HTTP: one upstream connection per request (``Connection: close``), the request's method, path, query,
  headers and body as they came (hop-by-hop headers dropped), the response streamed back as it comes.
* WebSocket: the handshake is made upstream first with the client's path, query, headers and subprotocols;
  then the client's handshake is accepted with the subprotocol the service chose and messages are relayed
  both ways until either side closes (its close code passes on).

Nothing listening on the port answers ``502`` (text ``Bad Gateway``) or refuses the WebSocket handshake.

Known deviations: no HTTP/2 and no TLS; one request per upstream connection; request bodies are read whole
before they are sent (at most :data:`BODY_LIMIT` bytes, else 413); a WebSocket's ping and pong frames are
answered on each side rather than passed through.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import h11
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from .forward import open_connection
from .kernel import socket_in
from .sandbox import LinuxSandbox

__all__ = ["BODY_LIMIT", "port_proxy"]

BODY_LIMIT = 64 * 1024 * 1024
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
SandboxOf = Callable[[Scope], Awaitable[LinuxSandbox]]
_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
        b"trailer",
        b"content-length",
    }
)
_WS_OWN = frozenset(
    {b"host", b"sec-websocket-key", b"sec-websocket-version", b"sec-websocket-extensions", b"sec-websocket-protocol"}
)


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _target(scope: Scope) -> bytes:
    """Return the request target the service sees: the path below the mount this app is served under."""
    raw = bytes(scope.get("raw_path") or str(scope.get("path", "/")).encode("latin-1"))
    root = str(scope.get("root_path") or "").encode("latin-1")
    if root and raw.startswith(root):
        raw = raw[len(root) :]
    if not raw.startswith(b"/"):
        raw = b"/" + raw
    query = bytes(scope.get("query_string") or b"")
    return raw + (b"?" + query if query else b"")


async def _read_body(receive: Receive) -> bytes | None:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body.extend(message.get("body", b""))
        if len(body) > BODY_LIMIT:
            return None
        if not message.get("more_body"):
            return bytes(body)


async def _http(sandbox: LinuxSandbox, port: int, scope: Scope, receive: Receive, send: Send) -> None:
    body = await _read_body(receive)
    if body is None:
        await _plain(send, 413, "Request Entity Too Large")
        return
    try:
        reader, writer = await open_connection(sandbox, port)
    except OSError:
        await _plain(send, 502, "Bad Gateway")
        return
    conn = h11.Connection(h11.CLIENT)
    headers = [(k, v) for k, v in scope.get("headers") or [] if k.lower() not in _HOP]
    if not any(k.lower() == b"host" for k, _ in headers):
        headers.insert(0, (b"host", f"127.0.0.1:{port}".encode()))
    headers += [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    try:
        request = h11.Request(method=str(scope.get("method", "GET")), target=_target(scope), headers=headers)
        writer.write(conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        await writer.drain()
        started = False
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
                continue
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                kept = [(k, v) for k, v in event.headers if k.lower() not in _HOP - {b"content-length"}]
                await send({"type": "http.response.start", "status": event.status_code, "headers": kept})
                started = True
            elif isinstance(event, h11.Data):
                await send({"type": "http.response.body", "body": bytes(event.data), "more_body": True})
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                break
        if started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await _plain(send, 502, "Bad Gateway")
    except (h11.ProtocolError, OSError, ConnectionError):
        with contextlib.suppress(Exception):
            await _plain(send, 502, "Bad Gateway")
    finally:
        writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await writer.wait_closed()


async def _websocket(sandbox: LinuxSandbox, port: int, scope: Scope, receive: Receive, send: Send) -> None:
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    headers = [
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in scope.get("headers") or []
        if k.lower() not in _WS_OWN | _HOP
    ]
    subprotocols = list(scope.get("subprotocols") or [])
    uri = f"ws://127.0.0.1:{port}{_target(scope).decode('latin-1')}"
    sock = None
    for host in ("127.0.0.1", sandbox.address):
        candidate = socket_in(sandbox.netns_fd)
        candidate.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(candidate, (host, port))
        except OSError:
            candidate.close()
            continue
        sock = candidate
        break
    if sock is None:
        await send({"type": "websocket.close", "code": 1011, "reason": "nothing listens on the port"})
        return
    try:
        upstream = await ws_connect(
            uri,
            sock=sock,
            additional_headers=headers,
            subprotocols=subprotocols or None,
            compression=None,
            proxy=None,
            user_agent_header=None,
            max_size=None,
            ping_interval=None,
        )
    except (InvalidHandshake, InvalidStatus, OSError, TimeoutError):
        sock.close()
        await send({"type": "websocket.close", "code": 1011, "reason": "the service refused the handshake"})
        return
    await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})

    async def client_to_service() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                await upstream.close(int(message.get("code") or 1000))
                return
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
            elif message.get("text") is not None:
                await upstream.send(message["text"])

    async def service_to_client() -> None:
        try:
            async for data in upstream:
                if isinstance(data, bytes):
                    await send({"type": "websocket.send", "bytes": data})
                else:
                    await send({"type": "websocket.send", "text": data})
        except ConnectionClosed:
            pass
        code = upstream.close_code or 1000
        with contextlib.suppress(Exception):
            await send({"type": "websocket.close", "code": code if code != 1005 else 1000})

    tasks = [asyncio.ensure_future(client_to_service()), asyncio.ensure_future(service_to_client())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await upstream.close()


def port_proxy(sandbox_of: SandboxOf, port: int) -> ASGIApp:
    """Return the ASGI app relaying HTTP and WebSockets to ``port`` of the sandbox ``sandbox_of`` returns."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        sandbox = await sandbox_of(scope)
        if scope["type"] == "websocket":
            await _websocket(sandbox, port, scope, receive, send)
        elif scope["type"] == "http":
            await _http(sandbox, port, scope, receive, send)

    return app
