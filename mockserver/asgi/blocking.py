"""Run a sandbox's blocking file work off the event loop, and stream a file piece by piece.

A file system whose ``blocking`` is true (the linux runtime's host files) does real I/O: :func:`offload`
runs its calls in a worker thread so one sandbox's slow disk, or a file that is not what it seems, never
stalls the other tenants' requests; the emulator's in-memory tree (``blocking`` false) is called in place.
:func:`piece_response` sends an iterator of pieces, each one taken in a worker thread when blocking, so a
large file is neither read whole nor read on the loop, and the transport's flow control paces the reads.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import ParamSpec, TypeVar

import anyio.to_thread
from starlette.responses import StreamingResponse

__all__ = ["offload", "piece_response"]

T = TypeVar("T")
P = ParamSpec("P")


async def offload(blocking: bool, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Return ``call(*args, **kwargs)``, run in a worker thread when ``blocking``."""
    if blocking:
        return await anyio.to_thread.run_sync(functools.partial(call, *args, **kwargs))
    return call(*args, **kwargs)


def piece_response(
    pieces: Iterator[bytes],
    *,
    blocking: bool,
    close: Callable[[], None],
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    media_type: str = "application/octet-stream",
) -> StreamingResponse:
    """Return a response streaming ``pieces`` (taken off the loop when ``blocking``); ``close`` runs at the end."""

    async def body() -> AsyncIterator[bytes]:
        try:
            while True:
                piece = await offload(blocking, next, pieces, None)
                if piece is None:
                    return
                yield piece
        finally:
            close()

    return StreamingResponse(body(), status_code=status, headers=headers, media_type=media_type)
