"""Refusing a WebSocket before it is accepted, with the HTTP answer a client can read."""

from __future__ import annotations

from starlette.responses import Response
from starlette.websockets import WebSocket

__all__ = ["deny"]


async def deny(websocket: WebSocket, answer: Response, *, status: int, code: str) -> None:
    """Refuse ``websocket`` with ``answer`` (an HTTP response) where the server supports the ASGI
    ``websocket.http.response`` extension (uvicorn does), else accept it and close it with ``4000 + status``
    and ``code`` as the reason, so the client still reads why (a close before accept reads as a bare 403)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(answer)
    else:
        await websocket.accept()
        await websocket.close(code=4000 + status, reason=code)
