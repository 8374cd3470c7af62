"""The OpenSandbox admin operations (``/_mock/opensandbox/...``): kill a sandbox as its container would die.

Also the dashboard's view of the sandboxes (:func:`sandbox_summaries`, behind ``GET /_mock/sandboxes``).
"""

from __future__ import annotations

from typing import Any

from mockserver.core import ApiError, json_object

from . import faults
from .operations import OpenSandboxModel
from .profiles import EGRESS_PORT, EXECD_PORT
from .records import SandboxRecord

__all__ = ["fail_sandbox", "oom_kill", "sandbox_summaries", "sandbox_summary"]


def _live(state: OpenSandboxModel, sandbox_id: str) -> None:
    if state.lookup(sandbox_id) is None:
        raise ApiError(404, "sandbox_not_found", f"no sandbox {sandbox_id}")


def oom_kill(state: OpenSandboxModel, sandbox_id: str, body: Any) -> dict[str, Any]:
    """OOM-kill a sandbox now (exit 137), or with ``{"on_next_exec": true}`` at its next command.

    ``{"wording": name}`` picks one of :data:`~.profiles.OOM_WORDINGS` (default: the runtime's own).
    """
    options = json_object(body)
    wording = options.get("wording")
    if wording is not None and not isinstance(wording, str):
        raise ApiError(400, "invalid_type", "wording must be a string")
    if options.get("on_next_exec"):
        faults.oom_on_next_exec(state, sandbox_id, wording)
    else:
        faults.oom_kill(state, sandbox_id, wording)
    return state.find(sandbox_id).to_json()


def fail_sandbox(state: OpenSandboxModel, sandbox_id: str, body: Any) -> dict[str, Any]:
    """Mark a sandbox Failed with ``reason`` and ``message`` (default: its container exited with code 1)."""
    options = json_object(body)
    reason = options.get("reason", "CONTAINER_EXITED_ERROR")
    message = options.get("message", "Sandbox container exited with code 1.")
    if not isinstance(reason, str) or not isinstance(message, str):
        raise ApiError(400, "invalid_type", "reason and message must be strings")
    _live(state, sandbox_id)
    state.fail(sandbox_id, reason, message)
    return state.find(sandbox_id).to_json()


def sandbox_summary(sb: SandboxRecord) -> dict[str, Any]:
    """Return the provider-neutral summary of one sandbox (see ``MockCore.sandbox_summaries``)."""
    return {
        "id": sb.id,
        "state": sb.state,
        "image": (sb.spec.image or {}).get("uri"),
        "policy": None if sb.policy is None else sb.policy.to_json(),
        "ports": [EXECD_PORT, EGRESS_PORT] if sb.has_sidecar else [EXECD_PORT],
        "metadata": dict(sb.spec.metadata),
        "created_at": sb.created_at,
        "expires_at": sb.expires_at,
        "details": {
            "tenant": sb.tenant,
            "reason": sb.reason,
            "message": sb.message,
            "pending": None if sb.pending is None else {"to": sb.pending[0], "at": sb.pending[1]},
            "running_commands": sum(1 for c in sb.commands.values() if c.running),
        },
    }


def sandbox_summaries(state: OpenSandboxModel) -> list[dict[str, Any]]:
    """Return every tenant's live sandboxes, transitions that are due applied first."""
    state.settle_all()
    with state.lock:
        return [sandbox_summary(sb) for sb in state.sandboxes.values()]
