"""The in-sandbox management API's routes (port 9501 behind the proxy): parse, ask the rules, run, render.

The proxy puts the admitted sandbox in the request's scope. Validation, bodies and error codes are the
model's (:mod:`..model.management`); commands go to the process runtime (:mod:`..processes`), whose events
``POST /api/v1/processes/run`` and the ``follow`` routes stream as ``text/event-stream`` ``data:`` frames. A
client that goes away ends its stream; a ``run``'s process then ends too, a followed process runs on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_body, read_json
from mockserver.asgi.streams import WatchedStream
from mockserver.core.clock import VirtualClock
from mockserver.core.errors import ApiError

from ..model import management as rules
from ..model.daemon import Daemon, ProcessRecord
from ..model.records import Sandbox
from ..model.state import TensorLakeModel
from ..processes import ProcessRuntime
from .common import SANDBOX_KEY, daemon_error_handler

__all__ = ["ManagementApi", "ManagementContext", "sse"]


@dataclass(frozen=True)
class ManagementContext:
    """What the management API uses: the model (daemon records), the process runtime and the clock."""

    model: TensorLakeModel
    runtime: ProcessRuntime
    clock: VirtualClock


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


class ManagementApi:
    """The ASGI app behind ``<id>.<domain>`` (port 9501)."""

    def __init__(self, context: ManagementContext) -> None:
        self.model = context.model
        self.runtime = context.runtime
        self.clock = context.clock
        p = "/api/v1"
        self.app = Starlette(
            routes=[
                Route(f"{p}/processes/run", self.run, methods=["POST"]),
                Route(f"{p}/processes", self.processes, methods=["GET", "POST"]),
                Route(f"{p}/processes/{{ref}}", self.process, methods=["GET", "DELETE"]),
                Route(f"{p}/processes/{{ref}}/restart", self.restart, methods=["POST"]),
                Route(f"{p}/processes/{{ref}}/signal", self.signal, methods=["POST"]),
                Route(f"{p}/processes/{{ref}}/stdin", self.stdin, methods=["POST"]),
                Route(f"{p}/processes/{{ref}}/stdin/close", self.stdin_close, methods=["POST"]),
                Route(f"{p}/processes/{{ref}}/{{stream:str}}", self.output, methods=["GET"]),
                Route(f"{p}/processes/{{ref}}/{{stream:str}}/follow", self.follow, methods=["GET"]),
                Route(f"{p}/files", self.files, methods=["GET", "PUT", "DELETE"]),
                Route(f"{p}/files/list", self.list_files, methods=["GET"]),
                Route(f"{p}/health", self.health, methods=["GET"]),
                Route(f"{p}/info", self.info, methods=["GET"]),
                Route(f"{p}/pty{{rest:path}}", self.unsupported, methods=["GET", "POST", "DELETE"]),
                Route(f"{p}/tunnels{{rest:path}}", self.unsupported, methods=["GET", "POST"]),
            ],
            exception_handlers={ApiError: daemon_error_handler},
        )

    def sandbox(self, request: Request) -> Sandbox:
        """Return the sandbox the proxy routed this request to."""
        sandbox: Sandbox = request.scope["state"][SANDBOX_KEY]
        return sandbox

    def daemon(self, request: Request) -> Daemon:
        """Return the daemon state of the request's sandbox."""
        return self.model.daemon_of(self.sandbox(request))

    def find(self, request: Request) -> tuple[Daemon, ProcessRecord]:
        """Return the daemon and the process named by the path's ``ref`` (404 if none)."""
        daemon = self.daemon(request)
        return daemon, daemon.find(request.path_params["ref"])

    # -- processes -------------------------------------------------------------------------------

    async def run(self, request: Request) -> Response:
        """Run a command to completion, streaming its output and exit as server-sent events."""
        spec = rules.command_spec(await read_json(request), run=True, unknown=notes(request.scope).unknown_fields)
        daemon = self.daemon(request)
        proc = self.runtime.spawn(self.sandbox(request), daemon, spec)
        events = self.runtime.follow(daemon, proc, "output", with_exit=True)
        abandon = lambda: self.runtime.kill(daemon, proc, rules.ABANDONED_RUN_SIGNAL)  # noqa: E731
        return sse(events, first=[proc.started_event()], on_disconnect=abandon)

    async def processes(self, request: Request) -> Response:
        """List processes (GET) or start one in the background (POST, 201)."""
        daemon = self.daemon(request)
        if request.method == "GET":
            return JSONResponse(rules.processes_body(daemon))
        spec = rules.start_spec(daemon, await read_json(request), notes(request.scope).unknown_fields)
        return JSONResponse(self.runtime.spawn(self.sandbox(request), daemon, spec).info(), status_code=201)

    async def process(self, request: Request) -> Response:
        """Return (GET) or kill (DELETE) one process."""
        daemon, proc = self.find(request)
        if request.method == "DELETE":
            self.runtime.kill(daemon, proc)
        return JSONResponse(proc.info())

    async def restart(self, request: Request) -> Response:
        """Kill a process and start its command again under a new pid."""
        daemon, proc = self.find(request)
        self.runtime.kill(daemon, proc)
        return JSONResponse(self.runtime.spawn(self.sandbox(request), daemon, proc.spec()).info())

    async def signal(self, request: Request) -> Response:
        """Send a signal: it ends a running process (the emulator has no handlers)."""
        daemon, proc = self.find(request)
        number = rules.signal_number(await read_json(request))
        running = proc.running
        self.runtime.kill(daemon, proc, number)
        return JSONResponse(rules.signal_body(running))

    async def stdin(self, request: Request) -> Response:
        """Accept bytes for a process's stdin (not fed to the emulator)."""
        _, proc = self.find(request)
        await read_body(request)
        rules.stdin_target(proc)
        return Response(status_code=204)

    async def stdin_close(self, request: Request) -> Response:
        """Close a process's stdin."""
        _, proc = self.find(request)
        rules.close_stdin(proc)
        return Response(status_code=204)

    async def output(self, request: Request) -> Response:
        """Return what a process wrote to stdout, stderr or both (``output``)."""
        stream = rules.stream_name(request.path_params["stream"])
        _, proc = self.find(request)
        return JSONResponse(rules.output_body(proc, stream))

    async def follow(self, request: Request) -> Response:
        """Stream a process's output events until it ends."""
        stream = rules.stream_name(request.path_params["stream"])
        daemon, proc = self.find(request)
        return sse(self.runtime.follow(daemon, proc, stream, with_exit=False))

    # -- files -----------------------------------------------------------------------------------

    async def files(self, request: Request) -> Response:
        """Read (GET), write (PUT, raw body) or delete (DELETE) the file at ``?path=``."""
        fs = self.sandbox(request).fs
        raw = request.query_params.get("path")
        if request.method == "PUT":
            rules.file_path(raw)
            rules.write_file(fs, raw, await read_body(request, rules.FILE_LIMIT))
            return Response(status_code=204)
        if request.method == "DELETE":
            rules.delete_file(fs, raw)
            return Response(status_code=204)
        return Response(rules.read_file(fs, raw), media_type="application/octet-stream")

    async def list_files(self, request: Request) -> Response:
        """List the directory at ``?path=``."""
        return JSONResponse(rules.list_directory(self.sandbox(request).fs, request.query_params.get("path")))

    # -- daemon ----------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        """Report the daemon healthy."""
        self.daemon(request)
        return JSONResponse(rules.HEALTH)

    async def info(self, request: Request) -> Response:
        """Report the daemon version, uptime and process counts."""
        return JSONResponse(self.daemon(request).info(self.clock.now()))

    async def unsupported(self, request: Request) -> Response:
        """Refuse PTY sessions and TCP tunnels."""
        raise rules.unsupported()
