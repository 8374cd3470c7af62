"""Compare OpenSandbox answers with the model: predictions, violations, body normalisation and diffs.

:class:`Expected` is the model's prediction of one HTTP answer and :class:`ContractViolation` the failure the
machine raises when the target's answer differs. Bodies are compared after normalisation (ids mapped to model
ids, RFC 3339 times as epoch floats, ``status.message`` dropped) with :func:`diff`; :func:`parse_run` reads an
execd command stream as the SDK does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from harness.machines.common import ContractViolation
from harness.machines.common import diff as _diff

__all__ = [
    "ANY",
    "ContractViolation",
    "Expected",
    "RunResult",
    "diff",
    "normalise_list",
    "normalise_sandbox",
    "parse_run",
    "parse_time",
]

#: Sentinel for "not checked" (an expected body) or "not sent" (a request body).
ANY: Any = object()


@dataclass(frozen=True)
class Expected:
    """The model's prediction of one HTTP answer.

    ``code`` is the flat error body's ``code`` (None: not checked); ``validation`` means a FastAPI 422
    ``{"detail": [...]}``; ``body`` is the normalised body (``ANY``: not checked).
    """

    status: int
    code: str | None = None
    body: Any = ANY
    validation: bool = False


@dataclass(frozen=True)
class RunResult:
    """What the SDK would make of a command's event stream."""

    command_id: str | None
    stdout: str
    stderr: str
    exit_code: int | None


def parse_run(text: str) -> RunResult:
    """Parse an execd SSE body (bare JSON frames or ``data:`` frames) with the SDK's exit-code rule."""
    command_id: str | None = None
    stdout: list[str] = []
    stderr: list[str] = []
    exit_code: int | None = None
    for block in text.split("\n\n"):
        lines = [ln[5:].strip() if ln.startswith("data:") else ln for ln in block.strip().splitlines()]
        payload = "".join(ln for ln in lines if ln and not ln.startswith((":", "event:", "id:")))
        if not payload:
            continue
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("timestamp"), int):
            continue  # the SDK drops events without an integer timestamp
        kind = event.get("type")
        if kind == "init":
            command_id = str(event.get("text"))
        elif kind == "stdout":
            stdout.append(str(event.get("text", "")))
        elif kind == "stderr":
            stderr.append(str(event.get("text", "")))
        elif kind == "execution_complete":
            exit_code = 0
        elif kind == "error":
            evalue = (event.get("error") or {}).get("evalue")
            try:
                exit_code = int(str(evalue))
            except ValueError:
                exit_code = None
    return RunResult(command_id, "".join(stdout), "".join(stderr), exit_code)


def parse_time(value: Any) -> Any:
    """Return an RFC 3339 string as epoch seconds (float); anything else unchanged."""
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def normalise_sandbox(body: Any, id_of: Callable[[str], str]) -> Any:
    """Return a ``Sandbox`` body with its id mapped, times as epoch floats and ``status.message`` dropped."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if isinstance(out.get("id"), str):
        out["id"] = id_of(out["id"])
    for key in ("expiresAt", "createdAt"):
        if key in out:
            out[key] = parse_time(out[key])
    if isinstance(out.get("status"), dict):
        status = dict(out["status"])
        status.pop("message", None)
        if "lastTransitionAt" in status:
            status["lastTransitionAt"] = parse_time(status["lastTransitionAt"])
        out["status"] = status
    return out


def normalise_list(body: Any, id_of: Callable[[str], str]) -> Any:
    """Return a ``ListSandboxesResponse`` with every item normalised."""
    if not isinstance(body, dict) or not isinstance(body.get("items"), list):
        return body
    return {**body, "items": [normalise_sandbox(item, id_of) for item in body["items"]]}


def diff(expected: Any, actual: Any, tolerance: float, path: str = "$") -> str | None:
    """Return where ``actual`` first differs from ``expected`` (floats within ``tolerance``), or None."""
    return _diff(expected, actual, path, tolerance=tolerance, count_items=True)
