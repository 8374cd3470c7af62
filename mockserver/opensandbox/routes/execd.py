"""execd's command, session and metrics routes (port 44772): parse, call :mod:`..model.execd`, render.

On the command emulator the code interpreter's routes answer :func:`~..model.code.not_supported`.

Commands run on the :class:`~..commands.CommandRuntime`; a foreground command's events stream as execd's
SSE frames, and a client that goes away abandons its command (:func:`~..model.execd.abandon`). A session's
run is the runtime's too (:meth:`~..commands.CommandRuntime.start_session_run`): it keeps the session's state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.asgi.streams import WatchedStream
from mockserver.core import IdFactory, VirtualClock

from ..commands import CommandRuntime
from ..model import code, execd
from ..model.execd import TAIL_CURSOR_HEADER, RunRequest, frame
from ..model.records import SandboxRecord
from ..model.state import OpenSandboxState
from .render import sandbox_of, via_proxy

__all__ = ["SSE_HEADERS", "ExecdContext", "execd_routes"]

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


@dataclass(frozen=True)
class ExecdContext:
    """What the execd routes use: the state (an OOM kill fails a sandbox), the clock, ids and the runtime."""

    state: OpenSandboxState
    clock: VirtualClock
    ids: IdFactory
    commands: CommandRuntime


def execd_routes(ctx: ExecdContext) -> list[BaseRoute]:
    """Return the command, session and metrics routes of the sandbox the port gate admitted."""
    clock = ctx.clock

    def stream(request: Request, sb: SandboxRecord, run: RunRequest, session: str | None = None) -> Response:
        notes(request.scope).unknown_fields.extend(run.unknown_fields)
        if session is None:
            record, execution = ctx.commands.start(sb, run)
        else:
            record, execution = ctx.commands.start_session_run(sb, session, run)
        init = {"type": "init", "text": record.id, "timestamp": clock.now_ms()}

        async def events() -> AsyncIterator[bytes]:
            yield frame(init)
            if run.background:
                yield frame({"type": "execution_complete", "execution_time": 0, "timestamp": clock.now_ms()})
                return
            async for event in execution.events():
                yield frame(event)

        return WatchedStream(
            events(), media_type="text/event-stream", headers=SSE_HEADERS, on_disconnect=lambda: execd.abandon(record)
        )

    async def ping(request: Request) -> Response:
        sandbox_of(request)
        return Response(status_code=200)

    async def run(request: Request) -> Response:
        sb = sandbox_of(request)
        body = await read_json(request, empty=None)
        return stream(request, sb, execd.prepare_run(ctx.state, sb, body, via_proxy=via_proxy(request.scope)))

    async def interrupt(request: Request) -> Response:
        execd.interrupt(sandbox_of(request), request.query_params.get("id"))
        return Response(status_code=200)

    async def status(request: Request) -> Response:
        return JSONResponse(execd.command_status(sandbox_of(request), request.path_params["id"]))

    async def logs(request: Request) -> Response:
        chunk = execd.command_logs(sandbox_of(request), request.path_params["id"], request.query_params.get("cursor"))
        return PlainTextResponse(chunk.text, headers={TAIL_CURSOR_HEADER: str(chunk.cursor)})

    async def create_session(request: Request) -> Response:
        sb = sandbox_of(request)
        return JSONResponse(execd.create_session(sb, ctx.ids, await read_json(request, empty={})))

    async def run_in_session(request: Request) -> Response:
        sb = sandbox_of(request)
        body = await read_json(request, empty=None)
        sid = request.path_params["sid"]
        return stream(request, sb, execd.prepare_session_run(sb, sid, body), session=sid)

    async def delete_session(request: Request) -> Response:
        sb = sandbox_of(request)
        execd.delete_session(sb, request.path_params["sid"])
        ctx.commands.forget_session(sb, request.path_params["sid"])
        return Response(status_code=200)

    async def create_pty(request: Request) -> Response:
        sandbox_of(request)
        execd.create_pty(await read_json(request, empty=None))

    async def pty_session(request: Request) -> Response:
        sandbox_of(request)
        execd.pty_session(request.path_params["sid"])

    async def code_not_supported(request: Request) -> Response:
        sandbox_of(request)
        raise code.not_supported()

    async def metrics(request: Request) -> Response:
        return JSONResponse(execd.metrics(sandbox_of(request), clock.now_ms()))

    return [
        Route("/ping", ping, methods=["GET"]),
        Route("/command", run, methods=["POST"]),
        Route("/command", interrupt, methods=["DELETE"]),
        Route("/command/status/{id}", status, methods=["GET"]),
        Route("/command/{id}/logs", logs, methods=["GET"]),
        Route("/session", create_session, methods=["POST"]),
        Route("/session/{sid}/run", run_in_session, methods=["POST"]),
        Route("/session/{sid}", delete_session, methods=["DELETE"]),
        Route("/pty", create_pty, methods=["POST"]),
        Route("/pty/{sid}", pty_session, methods=["GET", "DELETE"]),
        Route("/metrics", metrics, methods=["GET"]),
        # the code interpreter: a runtime with real processes serves it first (``routes.live``)
        Route("/code/context", code_not_supported, methods=["POST"]),
        Route("/code", code_not_supported, methods=["POST", "DELETE"]),
        Route("/code/contexts", code_not_supported, methods=["GET", "DELETE"]),
        Route("/code/contexts/{context_id}", code_not_supported, methods=["GET", "DELETE"]),
    ]
