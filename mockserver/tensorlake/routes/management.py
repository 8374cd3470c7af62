"""The in-sandbox management API's routes (port 9501 behind the proxy): parse, ask the rules, run, render.

The proxy puts the admitted sandbox in the request's scope. Validation, bodies and error codes are the
model's (:mod:`..model.management`); commands go to the process runtime (:mod:`..execution`), whose events
``POST /api/v1/processes/run`` and the ``follow`` routes stream as ``text/event-stream`` ``data:`` frames. A
client that goes away ends its stream; a ``run``'s process then ends too, a followed process runs on.

PTY sessions and TCP tunnels (a runtime with terminals only, else 501) are WebSockets: the PTY's binary
frames are the SDK's (first byte 0x00 data, 0x01 resize with big-endian ``cols, rows``, 0x02 ready from the
client, 0x03 exit with a big-endian ``int32`` code from the server, which then closes with reason
``exit:<code>``); a tunnel relays raw bytes in binary messages to one TCP connection inside the sandbox.
A refused WebSocket gets the daemon's HTTP answer instead of the upgrade (501 ``not_supported`` on a runtime
without terminals, 400 for a bad ``?port=``, 404/401 for a PTY session or its token), as execd's PTY route
does on the OpenSandbox side; a server without the ASGI ``websocket.http.response`` extension accepts it and
closes it at once with code ``4000 + status`` and the error code as the reason, so a refusal never reads as
the proxy's 403.

The handlers are module functions of a :class:`ManagementContext`; :data:`ROWS` (HTTP) and :data:`SOCKETS`
are the tables :func:`management_routes` binds.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from mockserver.asgi.blocking import offload, piece_response
from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_body, read_json
from mockserver.asgi.streams import WatchedStream
from mockserver.asgi.websockets import deny
from mockserver.core.clock import VirtualClock
from mockserver.core.errors import ApiError
from mockserver.runtime import Output, Terminal

from ..execution import ProcessRuntime
from ..model import management as rules
from ..model.daemon import Daemon, ProcessRecord
from ..model.operations import TensorLakeModel
from ..model.records import Sandbox
from .common import SANDBOX_KEY, daemon_error, daemon_error_handler

OP_DATA, OP_RESIZE, OP_READY, OP_EXIT = 0x00, 0x01, 0x02, 0x03
API = "/api/v1"

__all__ = ["ROWS", "SOCKETS", "ManagementContext", "management_app", "management_routes", "sse"]


@dataclass(frozen=True)
class ManagementContext:
    """What the management API uses: the model (daemon records), the process runtime, the clock and the terminals."""

    model: TensorLakeModel
    runtime: ProcessRuntime
    clock: VirtualClock
    #: The open PTY sessions' terminals, by sandbox id and session id.
    terminals: dict[tuple[str, str], Terminal] = field(default_factory=dict)


#: A WebSocket handler: the context and the socket in.
Socket = Callable[["ManagementContext", WebSocket], Awaitable[None]]


def sse(
    events: AsyncIterator[dict[str, Any]],
    first: Iterable[dict[str, Any]] = (),
    on_disconnect: Callable[[], None] | None = None,
) -> StreamingResponse:
    """Return an event stream response with one ``data:`` frame per event; it stops when the client goes away."""

    async def frames() -> AsyncIterator[bytes]:
        for event in first:
            yield f"data: {json.dumps(event)}\n\n".encode()
        async for event in events:
            yield f"data: {json.dumps(event)}\n\n".encode()

    return WatchedStream(
        frames(), media_type="text/event-stream", headers={"cache-control": "no-cache"}, on_disconnect=on_disconnect
    )


def _sandbox(request: Request) -> Sandbox:
    """Return the sandbox the proxy routed this request to."""
    sandbox: Sandbox = request.scope["state"][SANDBOX_KEY]
    return sandbox


def _daemon(ctx: ManagementContext, request: Request) -> Daemon:
    """Return the daemon state of the request's sandbox."""
    return ctx.model.daemon_of(_sandbox(request))


def _find(ctx: ManagementContext, request: Request) -> tuple[Daemon, ProcessRecord]:
    """Return the daemon and the process named by the path's ``ref`` (404 if none)."""
    daemon = _daemon(ctx, request)
    return daemon, daemon.find(request.path_params["ref"])


# -- processes -------------------------------------------------------------------------------


async def run(ctx: ManagementContext, request: Request) -> Response:
    """Run a command to completion, streaming its output and exit as server-sent events."""
    spec = rules.command_spec(await read_json(request), run=True, unknown=notes(request.scope).unknown_fields)
    daemon = _daemon(ctx, request)
    proc = ctx.runtime.spawn(_sandbox(request), daemon, spec)
    events = ctx.runtime.follow(daemon, proc, "output", with_exit=True)
    abandon = lambda: ctx.runtime.kill(daemon, proc, rules.ABANDONED_RUN_SIGNAL)  # noqa: E731
    return sse(events, first=[proc.started_event()], on_disconnect=abandon)


async def processes(ctx: ManagementContext, request: Request) -> Response:
    """List processes (GET) or start one in the background (POST, 201)."""
    daemon = _daemon(ctx, request)
    if request.method == "GET":
        return JSONResponse(rules.processes_body(daemon))
    spec = rules.start_spec(daemon, await read_json(request), notes(request.scope).unknown_fields)
    return JSONResponse(ctx.runtime.spawn(_sandbox(request), daemon, spec).info(), status_code=201)


async def process(ctx: ManagementContext, request: Request) -> Response:
    """Return (GET) or kill (DELETE) one process."""
    daemon, proc = _find(ctx, request)
    if request.method == "DELETE":
        await ctx.runtime.stop(daemon, proc)
    return JSONResponse(proc.info())


async def restart(ctx: ManagementContext, request: Request) -> Response:
    """Kill a process and start its command again under a new pid."""
    daemon, proc = _find(ctx, request)
    await ctx.runtime.stop(daemon, proc)
    return JSONResponse(ctx.runtime.spawn(_sandbox(request), daemon, proc.spec()).info())


async def signal(ctx: ManagementContext, request: Request) -> Response:
    """Send a signal to the process (the emulator has no handlers: any signal ends it)."""
    daemon, proc = _find(ctx, request)
    number = rules.signal_number(await read_json(request))
    running = proc.running
    ctx.runtime.kill(daemon, proc, number)
    return JSONResponse(rules.signal_body(running))


async def stdin(ctx: ManagementContext, request: Request) -> Response:
    """Feed bytes to a process's stdin pipe."""
    daemon, proc = _find(ctx, request)
    data = await read_body(request)
    rules.stdin_target(proc)
    await ctx.runtime.write_stdin(daemon, proc, data)
    return Response(status_code=204)


async def stdin_close(ctx: ManagementContext, request: Request) -> Response:
    """Close a process's stdin."""
    daemon, proc = _find(ctx, request)
    was_open = proc.stdin_writable
    rules.close_stdin(proc)
    if was_open:
        await ctx.runtime.close_stdin(daemon, proc)
    return Response(status_code=204)


async def output(ctx: ManagementContext, request: Request) -> Response:
    """Return what a process wrote to stdout, stderr or both (``output``)."""
    stream = rules.stream_name(request.path_params["stream"])
    _, proc = _find(ctx, request)
    return JSONResponse(rules.output_body(proc, stream))


async def follow(ctx: ManagementContext, request: Request) -> Response:
    """Stream a process's output events until it ends."""
    stream = rules.stream_name(request.path_params["stream"])
    daemon, proc = _find(ctx, request)
    return sse(ctx.runtime.follow(daemon, proc, stream, with_exit=False))


# -- files -----------------------------------------------------------------------------------


async def files(ctx: ManagementContext, request: Request) -> Response:
    """Read (GET, streamed), write (PUT, raw body) or delete (DELETE) the file at ``?path=``.

    A runtime's real files are worked on in a worker thread (``offload``), never on the event loop.
    """
    fs = _sandbox(request).fs
    raw = request.query_params.get("path")
    if request.method == "PUT":
        rules.file_path(raw)
        body = await read_body(request, rules.FILE_LIMIT)
        await offload(fs.blocking, rules.write_file, fs, raw, body)
        return Response(status_code=204)
    if request.method == "DELETE":
        await offload(fs.blocking, rules.delete_file, fs, raw)
        return Response(status_code=204)
    stream = await offload(fs.blocking, rules.open_file, fs, raw)
    return piece_response(
        stream.chunks(), blocking=fs.blocking, close=stream.close, headers={"content-length": str(stream.size)}
    )


async def list_files(ctx: ManagementContext, request: Request) -> Response:
    """List the directory at ``?path=``."""
    fs = _sandbox(request).fs
    return JSONResponse(await offload(fs.blocking, rules.list_directory, fs, request.query_params.get("path")))


# -- daemon ----------------------------------------------------------------------------------


async def health(ctx: ManagementContext, request: Request) -> Response:
    """Report the daemon healthy."""
    _daemon(ctx, request)
    return JSONResponse(rules.HEALTH)


async def info(ctx: ManagementContext, request: Request) -> Response:
    """Report the daemon version, uptime and process counts."""
    return JSONResponse(_daemon(ctx, request).info(ctx.clock.now()))


async def unsupported(ctx: ManagementContext, request: Request) -> Response:
    """Refuse PTY sessions and TCP tunnels."""
    raise rules.unsupported()


# -- PTY sessions and tunnels ------------------------------------------------------------------


async def create_pty(ctx: ManagementContext, request: Request) -> Response:
    """Start a program on a new PTY; answer its session id and the token its WebSocket presents."""
    if not ctx.runtime.capabilities.pty:
        raise rules.unsupported()
    spec = rules.pty_spec(await read_json(request), notes(request.scope).unknown_fields)
    sandbox = _sandbox(request)
    daemon = _daemon(ctx, request)
    terminal = await ctx.runtime.open_terminal(sandbox, spec)
    session = rules.open_pty(daemon, spec, ctx.clock.now())
    ctx.terminals[(sandbox.id, session.session_id)] = terminal
    return JSONResponse({"session_id": session.session_id, "token": session.token}, status_code=201)


async def delete_pty(ctx: ManagementContext, request: Request) -> Response:
    """End a PTY session and its program."""
    if not ctx.runtime.capabilities.pty:
        raise rules.unsupported()
    sandbox = _sandbox(request)
    session = rules.pty_session(_daemon(ctx, request), request.path_params["session"], None, need_token=False)
    _daemon(ctx, request).ptys.pop(session.session_id, None)
    terminal = ctx.terminals.pop((sandbox.id, session.session_id), None)
    if terminal is not None:
        terminal.kill()
    return Response(status_code=204)


async def pty_socket(ctx: ManagementContext, websocket: WebSocket) -> None:
    """Drive a PTY session: keystrokes and resizes in, the terminal's output and its exit code out."""
    sandbox: Sandbox = websocket.scope["state"][SANDBOX_KEY]
    token = websocket.headers.get("x-pty-token") or websocket.query_params.get("token")
    try:
        if not ctx.runtime.capabilities.pty:
            raise rules.unsupported()
        session = rules.pty_session(ctx.model.daemon_of(sandbox), websocket.path_params["session"], token)
    except ApiError as refusal:
        await deny(websocket, daemon_error(refusal), status=refusal.status, code=refusal.code)
        return
    terminal = ctx.terminals.get((sandbox.id, session.session_id))
    if terminal is None:
        await websocket.close(code=1008, reason="session terminated")
        return
    await websocket.accept()

    async def output() -> None:
        async for event in terminal.events():
            if isinstance(event, Output):
                await websocket.send_bytes(bytes([OP_DATA]) + event.data)
            else:
                code = event.shell_code
                await websocket.send_bytes(bytes([OP_EXIT]) + struct.pack(">i", code))
                await websocket.close(code=1000, reason=f"exit:{code}")
                return

    async def keyboard() -> None:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            if not data:
                continue
            if data[0] == OP_DATA:
                terminal.write_stdin(data[1:])
            elif data[0] == OP_RESIZE and len(data) >= 5:
                cols, rows = struct.unpack(">HH", data[1:5])
                terminal.resize(rows, cols)

    await _until_first(output(), keyboard())


async def tunnel_socket(ctx: ManagementContext, websocket: WebSocket) -> None:
    """Relay one TCP connection to ``?port=`` inside the sandbox over binary WebSocket messages."""
    sandbox: Sandbox = websocket.scope["state"][SANDBOX_KEY]
    try:
        if not ctx.runtime.capabilities.ports:
            raise rules.unsupported()
        port = rules.tunnel_port(websocket.query_params.get("port"))
        reader, writer = await ctx.runtime.open_port(sandbox, port)
    except ApiError as refusal:
        await deny(websocket, daemon_error(refusal), status=refusal.status, code=refusal.code)
        return
    except OSError:
        await websocket.close(code=1011, reason="connection refused")
        return
    await websocket.accept()

    async def outbound() -> None:
        while data := await reader.read(65536):
            await websocket.send_bytes(data)
        await websocket.close(code=1000)

    async def inbound() -> None:
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                data = message.get("bytes") or (message.get("text") or "").encode()
                writer.write(data)
                await writer.drain()

    try:
        await _until_first(outbound(), inbound())
    finally:
        writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await writer.wait_closed()


#: The management API's HTTP routes (its WebSockets are :data:`SOCKETS`), in the order they match.
ROWS: tuple[Row[ManagementContext], ...] = (
    Row(f"{API}/processes/run", "POST", run),
    Row(f"{API}/processes", "GET", processes),
    Row(f"{API}/processes", "POST", processes),
    Row(f"{API}/processes/{{ref}}", "GET", process),
    Row(f"{API}/processes/{{ref}}", "DELETE", process),
    Row(f"{API}/processes/{{ref}}/restart", "POST", restart),
    Row(f"{API}/processes/{{ref}}/signal", "POST", signal),
    Row(f"{API}/processes/{{ref}}/stdin", "POST", stdin),
    Row(f"{API}/processes/{{ref}}/stdin/close", "POST", stdin_close),
    Row(f"{API}/processes/{{ref}}/{{stream:str}}", "GET", output),
    Row(f"{API}/processes/{{ref}}/{{stream:str}}/follow", "GET", follow),
    *(Row(f"{API}/files", method, files) for method in ("GET", "PUT", "DELETE")),
    Row(f"{API}/files/list", "GET", list_files),
    Row(f"{API}/health", "GET", health),
    Row(f"{API}/info", "GET", info),
    Row(f"{API}/pty", "POST", create_pty),
    Row(f"{API}/pty/{{session}}", "DELETE", delete_pty),
    *(Row(f"{API}/pty{{rest:path}}", method, unsupported) for method in ("GET", "POST", "DELETE")),
    *(Row(f"{API}/tunnels{{rest:path}}", method, unsupported) for method in ("GET", "POST")),
)
#: The management API's WebSockets: a PTY session's terminal and a TCP tunnel.
SOCKETS: tuple[tuple[str, Socket], ...] = (
    (f"{API}/pty/{{session}}/ws", pty_socket),
    (f"{API}/tunnels/tcp", tunnel_socket),
)


def management_routes(ctx: ManagementContext) -> list[BaseRoute]:
    """Return the management API's routes bound to ``ctx``: :data:`ROWS`, then :data:`SOCKETS`."""
    sockets: list[BaseRoute] = [WebSocketRoute(path, functools.partial(socket, ctx)) for path, socket in SOCKETS]
    return bind(ctx, ROWS, per_method=False) + sockets


def management_app(ctx: ManagementContext) -> Starlette:
    """Return the ASGI app behind ``<id>.<domain>`` (port 9501); refusals render in the daemon's shape."""
    return Starlette(routes=management_routes(ctx), exception_handlers={ApiError: daemon_error_handler})


async def _until_first(*jobs: Any) -> None:
    """Run coroutines until the first one ends (or fails on a closed connection); cancel the rest."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, Exception) and not isinstance(result, WebSocketDisconnect | OSError | RuntimeError):
            raise result
