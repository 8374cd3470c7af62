"""A streaming response that notices its client going away even while it has nothing to send.

Starlette's :class:`StreamingResponse` (ASGI 2.4 servers) learns of a gone client only when a write fails, so
a stream waiting for a silent command never learns of it and holds its work forever. :class:`WatchedStream`
listens for ``http.disconnect`` throughout, stops the stream, and calls ``on_disconnect`` when the client
left before the last chunk.

The stream is sent from the request's own task and one small task listens: when the client goes away the
listener cancels the request's task, and when the stream ends the listener is cancelled. (A task group would
add a second task and a cancel scope to every request.) The listener starts two turns of the event loop after
the stream: a stream that has ended by then (a short command's answer) needs none, and one that still waits
is watched from then on, so a silent stream still notices its client going away.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Callable, Mapping

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
        streaming = asyncio.current_task()
        assert streaming is not None
        loop = asyncio.get_running_loop()
        gone = over = False
        listener: asyncio.Task[None] | None = None

        async def listen() -> None:
            nonlocal gone
            await self.listen_for_disconnect(receive)
            gone = True
            streaming.cancel()

        def start_listening() -> None:
            nonlocal listener
            if not over:
                listener = loop.create_task(listen())

        # The listener starts two turns of the loop from now: a stream that ends by then (a short command's
        # whole answer: its task runs one turn, the stream sends the next) never needs one.
        loop.call_soon(loop.call_soon, start_listening)
        finished = False
        try:
            await self.stream_response(send)
            finished = True
        except OSError:
            pass  # the client is gone: the write failed
        except asyncio.CancelledError:
            if not gone:
                raise  # cancelled from outside, not by the listener
            streaming.uncancel()
        finally:
            over = True
            if listener is not None:
                listener.cancel()
        error = listener.exception() if listener is not None and listener.done() and not listener.cancelled() else None
        if error is not None:
            raise error  # the receive channel failed
        if not finished and self.on_disconnect is not None:
            self.on_disconnect()
