"""A WebSocket refused before accept: the HTTP answer where the server can send one, else a readable close."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from mockserver.asgi.websockets import deny


def _deny(extensions: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/ws", "headers": [], "query_string": b"", "extensions": extensions}
    answer = JSONResponse({"code": "not_supported"}, status_code=501)
    asyncio.run(deny(WebSocket(scope, receive, send), answer, status=501, code="not_supported"))
    return sent


def test_with_the_denial_extension_the_client_reads_the_http_answer() -> None:
    sent = _deny({"websocket.http.response": {}})
    assert [m["type"] for m in sent] == ["websocket.http.response.start", "websocket.http.response.body"]
    assert sent[0]["status"] == 501 and sent[1]["body"] == b'{"code":"not_supported"}'


def test_without_it_the_socket_is_accepted_then_closed_with_the_status_and_code() -> None:
    sent = _deny({})
    assert [m["type"] for m in sent] == ["websocket.accept", "websocket.close"]
    assert (sent[1]["code"], sent[1]["reason"]) == (4501, "not_supported")
