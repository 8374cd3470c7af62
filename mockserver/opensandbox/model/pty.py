"""execd's PTY sessions (``/pty``, ``/pty/{id}``, ``/pty/{id}/ws``): the requests, the refusals, the frames.

A session is created with ``POST /pty {"cwd"?, "command"?}`` (201 ``{"session_id"}``); its shell starts when
the first WebSocket attaches to ``/pty/{id}/ws``, in PTY mode by default or pipe mode with ``?pty=0``.
``GET /pty/{id}`` answers ``{"session_id", "running", "output_offset"}``; ``DELETE`` ends it. One client
holds a session at a time: a second attach is refused 409 ``ALREADY_CONNECTED`` unless it asks
``?takeover=1``, which evicts the holder (close code 4001, reason ``TAKEN_OVER``). ``?since=<offset>``
replays the retained output from that byte on.

The WebSocket's frames: after a text ``{"type": "connected", "session_id", "mode"}`` the server sends
binary frames whose first byte is the channel (:data:`STDOUT` 0x01, :data:`STDERR` 0x02 in pipe mode,
:data:`REPLAY` 0x03 followed by the big-endian 8-byte offset of the first replayed byte); the client sends
binary :data:`STDIN` 0x00 frames and text ``{"type": "resize", "cols", "rows"}``, ``{"type": "signal",
"signal": "SIGINT"}`` (SIGINT, SIGTERM, SIGKILL, SIGQUIT, SIGHUP) and ``{"type": "ping"}`` (answered
``{"type": "pong"}``). When the shell ends the server sends ``{"type": "exit", "exit_code"}`` and closes
normally.

Known deviations: the replay window is the newest :data:`REPLAY_LIMIT` bytes of the merged output; a
WebSocket heartbeat is answered but never initiated by the server; an unknown signal name is ignored, as
execd does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mockserver.core import ApiError
from mockserver.core.jsontext import parse_json

from .execd import invalid

__all__ = [
    "REPLAY",
    "REPLAY_LIMIT",
    "SIGNALS",
    "STDERR",
    "STDIN",
    "STDOUT",
    "TAKEN_OVER_CLOSE",
    "Attach",
    "ClientFrame",
    "PtyRequest",
    "already_connected",
    "client_frame",
    "connected_frame",
    "error_frame",
    "exit_frame",
    "parse_attach",
    "parse_create",
    "session_not_found",
    "status_body",
]

STDIN, STDOUT, STDERR, REPLAY = 0x00, 0x01, 0x02, 0x03
TAKEN_OVER_CLOSE = 4001
REPLAY_LIMIT = 1 << 20
#: The signals a client may send, by name.
SIGNALS: dict[str, int] = {"SIGINT": 2, "SIGTERM": 15, "SIGKILL": 9, "SIGQUIT": 3, "SIGHUP": 1}


@dataclass(frozen=True)
class PtyRequest:
    """A validated ``POST /pty``: where the shell starts and what it runs (None: an interactive shell)."""

    cwd: str | None
    command: str | None


@dataclass(frozen=True)
class Attach:
    """A WebSocket attach's query: pipe mode or PTY, the replay offset, and whether it takes the session over."""

    pipe: bool
    since: int | None
    takeover: bool


def parse_create(body: Any) -> PtyRequest:
    """Validate ``POST /pty`` (an optional body): ``cwd`` and ``command`` must be strings when given."""
    if body is None:
        return PtyRequest(None, None)
    if not isinstance(body, dict):
        raise invalid("error parsing request: expected a JSON object")
    cwd, command = body.get("cwd"), body.get("command")
    for name, value in (("cwd", cwd), ("command", command)):
        if value is not None and not isinstance(value, str):
            raise invalid(f"error parsing request: {name} must be a string")
    return PtyRequest(cwd or None, command or None)


def parse_attach(query: dict[str, str]) -> Attach:
    """Read ``?pty=0``, ``?since=N`` (ignored when not a number) and ``?takeover=1``."""
    raw = query.get("since")
    since = int(raw) if raw is not None and raw.isascii() and raw.isdigit() else None
    return Attach(query.get("pty") == "0", since, query.get("takeover") == "1")


def session_not_found(session_id: str) -> ApiError:
    """Return execd's 404 for a PTY session that does not exist (the body NeMo Gym looks for)."""
    return ApiError(404, "CONTEXT_NOT_FOUND", f"pty session {session_id} not found")


def already_connected(session_id: str) -> ApiError:
    """Return execd's 409 for an attach to a session another client holds."""
    return ApiError(409, "ALREADY_CONNECTED", f"another client is already connected to pty session {session_id}")


def status_body(session_id: str, running: bool, offset: int) -> dict[str, Any]:
    """Return ``GET /pty/{id}``'s ``{"session_id", "running", "output_offset"}``."""
    return {"session_id": session_id, "running": running, "output_offset": offset}


def connected_frame(session_id: str, pipe: bool) -> str:
    """Return the text frame that opens a session's WebSocket."""
    return json.dumps({"type": "connected", "session_id": session_id, "mode": "pipe" if pipe else "pty"})


def exit_frame(code: int) -> str:
    """Return the text frame reporting the shell's exit code."""
    return json.dumps({"type": "exit", "exit_code": code})


def error_frame(code: str, message: str) -> str:
    """Return an error text frame (``SESSION_GONE``, ``START_FAILED``, ``INVALID_FRAME``...)."""
    return json.dumps({"type": "error", "error": message, "code": code})


@dataclass(frozen=True)
class ClientFrame:
    """What a client's text frame asks: ``resize`` (rows, cols), ``signal`` (its number), ``ping``, ``stdin``."""

    kind: str
    rows: int = 0
    cols: int = 0
    signal: int | None = None
    data: bytes = b""


def client_frame(text: str) -> ClientFrame | None:
    """Read a client's text frame; None for one that is not JSON (ignored, as execd does)."""
    try:
        frame = parse_json(text)
    except ValueError:  # includes a lone surrogate, which no stdin could carry
        return None
    if not isinstance(frame, dict):
        return None
    kind = str(frame.get("type") or "")
    if kind == "resize":
        return ClientFrame("resize", rows=_int(frame.get("rows")), cols=_int(frame.get("cols")))
    if kind == "signal":
        return ClientFrame("signal", signal=SIGNALS.get(str(frame.get("signal"))))
    if kind == "stdin":
        return ClientFrame("stdin", data=str(frame.get("data") or "").encode())
    return ClientFrame(kind)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10_000 else 0
