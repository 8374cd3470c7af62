"""execd's PTY routes (port 44772): sessions and their WebSocket, on a runtime with the ``pty`` capability.

Parsing, frames and refusals are :mod:`..model.pty`'s; the sessions are the runtime's
(:class:`~..execution.PtySessions`). A refused WebSocket gets execd's HTTP answer (404 ``CONTEXT_NOT_FOUND``,
409 ``ALREADY_CONNECTED``) instead of the upgrade. Where the runtime has no terminals (the command emulator)
``POST /pty`` answers 501 ``NOT_SUPPORTED`` (:func:`~..model.execd.create_pty`), a session's routes find no
session (404 ``CONTEXT_NOT_FOUND``), as execd answers a session it does not have, and its WebSocket is
closed before the handshake as a path the port does not serve (4404, see :mod:`.ports`).

Each handler takes the :class:`~.streams.ExecdContext` and the request; :data:`ROWS` lists them, bound as
execd's other routes (one route per path, HEAD as GET), and the WebSocket route follows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.requests import read_json
from mockserver.asgi.websockets import deny
from mockserver.core import ApiError

from ..execution import Holder, PtySession, PtySessions
from ..model import execd
from ..model import pty as pty_rules
from ..model.records import SandboxRecord
from .ports import NOT_SERVED_CLOSE
from .render import SANDBOX_KEY, error_response, sandbox_of
from .streams import ExecdContext

__all__ = ["ROWS", "pty_routes", "pty_socket"]


def _session(ptys: PtySessions | None, sb: SandboxRecord, session_id: str) -> PtySession:
    """Return the session ``session_id`` (404 ``CONTEXT_NOT_FOUND`` where the runtime has no terminals)."""
    if ptys is None:
        raise pty_rules.session_not_found(session_id)
    return ptys.get(sb, session_id)


async def create_pty(ctx: ExecdContext, request: Request) -> Response:
    """Create a PTY session (201), or answer 501 where the runtime has no terminals."""
    sb = sandbox_of(request)
    ptys = ctx.execd.ptys
    body = await read_json(request, empty=None)
    if ptys is None:
        execd.create_pty(body)
    pty_request = pty_rules.parse_create(body)
    if pty_request.cwd is not None:
        execd.resolve_cwd(sb, pty_request.cwd)
    session = ptys.create(sb, pty_request)
    return JSONResponse({"session_id": session.id}, status_code=201)


async def pty_status(ctx: ExecdContext, request: Request) -> Response:
    """Return a session's status."""
    session = _session(ctx.execd.ptys, sandbox_of(request), request.path_params["sid"])
    return JSONResponse(pty_rules.status_body(session.id, session.running, session.total))


async def delete_pty(ctx: ExecdContext, request: Request) -> Response:
    """Delete a session."""
    sb = sandbox_of(request)
    _session(ctx.execd.ptys, sb, request.path_params["sid"])
    assert ctx.execd.ptys is not None
    ctx.execd.ptys.delete(sb, request.path_params["sid"])
    return Response(status_code=200)


async def pty_socket(ctx: ExecdContext, websocket: WebSocket) -> None:
    """Attach a WebSocket to a session (or refuse it with execd's HTTP answer) and relay until either ends."""
    sb = websocket.scope["state"][SANDBOX_KEY]
    attach = pty_rules.parse_attach(dict(websocket.query_params))
    ptys = ctx.execd.ptys
    if ptys is None:  # execd takes no WebSocket on this runtime
        await websocket.close(code=NOT_SERVED_CLOSE, reason="not found")
        return
    try:
        session = _session(ptys, sb, websocket.path_params["sid"])
        if session.holder is not None and not attach.takeover:
            raise pty_rules.already_connected(session.id)
    except ApiError as refusal:
        await deny(websocket, error_response(refusal), status=refusal.status, code=refusal.code)
        return
    await websocket.accept()
    if session.holder is not None:
        await session.holder.evict()
    holder = Holder(lambda: _evict(websocket))
    session.holder = holder
    try:
        await _serve(ptys, sb, session, holder, websocket, attach)
    finally:
        if session.holder is holder:
            session.holder = None


#: The PTY sessions' HTTP routes (their WebSocket is :func:`pty_socket`, a route of its own).
ROWS: list[Row[ExecdContext]] = [
    Row("/pty", "POST", create_pty),
    Row("/pty/{sid}", "GET", pty_status),
    Row("/pty/{sid}", "DELETE", delete_pty),
]


def pty_routes(ctx: ExecdContext) -> list[BaseRoute]:
    """Return the PTY routes of the sandbox the port gate admitted: :data:`ROWS`, then the WebSocket."""
    return [*bind(ctx, ROWS, per_method=False), WebSocketRoute("/pty/{sid}/ws", functools.partial(pty_socket, ctx))]


async def _evict(websocket: WebSocket) -> None:
    with contextlib.suppress(Exception):
        await websocket.close(code=pty_rules.TAKEN_OVER_CLOSE, reason="TAKEN_OVER")


async def _serve(
    ptys: PtySessions,
    sb: SandboxRecord,
    session: PtySession,
    holder: Holder,
    websocket: WebSocket,
    attach: pty_rules.Attach,
) -> None:
    """Start the shell if needed, replay, announce, then relay both ways until the shell ends or the client goes."""
    if not session.started:
        failure = await ptys.start(sb, session, attach.pipe)
        if failure is not None:
            await websocket.send_text(pty_rules.error_frame("START_FAILED", failure))
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
