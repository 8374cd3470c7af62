"""execd's rules (port 44772): the access token, run and session requests, command records, logs, metrics.

Errors are execd's ``{"code", "message"}`` bodies; the access-token refusal is execd's middleware's
``{"error": ...}`` (:class:`~.errors.ExecdAuthError`). Running a command is not a rule: the runtime in
:mod:`mockserver.opensandbox.commands` runs the :class:`RunRequest` these functions validate.

Known deviations: a foreground command whose SSE client goes away is killed at once (it reports exit -1,
``signal: killed``), so dropped streams leave no running command behind; real execd runs the command under
its own context (``context.Background``, bounded only by the request's ``timeout``) and lets it run on to its
end, keeping its status record (newer execd even lets a client resume the stream). The code interpreter
(``/code``, ``/code/context(s)``) answers 501 on the command emulator (see :mod:`.code`); the endless
``GET /metrics/watch`` is not served (404). PTY sessions are
not emulated. ``POST /pty`` answers 501 ``NOT_SUPPORTED`` (what execd
answers on a platform without PTY), so no session exists: ``GET`` and ``DELETE /pty/{id}`` answer 404
``CONTEXT_NOT_FOUND`` "pty session <id> not found" (the body NeMo Gym keys on) and a WebSocket to
``/pty/{id}/ws`` is closed before the handshake. A JSON body holding a lone surrogate (``"\\ud800"``) is refused
with 400 ``invalid_json``, as are ``NaN`` and ``Infinity`` (Go's decoder, in execd and the egress sidecar, reads a
lone surrogate as U+FFFD and accepts the request; the mock refuses it, so no client can rely on that repair).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, NoReturn

from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.sandbox.filesystem import FsError, normpath

from .errors import ExecdAuthError, unreachable
from .operations import OpenSandboxModel
from .profiles import EXECD_PORT
from .records import CommandRecord, SandboxRecord

__all__ = [
    "DEVIATING_OPERATIONS",
    "EXECD_TOKEN_HEADER",
    "RUN_FIELDS",
    "SESSION_RUN_FIELDS",
    "TAIL_CURSOR_HEADER",
    "LogChunk",
    "RunRequest",
    "abandon",
    "check_execd_token",
    "command_logs",
    "command_status",
    "cpu_limit_cores",
    "create_pty",
    "create_session",
    "delete_session",
    "error_event",
    "frame",
    "interrupt",
    "invalid",
    "memory_limit_bytes",
    "metrics",
    "missing_query",
    "new_command",
    "prepare_run",
    "prepare_session_run",
    "resolve_cwd",
    "usage_metrics",
    "validate_working_dir",
]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {
    "execd": (
        "POST /command",
        "GET /code/contexts",
        "DELETE /code/contexts",
        "GET /code/contexts/{context_id}",
        "DELETE /code/contexts/{context_id}",
        "POST /code/context",
        "POST /code",
        "DELETE /code",
        "GET /metrics/watch",
    )
}

EXECD_TOKEN_HEADER = "x-execd-access-token"
TAIL_CURSOR_HEADER = "EXECD-COMMANDS-TAIL-CURSOR"
RUN_FIELDS = frozenset({"command", "argv", "cwd", "background", "timeout", "uid", "gid", "envs"})
SESSION_RUN_FIELDS = frozenset({"command", "cwd", "timeout"})
_HEX = "0123456789abcdef"


def invalid(message: str) -> ApiError:
    """Return execd's 400 ``INVALID_REQUEST_BODY``."""
    return ApiError(400, "INVALID_REQUEST_BODY", message)


def missing_query(name: str) -> ApiError:
    """Return execd's 400 ``MISSING_QUERY``."""
    return ApiError(400, "MISSING_QUERY", f"missing query parameter: {name}")


def check_execd_token(expected: str | None, given: str | None) -> None:
    """Refuse (401 ``{"error"}``) when an access token is configured and the request's is missing or wrong."""
    if expected is not None and given != expected:
        raise ExecdAuthError(401, "UNAUTHORIZED", "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN")


#: ``json.dumps(event, separators=(",", ":"))``, built once rather than per event.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def frame(event: dict[str, Any]) -> bytes:
    """Return one execd SSE frame: a bare compact JSON object and a blank line."""
    return _COMPACT.encode(event).encode() + b"\n\n"


def error_event(evalue: str, traceback: str, ts: int) -> dict[str, Any]:
    """Return an execd ``error`` event."""
    return {
        "type": "error",
        "timestamp": ts,
        "error": {"ename": "CommandExecError", "evalue": evalue, "traceback": [traceback]},
    }


@dataclass(frozen=True)
class RunRequest:
    """A validated command to run: what the runtime needs, and the body fields execd does not know."""

    command: str
    env: dict[str, str]
    cwd: str
    timeout_ms: int | None
    background: bool = False
    argv: list[str] | None = None
    unknown_fields: list[str] = field(default_factory=list)
    held_polls: int = 0


def _object(body: Any, fields: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(body, dict):
        raise invalid("invalid request body: expected a JSON object")
    return body, sorted(set(body) - fields)


def resolve_cwd(sb: SandboxRecord, raw: Any, default: str = "/") -> str:
    """Return the absolute working directory a session request names (``default`` when none); 500 when missing."""
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


def validate_working_dir(sb: SandboxRecord, raw: Any) -> str:
    """Return the absolute directory a ``POST /command`` runs in; refuse one execd (1.0.11+) cannot use (400).

    execd validates the request before it starts anything: a directory that does not exist, a path that is
    not a directory and a path it cannot stat are ``INVALID_REQUEST_BODY`` with the path as it was sent.
    """
    if raw is None or raw == "":
        return "/"
    if not isinstance(raw, str):
        raise invalid("invalid request body: cwd must be a string")
    prefix = "invalid request, validation error "
    try:
        path = normpath(raw, "/")
        info = sb.fs.stat(path)
    except FsError as exc:
        if exc.code == "not_found":
            raise invalid(f"{prefix}working directory does not exist: {raw}") from exc
        quoted = json.dumps(raw, ensure_ascii=False)
        raise invalid(f"{prefix}cannot access working directory {quoted}: stat {raw}: {exc.strerror.lower()}") from exc
    if not info.is_dir:
        raise invalid(f"{prefix}working directory path is not a directory: {raw}")
    return path


def _quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "@%+=:,./-_" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def prepare_run(state: OpenSandboxModel, sb: SandboxRecord, body: Any, *, via_proxy: bool) -> RunRequest:
    """Validate ``POST /command``; a sandbox armed to be OOM-killed dies now and the proxy answers 502."""
    data, unknown = _object(body, RUN_FIELDS)
    command = data.get("command")
    argv = data.get("argv")
    if argv is not None:
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise invalid("invalid request body: argv must be a non-empty list of strings")
        command = " ".join(_quote(a) for a in argv)
    if not isinstance(command, str) or not command.strip():
        raise invalid("invalid request body: command is required")
    timeout = data.get("timeout")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
        raise invalid("invalid request body: timeout must be an integer (milliseconds)")
    envs = data.get("envs") or {}
    if not isinstance(envs, dict) or not all(isinstance(v, str) for v in envs.values()):
        raise invalid("invalid request body: envs must map names to strings")
    background = data.get("background", False)
    if not isinstance(background, bool):
        raise invalid("invalid request body: background must be a boolean")
    cwd = validate_working_dir(sb, data.get("cwd"))
    if sb.oom_on_next_exec is not None:
        wording, sb.oom_on_next_exec = sb.oom_on_next_exec, None
        state.fail(sb.id, *state.profile.oom_status(wording or None))
        raise unreachable(EXECD_PORT, via_proxy)
    held = state.take_command_hold(sb)
    return RunRequest(command, {**sb.spec.env, **envs}, cwd, timeout, background, argv, unknown, held)


def prepare_session_run(sb: SandboxRecord, session_id: str, body: Any) -> RunRequest:
    """Validate ``POST /session/{sid}/run``: the body first, then the session (execd's order)."""
    data, unknown = _object(body, SESSION_RUN_FIELDS)
    command = data.get("command")
    if not isinstance(command, str) or not command.strip():
        raise invalid("invalid request body: command is required")
    timeout = data.get("timeout")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
        raise invalid("invalid request body: timeout must be a non-negative integer (milliseconds)")
    if session_id not in sb.sessions:
        # execd validates the body first, then reports the runner's ErrContextNotFound as a runtime error.
        raise ApiError(500, "RUNTIME_ERROR", "error running in session. context not found")
    cwd = resolve_cwd(sb, data.get("cwd"), sb.sessions[session_id])
    return RunRequest(command, dict(sb.spec.env), cwd, timeout, unknown_fields=unknown)


def new_command(sb: SandboxRecord, ids: IdFactory, clock: VirtualClock, run: RunRequest) -> CommandRecord:
    """Record a new command of the sandbox (running from now) and return it."""
    record = CommandRecord(ids.token(16, _HEX), run.command, run.background, clock.now(), held_polls=run.held_polls)
    sb.commands[record.id] = record
    return record


def abandon(record: CommandRecord) -> None:
    """End a foreground command whose stream's client went away: it is killed (exit -1, ``signal: killed``).

    See the module's known deviations: real execd lets such a command run on to its end or its timeout.
    """
    if record.running and not record.background:
        record.stop_reason = "signal: killed"
        record.cancel()


def interrupt(sb: SandboxRecord, command_id: str | None) -> None:
    """Interrupt a command (SIGTERM; it reports ``signal: terminated``)."""
    if not command_id:
        raise missing_query("id")
    record = sb.commands.get(command_id)
    if record is None:
        raise invalid(f"command not found: {command_id}")
    record.cancel()


def command_status(sb: SandboxRecord, command_id: str) -> dict[str, Any]:
    """Return a command's status record; 404 ``INVALID_REQUEST_BODY`` for an unknown id (execd's code)."""
    record = sb.commands.get(command_id)
    if record is None:
        raise ApiError(404, "INVALID_REQUEST_BODY", f"command not found: {command_id}")
    if record.held_polls > 0:
        record.held_polls -= 1
        return record.status_json(held=True)
    return record.status_json()


@dataclass(frozen=True)
class LogChunk:
    """A background command's output from a byte cursor, and the cursor to ask from next."""

    text: str
    cursor: int


def command_logs(sb: SandboxRecord, command_id: str, raw_cursor: str | None) -> LogChunk:
    """Return a background command's combined output from byte ``cursor`` (default 0)."""
    record = sb.commands.get(command_id)
    if record is None or not record.background:
        raise invalid(f"command not found: {command_id}")
    raw = "0" if raw_cursor is None else raw_cursor
    try:
        cursor = int(raw)
    except ValueError:
        raise invalid(f"invalid cursor: {raw}") from None
    if cursor < 0:
        raise invalid(f"invalid cursor: {raw}")
    data = bytes(record.output)
    return LogChunk(data[cursor:].decode("utf-8", "replace"), len(data))


def create_session(sb: SandboxRecord, ids: IdFactory, body: Any) -> dict[str, Any]:
    """Open a shell session that keeps its working directory; return ``{"session_id"}``."""
    if not isinstance(body, dict):
        raise invalid("invalid request body: expected a JSON object")
    cwd = resolve_cwd(sb, body.get("cwd"))
    session_id = ids.token(16, _HEX)
    sb.sessions[session_id] = cwd
    return {"session_id": session_id}


def delete_session(sb: SandboxRecord, session_id: str) -> None:
    """Close a session; 404 ``CONTEXT_NOT_FOUND`` when there is none."""
    if sb.sessions.pop(session_id, None) is None:
        raise ApiError(404, "CONTEXT_NOT_FOUND", f"session not found: {session_id}")


def create_pty(body: Any) -> NoReturn:
    """Refuse ``POST /pty``: the mock's command runtime has no terminals (501 ``NOT_SUPPORTED``)."""
    if body is not None and not isinstance(body, dict):
        raise invalid("invalid request body: expected a JSON object")
    raise ApiError(
        501, "NOT_SUPPORTED", "PTY is not supported by the sandproof command emulator (no terminal sessions)"
    )


def metrics(sb: SandboxRecord, now_ms: int) -> dict[str, Any]:
    """Return resource metrics derived from the sandbox's limits and running commands."""
    limits = sb.spec.resource_limits
    running = sum(1 for c in sb.commands.values() if c.running)
    total = _mib(limits.get("memory", "2Gi"))
    return {
        "cpu_count": _cpus(limits.get("cpu", "1")),
        "cpu_used_pct": min(100.0, 5.0 * running),
        "mem_total_mib": total,
        "mem_used_mib": round(min(total, 32.0 + 16.0 * running), 1),
        "timestamp": now_ms,
    }


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


def memory_limit_bytes(sb: SandboxRecord) -> int | None:
    """Return the sandbox's ``resourceLimits.memory`` in bytes (None when it names none)."""
    raw = sb.spec.resource_limits.get("memory")
    return None if not raw else int(_mib(str(raw)) * 2**20)


def disk_limit_bytes(sb: SandboxRecord) -> int | None:
    """Return the sandbox's ``resourceLimits["ephemeral-storage"]`` in bytes (None when it names none).

    ``ephemeral-storage`` is the Kubernetes name the real server accepts among a sandbox's resource limits.
    """
    raw = sb.spec.resource_limits.get("ephemeral-storage")
    mib = _mib(str(raw)) if raw else 0.0
    return int(mib * 2**20) if math.isfinite(mib) and mib >= 1 else None


def cpu_limit_cores(sb: SandboxRecord) -> float | None:
    """Return the sandbox's ``resourceLimits.cpu`` in cores (None when it names none)."""
    raw = sb.spec.resource_limits.get("cpu")
    return None if not raw else _cpus(str(raw))


def usage_metrics(sb: SandboxRecord, cpu_percent: float, memory_bytes: int, now_ms: int) -> dict[str, Any]:
    """Return ``/metrics`` for real processes: CPU count and memory total from the limits, use as measured.

    ``cpu_percent`` is the share of the sandbox's CPUs its processes used since the previous sample.
    """
    limits = sb.spec.resource_limits
    total = _mib(limits.get("memory", "2Gi"))
    return {
        "cpu_count": _cpus(limits.get("cpu", "1")),
        "cpu_used_pct": round(max(0.0, min(100.0, cpu_percent)), 1),
        "mem_total_mib": total,
        "mem_used_mib": round(min(total, memory_bytes / 2**20), 1),
        "timestamp": now_ms,
    }
