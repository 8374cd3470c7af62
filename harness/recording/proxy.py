"""The recording proxy: a transparent HTTP proxy on 127.0.0.1 that writes every exchange to a cassette.

Requests go to the upstream unchanged: method, path, query, body and headers as the client sent them
(hop-by-hop headers aside). With ``preserve_host`` (the default for a loopback upstream) the client's Host
header is passed through, so a mock or a local server builds the URLs it hands out (``sandbox_url``, server
proxy endpoints) for the recorder, and the client's follow-up calls are recorded too; otherwise Host names
the upstream, as a virtual-hosted service needs. Responses come back unchanged, raw bytes forwarded chunk by
chunk as they arrive (an SSE stream is never buffered), and the exchange is written once the response ends.

Known limits: WebSocket upgrades are refused (close 1011); the recorder speaks plain HTTP/1.1 to its
clients; a cassette keeps the first MiB of each response body.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from starlette.types import Message, Receive, Scope, Send

from mockserver.asgi import clients
from mockserver.asgi.server import MockServer
from mockserver.core.cassette import BODY_LIMIT, CassetteHeader, CassetteWriter, Exchange

__all__ = ["HOP_BY_HOP", "RecordingProxy", "is_loopback_url", "recording"]

#: How long a recording waits, when its block ends, for requests still in flight.
DRAIN_SECONDS = 5.0

#: Headers that describe one connection, never forwarded (RFC 9110 section 7.6.1).
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}
)


def is_loopback_url(url: str) -> bool:
    """Tell whether ``url`` names a loopback host."""
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


class RecordingProxy:
    """An ASGI app forwarding every request to ``upstream`` and appending each exchange to ``writer``."""

    def __init__(self, upstream: str, writer: CassetteWriter, *, preserve_host: bool, timeout: float = 300.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"upstream must be an absolute http(s) URL, got {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.upstream_host = parts.netloc
        self.writer = writer
        self.preserve_host = preserve_host
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._began = time.monotonic()
        self.in_flight = 0

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # made on the server's event loop, on first use
            self._client = clients.async_client(
                timeout=httpx.Timeout(self.timeout, connect=10.0),
                trust_env=False,
                follow_redirects=False,
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
            )
        return self._client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1011, "reason": "the recorder does not proxy WebSockets"})
            return
        if scope["type"] != "http":
            return
        self.in_flight += 1
        try:
            await self._proxy(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _proxy(self, scope: Scope, receive: Receive, send: Send) -> None:
        seq = self.writer.next_seq()
        started = time.monotonic()
        body = await _read_body(receive)
        raw_path = scope.get("raw_path") or str(scope["path"]).encode()
        path = raw_path.decode("latin-1")
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers") or []]
        forward = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP and k.lower() != "host"]
        host = next((v for k, v in headers if k.lower() == "host"), self.upstream_host)
        forward.insert(0, ("host", host if self.preserve_host else self.upstream_host))
        url = self.upstream + path + (f"?{query}" if query else "")
        request = httpx.Request(scope["method"], url, headers=forward, content=body)

        def record(status: int, reply_headers: list[tuple[str, str]], reply: bytes, **extra: object) -> None:
            self.writer.write(
                Exchange.build(
                    seq,
                    started=started - self._began,
                    elapsed=time.monotonic() - started,
                    method=str(scope["method"]),
                    path=str(scope["path"]),
                    query=query,
                    request_headers=headers,
                    request_body=body,
                    status=status,
                    response_headers=reply_headers,
                    response_body=reply,
                    **extra,  # type: ignore[arg-type]
                )
            )

        try:
            response = await self._http().send(request, stream=True)
        except httpx.HTTPError as exc:
            message = f"{type(exc).__name__}: {exc}"
            payload = json.dumps({"code": "RECORDER_UPSTREAM_ERROR", "message": message}).encode()
            reply_headers = [("content-type", "application/json"), ("content-length", str(len(payload)))]
            record(0, [], b"", error=message)
            await _answer(send, 502, reply_headers, payload)
            return
        reply_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw]
        passed = [(k, v) for k, v in reply_headers if k.lower() not in HOP_BY_HOP]
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in passed],
            }
        )
        kept = bytearray()
        chunks = total = 0
        error = ""
        try:
            async for chunk in response.aiter_raw():
                chunks += 1
                total += len(chunk)
                if len(kept) < BODY_LIMIT:
                    kept.extend(chunk[: BODY_LIMIT - len(kept)])
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as exc:
            error = f"upstream stream ended: {type(exc).__name__}: {exc}"
        finally:
            await response.aclose()
        media = response.headers.get("content-type", "")
        record(  # before the client sees the end, so a finished call is always in the cassette
            response.status_code,
            reply_headers,
            bytes(kept),
            streamed=media.startswith("text/event-stream") or chunks > 1,
            truncated=total > BODY_LIMIT,
            error=error,
        )
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _read_body(receive: Receive) -> bytes:
    body = bytearray()
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            break
        body.extend(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return bytes(body)


async def _answer(send: Send, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(k.encode(), v.encode()) for k, v in headers]}
    )
    await send({"type": "http.response.body", "body": payload})


@contextmanager
def recording(
    upstream: str,
    out: Path,
    *,
    provider: str,
    port: int = 0,
    preserve_host: bool | None = None,
    note: str = "",
) -> Iterator[tuple[MockServer, CassetteWriter]]:
    """Serve a recording proxy for ``upstream`` on 127.0.0.1:``port`` while the block runs; yield server and writer.

    ``preserve_host`` defaults to True for a loopback upstream and False otherwise.
    """
    keep_host = is_loopback_url(upstream) if preserve_host is None else preserve_host
    server = MockServer(_Pending(), port=port)
    server.start()
    try:
        header = CassetteHeader(
            provider=provider,
            upstream=upstream.rstrip("/"),
            listen=server.url,
            preserve_host=keep_host,
            recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            note=note,
        )
        writer = CassetteWriter(out, header)
        assert isinstance(server.app, _Pending)
        proxy = RecordingProxy(upstream, writer, preserve_host=keep_host)
        server.app.target = proxy
        try:
            yield server, writer
        finally:
            deadline = time.monotonic() + DRAIN_SECONDS
            while proxy.in_flight and time.monotonic() < deadline:
                time.sleep(0.01)
            writer.close()
    finally:
        server.stop()


class _Pending:
    """An ASGI app that forwards to its ``target`` once the recorder knows its own address."""

    def __init__(self) -> None:
        self.target: RecordingProxy | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.target is None:
            await _answer(send, 503, [("content-type", "text/plain")], b"recorder starting")
            return
        await self.target(scope, receive, send)
