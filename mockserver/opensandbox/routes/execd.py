"""execd's routes (port 44772), one table for every runtime: parse, call :mod:`..model.execd`, run, render.

Commands, bash sessions and metrics are here; the code interpreter is :mod:`.code` and PTY sessions
:mod:`.pty`. What they run on is the mock's :class:`~..execution.Execd` (an interface: no runtime is
imported here); a route of a capability the runtime lacks answers that capability's documented refusal.

Each handler takes the :class:`~.streams.ExecdContext` and the request; :data:`ROWS` lists them and
:func:`~mockserver.asgi.handlers.bind` makes one route of each path, listing its methods and answering HEAD
as GET, as execd's router (one route per path, with its methods) does.

A foreground command's events stream as execd's SSE frames, and a client that goes away abandons its
command (:func:`~..model.execd.abandon`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.requests import read_json

from ..model import execd
from ..model.execd import TAIL_CURSOR_HEADER
from .code import code_routes
from .pty import pty_routes
from .render import sandbox_of, via_proxy
from .streams import SSE_HEADERS, ExecdContext, command_stream

__all__ = ["ROWS", "SSE_HEADERS", "ExecdContext", "execd_routes"]


async def ping(ctx: ExecdContext, request: Request) -> Response:
    """Answer 200."""
    sandbox_of(request)
    return Response(status_code=200)


async def run(ctx: ExecdContext, request: Request) -> Response:
    """Run a command and stream its events."""
    sb = sandbox_of(request)
    body = await read_json(request, empty=None)
    return command_stream(request, ctx, sb, execd.prepare_run(ctx.state, sb, body, via_proxy=via_proxy(request.scope)))


async def interrupt(ctx: ExecdContext, request: Request) -> Response:
    """Interrupt the command ``id``."""
    execd.interrupt(sandbox_of(request), request.query_params.get("id"))
    return Response(status_code=200)


async def status(ctx: ExecdContext, request: Request) -> Response:
    """Return a command's status."""
    return JSONResponse(execd.command_status(sandbox_of(request), request.path_params["id"]))


async def logs(ctx: ExecdContext, request: Request) -> Response:
    """Return a command's output after ``cursor``, with the next cursor in a header."""
    chunk = execd.command_logs(sandbox_of(request), request.path_params["id"], request.query_params.get("cursor"))
    return PlainTextResponse(chunk.text, headers={TAIL_CURSOR_HEADER: str(chunk.cursor)})


async def create_session(ctx: ExecdContext, request: Request) -> Response:
    """Create a bash session."""
    sb = sandbox_of(request)
    return JSONResponse(execd.create_session(sb, ctx.ids, await read_json(request, empty={})))


async def run_in_session(ctx: ExecdContext, request: Request) -> Response:
    """Run a command in a bash session and stream its events."""
    sb = sandbox_of(request)
    body = await read_json(request, empty=None)
    sid = request.path_params["sid"]
    return command_stream(request, ctx, sb, execd.prepare_session_run(sb, sid, body), session_id=sid)


async def delete_session(ctx: ExecdContext, request: Request) -> Response:
    """Delete a bash session."""
    sb = sandbox_of(request)
    execd.delete_session(sb, request.path_params["sid"])
    ctx.execd.commands.forget_session(sb, request.path_params["sid"])
    return Response(status_code=200)


async def metrics(ctx: ExecdContext, request: Request) -> Response:
    """Return the sandbox's metrics."""
    return JSONResponse(await ctx.execd.commands.metrics(sandbox_of(request)))


#: Commands, bash sessions and metrics.
ROWS: list[Row[ExecdContext]] = [
    Row("/ping", "GET", ping),
    Row("/command", "POST", run),
    Row("/command", "DELETE", interrupt),
    Row("/command/status/{id}", "GET", status),
    Row("/command/{id}/logs", "GET", logs),
    Row("/session", "POST", create_session),
    Row("/session/{sid}/run", "POST", run_in_session),
    Row("/session/{sid}", "DELETE", delete_session),
    Row("/metrics", "GET", metrics),
]


def execd_routes(ctx: ExecdContext) -> list[BaseRoute]:
    """Return execd's routes (but its files') of the sandbox the port gate admitted."""
    return [*bind(ctx, ROWS, per_method=False), *code_routes(ctx), *pty_routes(ctx)]
