"""execd's routes (port 44772), one table for every runtime: parse, call :mod:`..model.execd`, run, render.

Commands, bash sessions and metrics are here; the code interpreter is :mod:`.code` and PTY sessions
:mod:`.pty`. What they run on is the mock's :class:`~..execution.Execd` (an interface: no runtime is
imported here); a route of a capability the runtime lacks answers that capability's documented refusal.

A foreground command's events stream as execd's SSE frames, and a client that goes away abandons its
command (:func:`~..model.execd.abandon`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.requests import read_json

from ..model import execd
from ..model.execd import TAIL_CURSOR_HEADER
from .code import code_routes
from .pty import pty_routes
from .render import sandbox_of, via_proxy
from .streams import SSE_HEADERS, ExecdContext, command_stream

__all__ = ["SSE_HEADERS", "ExecdContext", "execd_routes"]


def execd_routes(ctx: ExecdContext) -> list[BaseRoute]:
    """Return execd's routes (but its files') of the sandbox the port gate admitted."""
    commands = ctx.execd.commands

    async def ping(request: Request) -> Response:
        sandbox_of(request)
        return Response(status_code=200)

    async def run(request: Request) -> Response:
        sb = sandbox_of(request)
        body = await read_json(request, empty=None)
        return command_stream(
            request, ctx, sb, execd.prepare_run(ctx.state, sb, body, via_proxy=via_proxy(request.scope))
        )

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
        return command_stream(request, ctx, sb, execd.prepare_session_run(sb, sid, body), session_id=sid)

    async def delete_session(request: Request) -> Response:
        sb = sandbox_of(request)
        execd.delete_session(sb, request.path_params["sid"])
        commands.forget_session(sb, request.path_params["sid"])
        return Response(status_code=200)

    async def metrics(request: Request) -> Response:
        return JSONResponse(await commands.metrics(sandbox_of(request)))

    return [
        Route("/ping", ping, methods=["GET"]),
        Route("/command", run, methods=["POST"]),
        Route("/command", interrupt, methods=["DELETE"]),
        Route("/command/status/{id}", status, methods=["GET"]),
        Route("/command/{id}/logs", logs, methods=["GET"]),
        Route("/session", create_session, methods=["POST"]),
        Route("/session/{sid}/run", run_in_session, methods=["POST"]),
        Route("/session/{sid}", delete_session, methods=["DELETE"]),
        Route("/metrics", metrics, methods=["GET"]),
        *code_routes(ctx),
        *pty_routes(ctx),
    ]
