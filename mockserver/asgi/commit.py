"""Commit the state before the client can see an answer: the ASGI wrapper of a durable server.

:class:`CommitBeforeSend` wraps a mock's whole app (admin routes included). Before it passes on the first
message of a response (``http.response.start``, or a WebSocket's accept) it calls ``commit``, which writes
every change made so far in one transaction; before the end of a streamed body (the last
``http.response.body``) it commits again, so what the stream changed is on disk before the client sees it
finish (a body sent in one piece needs no second commit). A request that changed a sandbox the model does not track itself (files, commands, a policy the
sidecar set) notes the sandbox; for any method but ``GET``/``HEAD``/``OPTIONS`` that sandbox is marked with
``touched`` first, so its rows are rewritten.

A commit that fails turns the answer into ``503 state_not_saved``: the client never sees a success that
is not on disk.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .middleware import notes

__all__ = ["CommitBeforeSend"]

_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_log = logging.getLogger("sandproof.state")


class CommitBeforeSend:
    """Call ``commit`` before a response's first byte and before a streamed body's end."""

    def __init__(self, app: ASGIApp, commit: Callable[[], object], touched: Callable[[str], None]) -> None:
        self.app = app
        self.commit = commit
        self.touched = touched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})  # shared with the inner layers, which note the sandbox there
        writes = scope["type"] == "websocket" or scope.get("method") not in _READS
        failed = streamed = False

        def save() -> bool:
            if writes:
                sandbox_id = notes(scope).sandbox_id
                if sandbox_id:
                    self.touched(sandbox_id)
            try:
                self.commit()
            except Exception:
                _log.exception("could not write the state")
                return False
            return True

        async def committing_send(message: Message) -> None:
            nonlocal failed, streamed
            if failed:
                return
            kind = message["type"]
            if kind in ("http.response.start", "websocket.accept", "websocket.send", "websocket.close"):
                if not save():
                    failed = True
                    if kind == "http.response.start":
                        await _refuse(send)
                    else:
                        await send({"type": "websocket.close", "code": 1011})
                    return
            elif kind == "http.response.body":
                if message.get("more_body", False):
                    streamed = True
                elif streamed and not save():
                    failed = True
                    return  # the client sees the body cut short, never a completed answer
            await send(message)

        await self.app(scope, receive, committing_send)


async def _refuse(send: Send) -> None:
    body = json.dumps({"code": "state_not_saved", "message": "the change could not be written to the state file"})
    payload = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
