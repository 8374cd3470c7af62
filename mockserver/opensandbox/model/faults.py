"""The state-driven faults: situations no canned HTTP answer can express, armed on the state.

Each function checks its input first and changes nothing when it refuses (an :class:`ApiError` with a code):
404 ``sandbox_not_found`` for a sandbox that is not there, 400 for a bad value. The named catalogue
(:mod:`mockserver.opensandbox.faults`) and the admin routes call these; the state machine and execd apply
what they arm (:mod:`.operations`, :mod:`.execd`).
"""

from __future__ import annotations

from mockserver.core import ApiError

from .operations import OpenSandboxModel
from .profiles import OOM_WORDINGS
from .records import SandboxRecord

__all__ = [
    "TRANSITIONS",
    "expire",
    "fail_next_transition",
    "hold_command_running",
    "oom_kill",
    "oom_on_next_exec",
    "recover",
    "stall_next_transition",
]

#: The transitions :func:`fail_next_transition` can make end in ``Failed`` (and :func:`stall_next_transition` hold).
TRANSITIONS = ("pause", "resume")


def _live(state: OpenSandboxModel, sandbox_id: str) -> SandboxRecord:
    sb = state.lookup(sandbox_id)
    if sb is None:
        raise ApiError(404, "sandbox_not_found", f"no sandbox {sandbox_id}")
    return sb


def _wording(state: OpenSandboxModel, wording: str | None) -> str:
    name = wording or state.profile.default_oom_wording
    if name not in OOM_WORDINGS:
        raise ApiError(400, "invalid_wording", f"unknown OOM wording {name!r}: expected one of {sorted(OOM_WORDINGS)}")
    return name


def oom_kill(state: OpenSandboxModel, sandbox_id: str, wording: str | None = None) -> SandboxRecord:
    """Mark a sandbox Failed now, as an OOM kill (exit 137) worded as ``wording`` (default: the runtime's)."""
    name = _wording(state, wording)
    _live(state, sandbox_id)
    state.fail(sandbox_id, *state.profile.oom_status(name))
    return state.find(sandbox_id)


def oom_on_next_exec(state: OpenSandboxModel, sandbox_id: str, wording: str | None = None) -> SandboxRecord:
    """Arm an OOM kill on the sandbox's next ``POST /command``: it answers 502 and the sandbox turns Failed."""
    name = _wording(state, wording)
    _live(state, sandbox_id)
    return state.oom_on_next_exec(sandbox_id, name)


def fail_next_transition(
    state: OpenSandboxModel,
    sandbox_id: str,
    operation: str = "pause",
    reason: str | None = None,
    message: str | None = None,
) -> SandboxRecord:
    """Make the sandbox's next ``operation`` (pause or resume) end in Failed (its 202 is answered as usual)."""
    if operation not in TRANSITIONS:
        raise ApiError(400, "invalid_operation", f"operation must be one of {list(TRANSITIONS)}, not {operation!r}")
    sb = _live(state, sandbox_id)
    default_reason, default_message = state.profile.failed_status()
    with state.lock:
        sb.fail_next[operation] = (reason or default_reason, message or default_message)
        state.changed(sb)
    return sb


def stall_next_transition(
    state: OpenSandboxModel, sandbox_id: str, operation: str = "pause", seconds: float | None = None
) -> SandboxRecord:
    """Make the sandbox's next ``operation`` (pause or resume) stay Pausing/Resuming ``seconds`` (None: for good)."""
    if operation not in TRANSITIONS:
        raise ApiError(400, "invalid_operation", f"operation must be one of {list(TRANSITIONS)}, not {operation!r}")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0):
        raise ApiError(400, "invalid_seconds", "seconds must be a non-negative number or null")
    sb = _live(state, sandbox_id)
    with state.lock:
        sb.stall_next[operation] = None if seconds is None else float(seconds)
        state.changed(sb)
    return sb


def hold_command_running(state: OpenSandboxModel, sandbox_id: str | None = None, polls: int = 3) -> int:
    """Make the next command (of ``sandbox_id``, or of any sandbox) report running for ``polls`` status polls."""
    if isinstance(polls, bool) or not isinstance(polls, int) or polls < 1:
        raise ApiError(400, "invalid_polls", "polls must be a positive integer")
    if sandbox_id is None:
        with state.lock:
            state.command_holds.append(polls)
    else:
        sb = _live(state, sandbox_id)
        with state.lock:
            sb.hold_next_command = polls
            state.changed(sb)
    return polls


def recover(state: OpenSandboxModel, sandbox_id: str) -> SandboxRecord:
    """Put a Failed sandbox back to Running (409 ``sandbox_not_failed`` when it is not Failed)."""
    _live(state, sandbox_id)
    return state.recover(sandbox_id)


def expire(state: OpenSandboxModel, sandbox_id: str) -> None:
    """Make a sandbox reach its expiry now (a GET then answers 404)."""
    _live(state, sandbox_id)
    state.expire(sandbox_id)
