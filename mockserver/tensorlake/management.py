"""The in-sandbox management API (port 9501 behind the proxy): processes, files, health and info.

Commands run in the shared command emulator against the sandbox's in-memory filesystem; ``Sleep``
steps wait on the mock's virtual clock, and a run's ``timeout`` is enforced on that clock.
``POST /api/v1/processes/run`` streams ``text/event-stream``: a started event ``{"pid","started_at"}``,
one ``{"line","timestamp","stream"}`` event per output line, and an exit event
``{"exit_code", "reason": "exited"}`` or ``{"signal": 9, "reason": "timed_out"|"signaled"}``.

Known deviations from the real daemon: PTY sessions and TCP tunnels answer 501 ``not_supported``;
stdin written to a process is accepted but not fed to it; ``user``, restart policies and health
checks are recorded, not enforced; every command runs as the emulator's default user.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_body, read_json
from mockserver.core.errors import ApiError
from mockserver.sandbox.filesystem import FsError, normpath
from mockserver.sandbox.steps import Exit, Output, Sleep

from .records import Sandbox, ms

if TYPE_CHECKING:
    from .mock import TensorLakeMock

SANDBOX_KEY = "tensorlake_sandbox"
FILE_LIMIT = 64 * 1024 * 1024
LOG_LIMIT = 10_000
STREAMS = ("stdout", "stderr")
VERSION = "sandproof-mock"
_FS_STATUS = {"not_found": 404, "is_a_directory": 400, "not_a_directory": 400, "invalid_path": 400}


def runtime_error(status: int, code: str, message: str) -> ApiError:
    """Return a management API error (``error`` mirrors ``message``, as the daemon's body has it)."""
    return ApiError(status, code, message, error=message)


@dataclass
class Process:
    """One process the daemon started and what it wrote."""

    pid: int
    command: str
    args: list[str]
    started_at: float
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    name: str | None = None
    status: str = "running"
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    ended_at: float | None = None
    stdin_writable: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    partial: dict[str, bytes] = field(default_factory=lambda: {s: b"" for s in STREAMS})
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def info(self) -> dict[str, Any]:
        """Return the ProcessInfo JSON."""
        data: dict[str, Any] = {
            "pid": self.pid,
            "handle": self.pid,
            "status": self.status,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "stdin_writable": self.stdin_writable,
            "command": self.command,
            "args": self.args,
            "started_at": ms(self.started_at),
            "ended_at": ms(self.ended_at),
        }
        if self.name is not None:
            data["name"] = self.name
        return data

    def lines(self, stream: str) -> list[str]:
        """Return the lines written to ``stream`` (``output``: both, in order)."""
        return [e["line"] for e in self.events if "line" in e and stream in ("output", e["stream"])]

    def exit_event(self) -> dict[str, Any]:
        """Return the exit event of a finished process."""
        if self.signal is not None:
            return {"signal": self.signal, "reason": self.reason or "signaled"}
        return {"exit_code": self.exit_code, "reason": self.reason or "exited"}


class Runtime:
    """The daemon state of one sandbox: its processes and the log lines they wrote."""

    def __init__(self, mock: TensorLakeMock, sandbox: Sandbox) -> None:
        self.mock = mock
        self.sandbox = sandbox
        self.started = mock.clock.now()
        self.processes: dict[int, Process] = {}
        self.next_pid = 100
        self.logs: list[dict[str, Any]] = []
        self.loop: asyncio.AbstractEventLoop | None = None

    def find(self, ref: str) -> Process:
        """Return the process with this pid or name; 404 if there is none."""
        ref = unquote(ref)
        if ref.isascii() and ref.isdigit() and int(ref) in self.processes:
            return self.processes[int(ref)]
        for proc in self.processes.values():
            if proc.name == ref:
                return proc
        raise runtime_error(404, "process_not_found", f"process {ref!r} not found")

    def spawn(self, body: dict[str, Any], *, timeout: float | None = None) -> Process:
        """Start a command as a background task and return its process."""
        command = body["command"]
        args = list(body.get("args") or [])
        proc = Process(
            pid=self.next_pid,
            command=command,
            args=args,
            started_at=self.mock.clock.now(),
            env=dict(body.get("env") or {}),
            working_dir=body.get("working_dir"),
            name=body.get("name"),
            stdin_writable=body.get("stdin_mode") == "pipe",
        )
        self.next_pid += 1
        self.processes[proc.pid] = proc
        self.loop = asyncio.get_running_loop()
        proc.task = asyncio.create_task(self._execute(proc, timeout))
        return proc

    async def _execute(self, proc: Process, timeout: float | None) -> None:
        emulator = self.mock.emulator_for(self.sandbox)
        cwd = proc.working_dir or "/"
        elapsed = 0.0
        try:
            steps = emulator.run([proc.command, *proc.args], env=proc.env, cwd=cwd)
            for step in steps:
                if isinstance(step, Output):
                    self._write(proc, step.stream, step.data)
                elif isinstance(step, Sleep):
                    if timeout is not None and elapsed + step.seconds > timeout:
                        await self.mock.clock.async_sleep(max(0.0, timeout - elapsed))
                        self.finish(proc, signal=9, reason="timed_out")
                        return
                    await self.mock.clock.async_sleep(step.seconds)
                    elapsed += step.seconds
                elif isinstance(step, Exit):
                    self.finish(proc, exit_code=step.code)
                    return
            self.finish(proc, exit_code=0)
        except asyncio.CancelledError:
            self.finish(proc, signal=9, reason="signaled")
            raise
        except Exception as exc:  # an emulator bug must still end the stream cleanly
            self._write(proc, "stderr", f"sandproof: command failed in the emulator: {exc}\n".encode())
            self.finish(proc, exit_code=127)

    def _write(self, proc: Process, stream: str, data: bytes) -> None:
        buffered = proc.partial[stream] + data
        *complete, rest = buffered.split(b"\n")
        proc.partial[stream] = rest
        for raw in complete:
            self._line(proc, stream, raw)

    def _line(self, proc: Process, stream: str, raw: bytes) -> None:
        now = self.mock.clock.now()
        line = raw.decode("utf-8", "replace")
        proc.events.append({"line": line, "timestamp": ms(now), "stream": stream})
        self._log(proc, stream, line, now)
        proc.changed.set()

    def _log(self, proc: Process, stream: str, line: str, now: float) -> None:
        level = 3 if stream == "stdout" else 5
        signal: dict[str, Any] = {
            "timestamp": ms(now),
            "uuid": self.mock.ids.uuid4(),
            "namespace": self.sandbox.namespace,
            "application": "",
            "sandboxId": self.sandbox.id,
            "resourceAttributes": [],
            "body": line,
            "logAttributes": json.dumps({"stream": stream, "pid": proc.pid, "command": proc.command}),
            "allocations": [],
            "functionRuns": [],
            "level": level,
        }
        entry = {"level": level, "processId": str(proc.pid), "body": line, "signal": signal, "pid": proc.pid}
        self.logs.append(entry)
        del self.logs[:-LOG_LIMIT]

    def finish(
        self, proc: Process, *, exit_code: int | None = None, signal: int | None = None, reason: str | None = None
    ) -> None:
        """Mark ``proc`` ended (flushing partial lines); later calls are ignored."""
        if proc.status != "running":
            return
        for stream in STREAMS:
            if proc.partial[stream]:
                self._line(proc, stream, proc.partial[stream])
                proc.partial[stream] = b""
        proc.exit_code, proc.signal, proc.reason = exit_code, signal, reason
        proc.status = "signaled" if signal is not None else "exited"
        proc.ended_at = self.mock.clock.now()
        proc.stdin_writable = False
        proc.changed.set()

    def kill(self, proc: Process, signal: int = 9) -> None:
        """End a running process with ``signal``."""
        if proc.status != "running":
            return
        self.finish(proc, signal=signal, reason="signaled")
        if proc.task is not None:
            proc.task.cancel()

    def close(self) -> None:
        """Kill every process (the sandbox is gone); safe from any thread."""
        loop = self.loop
        for proc in list(self.processes.values()):
            if proc.task is None or proc.task.done():
                continue
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(self.kill, proc)

    async def follow(self, proc: Process, stream: str, *, with_exit: bool) -> AsyncIterator[dict[str, Any]]:
        """Yield the process's output events as they come (and the exit event when asked)."""
        sent = 0
        while True:
            proc.changed.clear()
            while sent < len(proc.events):
                event = proc.events[sent]
                sent += 1
                if stream in ("output", event["stream"]):
                    yield event
            if proc.status != "running":
                if with_exit:
                    yield proc.exit_event()
                return
            await proc.changed.wait()


def sse(events: AsyncIterator[dict[str, Any]], first: Iterable[dict[str, Any]] = ()) -> StreamingResponse:
    """Return an event stream response with one ``data:`` frame per event."""

    async def frames() -> AsyncIterator[bytes]:
        for event in first:
            yield f"data: {json.dumps(event)}\n\n".encode()
        async for event in events:
            yield f"data: {json.dumps(event)}\n\n".encode()

    return StreamingResponse(frames(), media_type="text/event-stream", headers={"cache-control": "no-cache"})


RUN_KEYS = frozenset({"command", "args", "env", "working_dir", "timeout", "user"})
START_KEYS = RUN_KEYS - {"timeout"} | {
    "stdin_mode",
    "stdout_mode",
    "stderr_mode",
    "name",
    "restart",
    "health_check",
}


def _command_body(request: Request, body: Any, *, run: bool) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise runtime_error(400, "invalid_type", "request body must be a JSON object")
    known = RUN_KEYS if run else START_KEYS
    notes(request.scope).unknown_fields.extend(sorted(k for k in body if k not in known))
    command = body.get("command")
    if not isinstance(command, str) or not command:
        raise runtime_error(400, "invalid_command", "command must be a non-empty string")
    args = body.get("args")
    if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
        raise runtime_error(400, "invalid_type", "args must be a list of strings")
    env = body.get("env")
    if env is not None and (
        not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise runtime_error(400, "invalid_type", "env must map strings to strings")
    cwd = body.get("working_dir")
    if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
        raise runtime_error(400, "invalid_working_dir", "working_dir must be an absolute path")
    if run:
        timeout = body.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0):
            raise runtime_error(400, "invalid_timeout", "timeout must be a non-negative number of seconds")
    return body


class ManagementApi:
    """The ASGI app behind ``<id>.sandbox.<domain>`` (port 9501); the proxy puts the sandbox in scope."""

    def __init__(self, mock: TensorLakeMock) -> None:
        self.mock = mock
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
            exception_handlers=mock.exception_handlers(),
        )

    def runtime(self, request: Request) -> Runtime:
        """Return the runtime of the sandbox the proxy routed this request to."""
        sandbox: Sandbox = request.scope["state"][SANDBOX_KEY]
        return self.mock.runtime_of(sandbox)

    # -- processes -------------------------------------------------------------------------------

    async def run(self, request: Request) -> Response:
        """Run a command to completion, streaming its output and exit as server-sent events."""
        body = _command_body(request, await read_json(request), run=True)
        runtime = self.runtime(request)
        proc = runtime.spawn(body, timeout=body.get("timeout"))
        started = {"pid": proc.pid, "started_at": ms(proc.started_at)}
        return sse(runtime.follow(proc, "output", with_exit=True), first=[started])

    async def processes(self, request: Request) -> Response:
        """List processes (GET) or start one in the background (POST, 201)."""
        runtime = self.runtime(request)
        if request.method == "GET":
            return JSONResponse({"processes": [p.info() for p in runtime.processes.values()]})
        body = _command_body(request, await read_json(request), run=False)
        name = body.get("name")
        if name is not None and any(p.name == name and p.status == "running" for p in runtime.processes.values()):
            raise runtime_error(409, "process_name_in_use", f"a process named {name!r} is running")
        return JSONResponse(runtime.spawn(body).info(), status_code=201)

    async def process(self, request: Request) -> Response:
        """Return (GET) or kill (DELETE) one process."""
        runtime = self.runtime(request)
        proc = runtime.find(request.path_params["ref"])
        if request.method == "DELETE":
            runtime.kill(proc)
        return JSONResponse(proc.info())

    async def restart(self, request: Request) -> Response:
        """Kill a process and start its command again under a new pid."""
        runtime = self.runtime(request)
        proc = runtime.find(request.path_params["ref"])
        runtime.kill(proc)
        body = {"command": proc.command, "args": proc.args, "env": proc.env, "working_dir": proc.working_dir}
        fresh = runtime.spawn({**body, "name": proc.name})
        return JSONResponse(fresh.info())

    async def signal(self, request: Request) -> Response:
        """Send a signal: it ends a running process (the emulator has no handlers)."""
        runtime = self.runtime(request)
        proc = runtime.find(request.path_params["ref"])
        body = await read_json(request)
        number = body.get("signal") if isinstance(body, dict) else None
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 64:
            raise runtime_error(400, "invalid_signal", "signal must be an integer from 1 to 64")
        running = proc.status == "running"
        runtime.kill(proc, number)
        return JSONResponse({"success": running})

    async def stdin(self, request: Request) -> Response:
        """Accept bytes for a process's stdin (not fed to the emulator)."""
        proc = self.runtime(request).find(request.path_params["ref"])
        await read_body(request)
        if not proc.stdin_writable:
            raise runtime_error(409, "stdin_closed", f"process {proc.pid} does not accept stdin")
        return Response(status_code=204)

    async def stdin_close(self, request: Request) -> Response:
        """Close a process's stdin."""
        proc = self.runtime(request).find(request.path_params["ref"])
        proc.stdin_writable = False
        return Response(status_code=204)

    async def output(self, request: Request) -> Response:
        """Return what a process wrote to stdout, stderr or both (``output``)."""
        stream = request.path_params["stream"]
        if stream not in ("stdout", "stderr", "output"):
            raise runtime_error(404, "not_found", f"unknown process resource {stream!r}")
        proc = self.runtime(request).find(request.path_params["ref"])
        lines = proc.lines(stream)
        return JSONResponse({"pid": proc.pid, "lines": lines, "line_count": len(lines)})

    async def follow(self, request: Request) -> Response:
        """Stream a process's output events until it ends."""
        stream = request.path_params["stream"]
        if stream not in ("stdout", "stderr", "output"):
            raise runtime_error(404, "not_found", f"unknown process resource {stream!r}")
        runtime = self.runtime(request)
        proc = runtime.find(request.path_params["ref"])
        return sse(runtime.follow(proc, stream, with_exit=False))

    # -- files -----------------------------------------------------------------------------------

    def _path(self, request: Request) -> str:
        raw = request.query_params.get("path")
        if not raw:
            raise runtime_error(400, "missing_path", "query parameter path is required")
        if ".." in raw.split("/"):
            raise runtime_error(403, "path_traversal", "paths must not contain '..'")
        try:
            return normpath(raw)
        except FsError as exc:
            raise runtime_error(400, exc.code, exc.message) from exc

    async def files(self, request: Request) -> Response:
        """Read (GET), write (PUT, raw body) or delete (DELETE) the file at ``?path=``."""
        path = self._path(request)
        sandbox: Sandbox = request.scope["state"][SANDBOX_KEY]
        fs = sandbox.fs
        try:
            if request.method == "PUT":
                data = await read_body(request, FILE_LIMIT)
                fs.write(path, data, parents=True)
                return Response(status_code=204)
            if request.method == "DELETE":
                fs.remove(path, recursive=True)
                return Response(status_code=204)
            return Response(fs.read(path), media_type="application/octet-stream")
        except FsError as exc:
            raise runtime_error(_FS_STATUS.get(exc.code, 409), exc.code, exc.message) from exc

    async def list_files(self, request: Request) -> Response:
        """List the directory at ``?path=``."""
        path = self._path(request)
        sandbox: Sandbox = request.scope["state"][SANDBOX_KEY]
        try:
            entries = sandbox.fs.listdir(path)
        except FsError as exc:
            raise runtime_error(_FS_STATUS.get(exc.code, 409), exc.code, exc.message) from exc
        return JSONResponse(
            {
                "path": path,
                "entries": [
                    {"name": e.name, "is_dir": e.is_dir, "size": e.size, "modified_at": ms(e.mtime)} for e in entries
                ],
            }
        )

    # -- daemon ----------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        """Report the daemon healthy."""
        self.runtime(request)
        return JSONResponse({"healthy": True})

    async def info(self, request: Request) -> Response:
        """Report the daemon version, uptime and process counts."""
        runtime = self.runtime(request)
        procs = runtime.processes.values()
        return JSONResponse(
            {
                "version": VERSION,
                "uptime_secs": int(self.mock.clock.now() - runtime.started),
                "running_processes": sum(p.status == "running" for p in procs),
                "total_processes": len(runtime.processes),
            }
        )

    async def unsupported(self, request: Request) -> Response:
        """Refuse PTY sessions and TCP tunnels."""
        raise runtime_error(501, "not_supported", "PTY sessions and TCP tunnels are not implemented by this mock")
