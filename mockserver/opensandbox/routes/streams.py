"""What execd's route modules share: their context and execd's SSE streams.

A started command streams ``init`` (its id), then its runtime's events; a background one ends at once with
``execution_complete``. A client that goes away abandons its foreground command
(:func:`~..model.execd.abandon`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mockserver.asgi.middleware import notes
from mockserver.asgi.streams import WatchedStream
from mockserver.core import IdFactory, VirtualClock

from ..execution import Execd
from ..model import execd
from ..model.execd import RunRequest, frame
from ..model.operations import OpenSandboxModel
from ..model.records import SandboxRecord

__all__ = ["SSE_HEADERS", "ExecdContext", "command_stream", "event_stream"]

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


@dataclass(frozen=True)
class ExecdContext:
    """What execd's routes use: the state (an OOM kill fails a sandbox), the clock, ids and what execd runs on."""

    state: OpenSandboxModel
    clock: VirtualClock
    ids: IdFactory
    execd: Execd


def command_stream(
    request: Request, ctx: ExecdContext, sb: SandboxRecord, run: RunRequest, session_id: str | None = None
) -> Response:
    """Start ``run`` (in bash session ``session_id`` when given) and stream its events."""
    notes(request.scope).unknown_fields.extend(run.unknown_fields)
    commands = ctx.execd.commands
    if session_id is None:
        record, execution = commands.start(sb, run)
    else:
        record, execution = commands.run_in_session(sb, session_id, run)
    init = {"type": "init", "text": record.id, "timestamp": ctx.clock.now_ms()}

    async def events() -> AsyncIterator[bytes]:
        yield frame(init)
        if run.background:
            yield frame({"type": "execution_complete", "execution_time": 0, "timestamp": ctx.clock.now_ms()})
            return
        async for event in execution.events():
            yield frame(event)

    return WatchedStream(
        events(), media_type="text/event-stream", headers=SSE_HEADERS, on_disconnect=lambda: execd.abandon(record)
    )


def event_stream(events: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
    """Stream events that belong to no command record (a code cell's) as execd's SSE frames."""

    async def frames() -> AsyncIterator[bytes]:
        async for event in events:
            yield frame(event)

    return StreamingResponse(frames(), media_type="text/event-stream", headers=SSE_HEADERS)
