"""execd's routes that need real processes (``runtime="linux"``): bash sessions that keep their state, code
contexts, PTY sessions over WebSockets, and metrics of the real processes.

They come before the emulator's execd routes in the execd port's router, so ``/session/{id}/run`` and
``/metrics`` are these where the runtime is linux. Parsing and refusals are the model's
(:mod:`..model.execd`, :mod:`..model.code`, :mod:`..model.pty`); the processes are the runtime's
(:mod:`..linux_runtime`, :mod:`..linux_code`, :mod:`..linux_pty`). A refused PTY WebSocket gets execd's
HTTP answer (404 ``CONTEXT_NOT_FOUND``, 409 ``ALREADY_CONNECTED``) instead of the upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.core import ApiError, VirtualClock
from mockserver.runtime.linux import LinuxBackend, SpawnError

from ..linux_code import CodeContexts
from ..linux_pty import Holder, PtySession, PtySessions
from ..linux_runtime import LinuxCommandRuntime
from ..model import code as code_rules
from ..model import execd
from ..model import pty as pty_rules
from ..model.execd import frame
from ..model.records import SandboxRecord
from .render import SANDBOX_KEY, error_response, sandbox_of

__all__ = ["LiveContext", "live_routes"]

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


@dataclass
class LiveContext:
    """What these routes use: the clock, the runtime's commands, code contexts and PTYs, and the sandboxes."""

    clock: VirtualClock
    commands: LinuxCommandRuntime
    code: CodeContexts
    ptys: PtySessions
    backend: LinuxBackend[SandboxRecord]
    samples: dict[str, tuple[float, float]] = field(default_factory=dict)


def _stream(events: AsyncIterator[dict[str, object]]) -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes]:
        async for event in events:
            yield frame(event)

    return StreamingResponse(frames(), media_type="text/event-stream", headers=SSE_HEADERS)


def live_routes(ctx: LiveContext) -> list[BaseRoute]:
    """Return the session, code, PTY and metrics routes of the sandbox the port gate admitted."""
    clock = ctx.clock

    async def run_in_session(request: Request) -> Response:
        sb = sandbox_of(request)
        body = await read_json(request, empty=None)
        run = execd.prepare_session_run(sb, request.path_params["sid"], body)
        notes(request.scope).unknown_fields.extend(run.unknown_fields)
        record, execution = ctx.commands.start_session_run(sb, request.path_params["sid"], run)
        init = {"type": "init", "text": record.id, "timestamp": clock.now_ms()}

        async def events() -> AsyncIterator[dict[str, object]]:
            yield init
            async for event in execution.events():
                yield event

        return _stream(events())

    async def delete_session(request: Request) -> Response:
        sb = sandbox_of(request)
        execd.delete_session(sb, request.path_params["sid"])
        ctx.commands.forget_session(sb, request.path_params["sid"])
        return Response(status_code=200)

    async def metrics(request: Request) -> Response:
        sb = sandbox_of(request)
        usage = await ctx.backend.usage(sb)
        now = time.monotonic()
        last = ctx.samples.get(sb.id)
        ctx.samples[sb.id] = (now, usage.cpu_seconds)
        cpus = max(1, usage.cpu_count)
        percent = (
            0.0 if last is None or now <= last[0] else (usage.cpu_seconds - last[1]) / (now - last[0]) / cpus * 100
        )
        return JSONResponse(execd.usage_metrics(sb, percent, usage.memory_bytes, clock.now_ms()))

    # -- code contexts -----------------------------------------------------------------------------

    async def create_context(request: Request) -> Response:
        sb = sandbox_of(request)
        language, cwd = code_rules.parse_context(await read_json(request, empty=None))
        context = await ctx.code.create(sb, language, cwd)
        return JSONResponse(code_rules.context_body(context))

    async def run_code(request: Request) -> Response:
        sb = sandbox_of(request)
        run = code_rules.parse_run(await read_json(request, empty=None))
        if run.context_id is None and run.language is None:
            command = execd.RunRequest(run.code, dict(sb.spec.env), "/", None)
            record, execution = ctx.commands.start(sb, command)
            init = {"type": "init", "text": record.id, "timestamp": clock.now_ms()}

            async def as_command() -> AsyncIterator[dict[str, object]]:
                yield init
                async for event in execution.events():
                    yield event

            return _stream(as_command())
        live = await ctx.code.target(sb, run)
        return _stream(ctx.code.run(sb, live, run.code))

    async def interrupt_code(request: Request) -> Response:
        sb = sandbox_of(request)
        ctx.code.interrupt(sb, code_rules.require_id(request.query_params.get("id")))
        return Response(status_code=200)

    async def contexts(request: Request) -> Response:
        sb = sandbox_of(request)
        language = request.query_params.get("language")
        if request.method == "DELETE":
            ctx.code.delete_language(sb, code_rules.require_language(language))
            return Response(status_code=200)
        return JSONResponse([code_rules.context_body(c) for c in ctx.code.list(sb, language)])

    async def context(request: Request) -> Response:
        sb = sandbox_of(request)
        ident = request.path_params["cid"]
        if request.method == "DELETE":
            ctx.code.delete(sb, ident)
            return Response(status_code=200)
        return JSONResponse(code_rules.context_body(ctx.code.get(sb, ident)))

    # -- PTY sessions ------------------------------------------------------------------------------

    async def create_pty(request: Request) -> Response:
        sb = sandbox_of(request)
        pty_request = pty_rules.parse_create(await read_json(request, empty=None))
        if pty_request.cwd is not None:
            execd.resolve_cwd(sb, pty_request.cwd)
        session = ctx.ptys.create(sb, pty_request)
        return JSONResponse({"session_id": session.id}, status_code=201)

    async def pty_status(request: Request) -> Response:
        sb = sandbox_of(request)
        session = ctx.ptys.get(sb, request.path_params["sid"])
        return JSONResponse(pty_rules.status_body(session.id, session.running, session.total))

    async def delete_pty(request: Request) -> Response:
        sb = sandbox_of(request)
        ctx.ptys.delete(sb, request.path_params["sid"])
        return Response(status_code=200)

    async def pty_socket(websocket: WebSocket) -> None:
        sb = websocket.scope["state"][SANDBOX_KEY]
        attach = pty_rules.parse_attach(dict(websocket.query_params))
        try:
            session = ctx.ptys.get(sb, websocket.path_params["sid"])
            if session.holder is not None and not attach.takeover:
                raise pty_rules.already_connected(session.id)
        except ApiError as refusal:
            await _deny(websocket, refusal)
            return
        await websocket.accept()
        if session.holder is not None:
            await session.holder.evict()
        holder = Holder(lambda: _evict(websocket))
        session.holder = holder
        try:
            await _serve_pty(ctx, sb, session, holder, websocket, attach)
        finally:
            if session.holder is holder:
                session.holder = None

    return [
        Route("/session/{sid}/run", run_in_session, methods=["POST"]),
        Route("/session/{sid}", delete_session, methods=["DELETE"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/code/context", create_context, methods=["POST"]),
        Route("/code", run_code, methods=["POST"]),
        Route("/code", interrupt_code, methods=["DELETE"]),
        Route("/code/contexts", contexts, methods=["GET", "DELETE"]),
        Route("/code/contexts/{cid}", context, methods=["GET", "DELETE"]),
        Route("/pty", create_pty, methods=["POST"]),
        Route("/pty/{sid}", pty_status, methods=["GET"]),
        Route("/pty/{sid}", delete_pty, methods=["DELETE"]),
        WebSocketRoute("/pty/{sid}/ws", pty_socket),
    ]


async def _deny(websocket: WebSocket, refusal: ApiError) -> None:
    """Refuse a WebSocket with execd's HTTP answer where the server can send one, else close it."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(error_response(refusal))
    else:
        await websocket.close(code=4000 + refusal.status, reason=refusal.code)


async def _evict(websocket: WebSocket) -> None:
    with contextlib.suppress(Exception):
        await websocket.close(code=pty_rules.TAKEN_OVER_CLOSE, reason="TAKEN_OVER")


async def _serve_pty(
    ctx: LiveContext,
    sb: SandboxRecord,
    session: PtySession,
    holder: Holder,
    websocket: WebSocket,
    attach: pty_rules.Attach,
) -> None:
    """Start the shell if needed, replay, announce, then relay both ways until the shell ends or the client goes."""
    try:
        if session.process is None:
            await session.start(ctx.backend, sb, attach.pipe)
    except (SpawnError, OSError) as exc:
        await websocket.send_text(pty_rules.error_frame("START_FAILED", str(exc)))
        await websocket.close()
        return
    if attach.since is not None:
        offset, data = session.replay(attach.since)
        if data:
            await websocket.send_bytes(bytes([pty_rules.REPLAY]) + offset.to_bytes(8, "big") + data)
    await websocket.send_text(pty_rules.connected_frame(session.id, session.pipe))
    if session.exit_code is not None:
        await websocket.send_text(pty_rules.exit_frame(session.exit_code))
        await websocket.close(code=1000, reason="process exited")
        return

    async def output() -> None:
        while True:
            item = await holder.queue.get()
            if isinstance(item, int):
                await websocket.send_text(pty_rules.exit_frame(item))
                await websocket.close(code=1000, reason="process exited")
                return
            channel, data = item
            await websocket.send_bytes(bytes([channel]) + data)

    async def keyboard() -> None:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is not None:
                data = message["bytes"]
                if data and data[0] == pty_rules.STDIN:
                    session.write(data[1:])
                continue
            client = pty_rules.client_frame(message.get("text") or "")
            if client is None:
                continue
            if client.kind == "resize":
                session.resize(client.rows, client.cols)
            elif client.kind == "signal":
                session.signal(client.signal)
            elif client.kind == "stdin":
                session.write(client.data)
            elif client.kind == "ping":
                await websocket.send_text('{"type":"pong"}')
            else:
                await websocket.send_text(pty_rules.error_frame("INVALID_FRAME", "unknown frame type"))

    tasks = [asyncio.ensure_future(output()), asyncio.ensure_future(keyboard())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for result in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(result, Exception) and not isinstance(result, WebSocketDisconnect | RuntimeError | OSError):
                raise result
