"""The in-sandbox execd (port 44772): ping, commands over SSE, status, logs, interrupt, sessions, metrics.

Errors are execd's ``{"code", "message"}`` bodies; an execd access token, when configured, is
checked like execd's middleware (401 ``{"error": ...}``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.core import ApiError
from mockserver.sandbox.filesystem import FsError, normpath

from .commands import Execution, frame
from .models import CommandRecord, SandboxRecord

if TYPE_CHECKING:
    from .mock import OpenSandboxMock

EXECD_TOKEN_HEADER = "x-execd-access-token"
TAIL_CURSOR_HEADER = "EXECD-COMMANDS-TAIL-CURSOR"
SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
_RUN_FIELDS = frozenset({"command", "argv", "cwd", "background", "timeout", "uid", "gid", "envs"})


def invalid(message: str) -> ApiError:
    """Return execd's 400 ``INVALID_REQUEST_BODY``."""
    return ApiError(400, "INVALID_REQUEST_BODY", message)


def missing_query(name: str) -> ApiError:
    """Return execd's 400 ``MISSING_QUERY``."""
    return ApiError(400, "MISSING_QUERY", f"missing query parameter: {name}")


class ExecdRoutes:
    """Serve execd for the sandbox the dispatcher put in the request scope."""

    def __init__(self, mock: OpenSandboxMock, sandbox: Callable[[Request], SandboxRecord]) -> None:
        self.mock = mock
        self.sandbox = sandbox

    def routes(self) -> list[BaseRoute]:
        """Return the command, session and metrics routes."""
        return [
            Route("/ping", self.ping, methods=["GET"]),
            Route("/command", self.run, methods=["POST"]),
            Route("/command", self.interrupt, methods=["DELETE"]),
            Route("/command/status/{id}", self.status, methods=["GET"]),
            Route("/command/{id}/logs", self.logs, methods=["GET"]),
            Route("/session", self.create_session, methods=["POST"]),
            Route("/session/{sid}/run", self.run_in_session, methods=["POST"]),
            Route("/session/{sid}", self.delete_session, methods=["DELETE"]),
            Route("/metrics", self.metrics, methods=["GET"]),
        ]

    def check_token(self, request: Request) -> Response | None:
        """Return execd's 401 when an access token is configured and missing or wrong."""
        token = self.mock.execd_token
        if token is not None and request.headers.get(EXECD_TOKEN_HEADER) != token:
            return JSONResponse(
                {"error": "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}, status_code=401
            )
        return None

    async def ping(self, request: Request) -> Response:
        """Answer readiness."""
        self.sandbox(request)
        return Response(status_code=200)

    async def _body(self, request: Request, fields: frozenset[str]) -> dict[str, Any]:
        body = await read_json(request, empty=None)
        if not isinstance(body, dict):
            raise invalid("invalid request body: expected a JSON object")
        notes(request.scope).unknown_fields.extend(sorted(set(body) - fields))
        return body

    def _cwd(self, sb: SandboxRecord, raw: Any, default: str = "/") -> str:
        if raw is None or raw == "":
            return default
        if not isinstance(raw, str):
            raise invalid("invalid request body: cwd must be a string")
        try:
            path = normpath(raw, "/")
            if not sb.fs.is_dir(path):
                raise ApiError(500, "RUNTIME_ERROR", f"chdir {raw}: no such file or directory")
        except FsError as exc:
            raise ApiError(500, "RUNTIME_ERROR", f"chdir {raw}: {exc.strerror.lower()}") from exc
        return path

    async def run(self, request: Request) -> Response:
        """Run a command and stream its events (or start it in the background)."""
        sb = self.sandbox(request)
        body = await self._body(request, _RUN_FIELDS)
        command = body.get("command")
        argv = body.get("argv")
        if argv is not None:
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                raise invalid("invalid request body: argv must be a non-empty list of strings")
            command = " ".join(_quote(a) for a in argv)
        if not isinstance(command, str) or not command.strip():
            raise invalid("invalid request body: command is required")
        timeout = body.get("timeout")
        if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
            raise invalid("invalid request body: timeout must be an integer (milliseconds)")
        envs = body.get("envs") or {}
        if not isinstance(envs, dict) or not all(isinstance(v, str) for v in envs.values()):
            raise invalid("invalid request body: envs must map names to strings")
        background = body.get("background", False)
        if not isinstance(background, bool):
            raise invalid("invalid request body: background must be a boolean")
        cwd = self._cwd(sb, body.get("cwd"))
        if sb.oom_on_next_exec:
            sb.oom_on_next_exec = False
            self.mock.state.fail(sb.id, *self.mock.profile.oom_status())
            return self.mock.backend_unreachable(request)
        env = {**sb.spec.env, **envs}
        return self._start(request, sb, command, env, cwd, timeout, background, argv)

    def _start(
        self,
        request: Request,
        sb: SandboxRecord,
        command: str,
        env: dict[str, str],
        cwd: str,
        timeout: int | None,
        background: bool,
        argv: list[str] | None = None,
    ) -> Response:
        clock = self.mock.clock
        record = CommandRecord(self.mock.ids.token(16, "0123456789abcdef"), command, background, clock.now())
        sb.commands[record.id] = record
        execution = Execution(
            record,
            self.mock.runner_for(sb),
            clock,
            env=env,
            cwd=cwd,
            timeout_ms=timeout,
            stream=not background,
            argv=argv,
        )
        execution.start()
        init = {"type": "init", "text": record.id, "timestamp": clock.now_ms()}

        async def events() -> AsyncIterator[bytes]:
            yield frame(init)
            if background:
                yield frame({"type": "execution_complete", "execution_time": 0, "timestamp": clock.now_ms()})
                return
            async for event in execution.events():
                yield frame(event)

        return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)

    def _record(self, sb: SandboxRecord, command_id: str) -> CommandRecord:
        record = sb.commands.get(command_id)
        if record is None:
            raise ApiError(404, "INVALID_REQUEST_BODY", f"command not found: {command_id}")
        return record

    async def interrupt(self, request: Request) -> Response:
        """Interrupt a command (SIGTERM; reported as ``signal: terminated``)."""
        sb = self.sandbox(request)
        command_id = request.query_params.get("id")
        if not command_id:
            raise missing_query("id")
        record = sb.commands.get(command_id)
        if record is None:
            raise invalid(f"command not found: {command_id}")
        record.cancel()
        return Response(status_code=200)

    async def status(self, request: Request) -> Response:
        """Return a command's status record."""
        sb = self.sandbox(request)
        return JSONResponse(self._record(sb, request.path_params["id"]).status_json())

    async def logs(self, request: Request) -> Response:
        """Return a background command's combined output from a byte cursor."""
        sb = self.sandbox(request)
        command_id = request.path_params["id"]
        record = sb.commands.get(command_id)
        if record is None or not record.background:
            raise invalid(f"command not found: {command_id}")
        raw = request.query_params.get("cursor", "0")
        try:
            cursor = int(raw)
        except ValueError:
            raise invalid(f"invalid cursor: {raw}") from None
        if cursor < 0:
            raise invalid(f"invalid cursor: {raw}")
        data = bytes(record.output)
        return PlainTextResponse(data[cursor:].decode("utf-8", "replace"), headers={TAIL_CURSOR_HEADER: str(len(data))})

    async def create_session(self, request: Request) -> Response:
        """Open a shell session (keeps its working directory)."""
        sb = self.sandbox(request)
        body = await read_json(request, empty={})
        if not isinstance(body, dict):
            raise invalid("invalid request body: expected a JSON object")
        cwd = self._cwd(sb, body.get("cwd"))
        session_id = self.mock.ids.token(16, "0123456789abcdef")
        sb.sessions[session_id] = cwd
        return JSONResponse({"session_id": session_id})

    async def run_in_session(self, request: Request) -> Response:
        """Run a command in a session and stream its events."""
        sb = self.sandbox(request)
        sid = request.path_params["sid"]
        body = await self._body(request, frozenset({"command", "cwd", "timeout"}))
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            raise invalid("invalid request body: command is required")
        timeout = body.get("timeout")
        if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
            raise invalid("invalid request body: timeout must be a non-negative integer (milliseconds)")
        if sid not in sb.sessions:
            # execd validates the body first, then reports the runner's ErrContextNotFound as a runtime error.
            raise ApiError(500, "RUNTIME_ERROR", "error running in session. context not found")
        cwd = self._cwd(sb, body.get("cwd"), sb.sessions[sid])
        return self._start(request, sb, command, dict(sb.spec.env), cwd, timeout, False)

    async def delete_session(self, request: Request) -> Response:
        """Close a session."""
        sb = self.sandbox(request)
        sid = request.path_params["sid"]
        if sb.sessions.pop(sid, None) is None:
            raise ApiError(404, "CONTEXT_NOT_FOUND", f"session not found: {sid}")
        return Response(status_code=200)

    async def metrics(self, request: Request) -> Response:
        """Return resource metrics derived from the sandbox's limits."""
        sb = self.sandbox(request)
        limits = sb.spec.resource_limits
        running = sum(1 for c in sb.commands.values() if c.running)
        total = _mib(limits.get("memory", "2Gi"))
        return JSONResponse(
            {
                "cpu_count": _cpus(limits.get("cpu", "1")),
                "cpu_used_pct": min(100.0, 5.0 * running),
                "mem_total_mib": total,
                "mem_used_mib": round(min(total, 32.0 + 16.0 * running), 1),
                "timestamp": self.mock.clock.now_ms(),
            }
        )


def _quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "@%+=:,./-_" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _cpus(value: str) -> float:
    try:
        return float(value[:-1]) / 1000 if value.endswith("m") else float(value)
    except ValueError:
        return 1.0


def _mib(value: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0, "Ti": 1024.0 * 1024, "K": 1e3 / 2**20, "M": 1e6 / 2**20}
    units["G"] = 1e9 / 2**20
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            try:
                return round(float(value[: -len(suffix)]) * units[suffix], 1)
            except ValueError:
                return 2048.0
    try:
        return round(float(value) / 2**20, 1)
    except ValueError:
        return 2048.0
