"""A streaming response that notices its client going away even while it has nothing to send.

Starlette's :class:`StreamingResponse` (ASGI 2.4 servers) learns of a gone client only when a write fails, so
a stream waiting for a silent command never learns of it and holds its work forever. :class:`WatchedStream`
listens for ``http.disconnect`` throughout, stops the stream, and calls ``on_disconnect`` when the client
left before the last chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Mapping

import anyio
import anyio.abc
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["WatchedStream"]


class WatchedStream(StreamingResponse):
    """Stream ``content``; if the client goes away first, stop it and call ``on_disconnect``."""

    def __init__(
        self,
        content: AsyncIterable[bytes],
        *,
        media_type: str,
        headers: Mapping[str, str] | None = None,
        on_disconnect: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self.on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False

        async def stream(group: anyio.abc.TaskGroup) -> None:
            nonlocal finished
            try:
                await self.stream_response(send)
                finished = True
            except OSError:
                pass  # the client is gone: the write failed
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(stream, group)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()
        if not finished and self.on_disconnect is not None:
            self.on_disconnect()
