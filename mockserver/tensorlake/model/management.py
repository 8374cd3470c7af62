"""The in-sandbox management API's rules (port 9501 behind the proxy): processes, files, health and info.

Each function validates one request of the management API or builds one of its bodies; the routes
(:mod:`mockserver.tensorlake.routes.management`) parse the HTTP request, call one of them, hand commands to
the process runtime, and render. Refusals are :class:`~mockserver.core.errors.ApiError`; the daemon's error
body is ``{"code", "message", "error"}`` (``error`` mirrors ``message``), which the routes render.

``POST /api/v1/processes/run`` streams ``text/event-stream``: a started event ``{"pid","started_at"}``, one
``{"line","timestamp","stream"}`` event per output line, and an exit event ``{"exit_code", "reason":
"exited"}`` or ``{"signal": 9, "reason": "timed_out"|"signaled"}``.

PTY sessions (``POST /api/v1/pty`` -> ``{"session_id", "token"}``, then a WebSocket on
``/api/v1/pty/{id}/ws`` presenting the token in ``X-PTY-Token`` or ``?token=``) and TCP tunnels (a WebSocket
on ``/api/v1/tunnels/tcp?port=N`` per connection, raw bytes in binary messages) are served by a runtime that
has terminals (``runtime="linux"``); the emulator answers them 501 ``not_supported`` (a WebSocket gets it as
the HTTP answer to its upgrade).

Known deviations from the real daemon: with the emulator, a sandbox's files hold at most 16 MiB (in the mock's
memory), not its ``disk_mb``, and a write beyond that answers 507 ``no_space`` (this mock's status) and writes
nothing; a process's piped stdin is fed to the emulated command that reads it (``cat`` echoes each write as it
comes, other readers such as ``wc``, ``grep`` or ``sh`` read it all once it is closed), a command that does not
read stdin ends at once as a real one does, and a run's ``timeout`` runs on the mock's virtual clock from the
process's start (emulated sleeps and the time it waits for stdin both count); ``user``, restart policies and health checks are recorded, not enforced; every command runs as the
sandbox's root; a run's ``timeout`` is at most one day; a PTY session's refusals (404
``pty_session_not_found``, 401 ``invalid_pty_token``, 400 ``invalid_port``) are this mock's own codes. The
process of ``POST /processes/run`` is killed (signal 9) when the client of its event stream goes away (the real
daemon's behaviour is not known); a follower that goes away stops following and the process runs on. A files
path of 4096 bytes or more, or with a name over 255 bytes, is 400 ``name_too_long`` (the kernel's ENAMETOOLONG;
the status is this mock's, as for the other filesystem errors).
"""

from __future__ import annotations

import math
from collections.abc import MutableSequence
from typing import Any

from mockserver.core.errors import ApiError
from mockserver.sandbox.filesystem import FileStream, FileSystem, FsError, normpath

from .daemon import CommandSpec, Daemon, ProcessRecord, PtySession, PtySpec
from .records import ms

__all__ = [
    "ABANDONED_RUN_SIGNAL",
    "FILE_LIMIT",
    "HEALTH",
    "MAX_RUN_TIMEOUT",
    "OUTPUT_STREAMS",
    "RUN_KEYS",
    "START_KEYS",
    "close_stdin",
    "command_spec",
    "delete_file",
    "file_path",
    "fs_error",
    "list_directory",
    "open_file",
    "open_pty",
    "output_body",
    "processes_body",
    "pty_session",
    "pty_spec",
    "pty_start_failed",
    "signal_body",
    "signal_number",
    "start_spec",
    "stdin_target",
    "stream_name",
    "tunnel_port",
    "unsupported",
    "write_file",
]

#: The signal that ends a ``run`` whose client went away (see the known deviations).
ABANDONED_RUN_SIGNAL = 9

FILE_LIMIT = 64 * 1024 * 1024
MAX_RUN_TIMEOUT = 86_400
OUTPUT_STREAMS = ("stdout", "stderr", "output")
HEALTH: dict[str, Any] = {"healthy": True}
_FS_STATUS = {
    "not_found": 404,
    "is_a_directory": 400,
    "not_a_directory": 400,
    "invalid_path": 400,
    "name_too_long": 400,
    "permission_denied": 403,
    "read_only": 403,
    "not_regular": 400,
    "no_space": 507,
}

RUN_KEYS = frozenset({"command", "args", "env", "working_dir", "timeout", "user"})
START_KEYS = RUN_KEYS - {"timeout"} | {
    "stdin_mode",
    "stdout_mode",
    "stderr_mode",
    "name",
    "restart",
    "health_check",
}


def command_spec(body: Any, *, run: bool, unknown: MutableSequence[str]) -> CommandSpec:
    """Validate a ``run`` (``run=True``) or ``start`` body; the keys the daemon does not know go to ``unknown``."""
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_type", "request body must be a JSON object")
    known = RUN_KEYS if run else START_KEYS
    unknown.extend(sorted(k for k in body if k not in known))
    command = body.get("command")
    if not isinstance(command, str) or not command:
        raise ApiError(400, "invalid_command", "command must be a non-empty string")
    args = body.get("args")
    if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
        raise ApiError(400, "invalid_type", "args must be a list of strings")
    env = body.get("env")
    if env is not None and (
        not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise ApiError(400, "invalid_type", "env must map strings to strings")
    cwd = body.get("working_dir")
    if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
        raise ApiError(400, "invalid_working_dir", "working_dir must be an absolute path")
    timeout = body.get("timeout") if run else None
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 <= timeout <= MAX_RUN_TIMEOUT
    ):
        raise ApiError(400, "invalid_timeout", f"timeout must be a number of seconds from 0 to {MAX_RUN_TIMEOUT}")
    name = None if run else body.get("name")
    if name is not None and not isinstance(name, str):
        raise ApiError(400, "invalid_type", "name must be a string")
    return CommandSpec(
        command=command,
        args=tuple(args or ()),
        env=tuple((env or {}).items()),
        working_dir=cwd,
        name=name,
        stdin_pipe=not run and body.get("stdin_mode") == "pipe",
        timeout=None if timeout is None else float(timeout),
    )


def start_spec(daemon: Daemon, body: Any, unknown: MutableSequence[str]) -> CommandSpec:
    """Validate a background ``start`` body; 409 ``process_name_in_use`` when a running process has its name."""
    spec = command_spec(body, run=False, unknown=unknown)
    if spec.name is not None and any(p.name == spec.name and p.running for p in daemon.processes.values()):
        raise ApiError(409, "process_name_in_use", f"a process named {spec.name!r} is running")
    return spec


def signal_number(body: Any) -> int:
    """Return the signal of a ``{"signal": n}`` body; 400 unless ``n`` is an integer from 1 to 64."""
    number = body.get("signal") if isinstance(body, dict) else None
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 64:
        raise ApiError(400, "invalid_signal", "signal must be an integer from 1 to 64")
    return number


def stdin_target(proc: ProcessRecord) -> ProcessRecord:
    """Return ``proc`` if it accepts stdin; 409 ``stdin_closed`` otherwise."""
    if not proc.stdin_writable:
        raise ApiError(409, "stdin_closed", f"process {proc.pid} does not accept stdin")
    return proc


def stream_name(raw: str) -> str:
    """Return a process output stream name (stdout, stderr, output); 404 for any other resource."""
    if raw not in OUTPUT_STREAMS:
        raise ApiError(404, "not_found", f"unknown process resource {raw!r}")
    return raw


def processes_body(daemon: Daemon) -> dict[str, Any]:
    """Return the process list: ``{"processes": [ProcessInfo, ...]}``, oldest first."""
    return {"processes": [p.info() for p in daemon.processes.values()]}


def signal_body(was_running: bool) -> dict[str, bool]:
    """Return the answer to a signal: ``{"success": true}`` when it reached a running process."""
    return {"success": was_running}


def close_stdin(proc: ProcessRecord) -> None:
    """Close a process's stdin (later writes answer 409)."""
    proc.stdin_writable = False


def output_body(proc: ProcessRecord, stream: str) -> dict[str, Any]:
    """Return what a process wrote to ``stream``: ``{"pid", "lines", "line_count"}``."""
    lines = proc.lines(stream)
    return {"pid": proc.pid, "lines": lines, "line_count": len(lines)}


# --- files ----------------------------------------------------------------------------------------------


def file_path(raw: str | None) -> str:
    """Return the normalised ``?path=`` of a files request; 400 when missing or invalid, 403 with ``..``."""
    if not raw:
        raise ApiError(400, "missing_path", "query parameter path is required")
    if ".." in raw.split("/"):
        raise ApiError(403, "path_traversal", "paths must not contain '..'")
    try:
        return normpath(raw)
    except FsError as exc:
        raise ApiError(400, exc.code, exc.message) from exc


def fs_error(exc: FsError) -> ApiError:
    """Return the management API's answer to a filesystem error.

    404 missing, 400 wrong kind or path, 403 not permitted, 507 ``no_space`` (the sandbox's file quota, ENOSPC),
    else 409. The real daemon's statuses for these are not documented: the mapping is sandproof's choice.
    """
    return ApiError(_FS_STATUS.get(exc.code, 409), exc.code, exc.message)


def open_file(fs: FileSystem, raw_path: str | None) -> FileStream:
    """Open the regular file at ``?path=`` for streaming (the caller closes it); a FIFO or socket is 400."""
    path = file_path(raw_path)
    try:
        return fs.open_stream(path)
    except FsError as exc:
        raise fs_error(exc) from exc


def write_file(fs: FileSystem, raw_path: str | None, data: bytes) -> None:
    """Write ``data`` to the file at ``?path=``, creating its parent directories."""
    path = file_path(raw_path)
    try:
        fs.write(path, data, parents=True)
    except FsError as exc:
        raise fs_error(exc) from exc


def delete_file(fs: FileSystem, raw_path: str | None) -> None:
    """Delete the file or directory tree at ``?path=``."""
    path = file_path(raw_path)
    try:
        fs.remove(path, recursive=True)
    except FsError as exc:
        raise fs_error(exc) from exc


def list_directory(fs: FileSystem, raw_path: str | None) -> dict[str, Any]:
    """Return the listing of the directory at ``?path=``: ``{"path", "entries": [...]}``."""
    path = file_path(raw_path)
    try:
        entries = fs.listdir(path)
    except FsError as exc:
        raise fs_error(exc) from exc
    return {
        "path": path,
        "entries": [{"name": e.name, "is_dir": e.is_dir, "size": e.size, "modified_at": ms(e.mtime)} for e in entries],
    }


# --- PTY sessions and tunnels ------------------------------------------------------------------------------

PTY_KEYS = frozenset({"command", "args", "env", "working_dir", "rows", "cols"})
MAX_TERMINAL = 1000


def _size(body: dict[str, Any], key: str, default: int) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TERMINAL:
        raise ApiError(400, "invalid_type", f"{key} must be an integer from 1 to {MAX_TERMINAL}")
    return value


def pty_spec(body: Any, unknown: MutableSequence[str]) -> PtySpec:
    """Validate a ``POST /api/v1/pty`` body: a command (with args, env, working_dir) and the terminal size."""
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_type", "request body must be a JSON object")
    unknown.extend(sorted(k for k in body if k not in PTY_KEYS))
    command = command_spec({k: v for k, v in body.items() if k in RUN_KEYS}, run=True, unknown=[])
    return PtySpec(
        command.command,
        command.args,
        command.env,
        command.working_dir,
        _size(body, "rows", 24),
        _size(body, "cols", 80),
    )


def open_pty(daemon: Daemon, spec: PtySpec, now: float) -> PtySession:
    """Record a new PTY session with a fresh id and token."""
    session = PtySession(daemon.uuid().replace("-", ""), daemon.uuid().replace("-", ""), spec, now)
    daemon.ptys[session.session_id] = session
    return session


def pty_session(daemon: Daemon, session_id: str, token: str | None, *, need_token: bool = True) -> PtySession:
    """Return a PTY session; 404 when there is none, 401 when its WebSocket presents no or another token."""
    session = daemon.ptys.get(session_id)
    if session is None:
        raise ApiError(404, "pty_session_not_found", f"PTY session {session_id!r} not found")
    if need_token and token != session.token:
        raise ApiError(401, "invalid_pty_token", "the PTY session token is missing or wrong")
    return session


def pty_start_failed(message: str) -> ApiError:
    """Return the refusal of a PTY session whose program cannot start (missing program or directory)."""
    return ApiError(400, "invalid_command", f"cannot start the PTY program: {message}")


def tunnel_port(raw: str | None) -> int:
    """Return the ``?port=`` of a TCP tunnel; 400 unless it is a port number (9501 is the daemon's own)."""
    if raw is None or not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise ApiError(400, "invalid_port", "query parameter port must be a port number from 1 to 65535")
    return int(raw)


def unsupported() -> ApiError:
    """Return the refusal of PTY sessions and TCP tunnels."""
    return ApiError(501, "not_supported", "PTY sessions and TCP tunnels are not implemented by this mock")
