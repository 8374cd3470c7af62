"""The lifecycle server's diagnostics (``/sandboxes/{id}/diagnostics/{logs,events,inspect,summary}``).

What the real 1.1.1 server answers (its ``api/devops.py`` and Docker runtime, checked on the fake Docker
Engine in ``tests/harness/differential/test_real_server.py``):

* every query parameter is checked first (FastAPI's 422: ``tail`` 1..10000, ``limit`` and ``event_limit``
  1..500), then a ``scope`` (400 ``DIAGNOSTICS_SCOPE_UNSUPPORTED``), then the sandbox (404);
* ``logs`` and ``events`` with a ``scope`` answer the stable JSON descriptor (``delivery: inline``, the text
  in ``content``, logs cut to their last 100 lines, events to their first 50); without one, the deprecated
  text with a ``Deprecation: true`` header;
* ``inspect`` and ``summary`` answer ``text/plain`` (summary: inspect, events and logs in sections).

The text is built from what the mock knows of the sandbox, in the Docker runtime's words:

* ``inspect``: the container a Docker server would have made: state flags (``OOMKilled: True`` after an OOM
  kill, the exit code of a Failed sandbox), the ``resourceLimits`` as CPU and memory, the PID limit, labels
  (id, expiry, metadata) and environment (secret-looking names masked);
* ``events``: on the Docker profile the container summary the Docker runtime reconstructs (created, started,
  finished, OOM and exit events); on the Kubernetes-like profile one line per state the sandbox entered, as
  the Kubernetes runtime lists a pod's events;
* ``logs``: the container's output, which is empty (see below) and reads ``(no logs)``.

Known deviations: no entrypoint runs on either runtime, so the container log is always ``(no logs)``, as a
container that printed nothing; the mock has no container, so (choices) its id is the first 12 hex digits
of the SHA-256 of the sandbox id, its network is ``bridge`` at 127.0.0.1, its ``Ports`` section and host-port
labels are left out (the mock serves every sandbox port itself) and its PID limit is the server's default
(4096); inspect and summary are in the Docker runtime's words on the Kubernetes-like profile too.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from mockserver.core import ApiError

from .execd import cpu_limit_cores, memory_limit_bytes
from .profiles import OOM_WORDINGS
from .query import Query, query_int, query_last
from .records import SandboxRecord
from .store import OpenSandboxState
from .validation import Checker

__all__ = [
    "EVENT_SCOPES",
    "LOG_SCOPES",
    "PlainText",
    "events",
    "inspect",
    "inspect_text",
    "logs",
    "summary",
]

LOG_SCOPES = ("container", "all")
EVENT_SCOPES = ("runtime", "all")
STABLE_LOG_LINES = 100
STABLE_EVENT_LINES = 50
#: The real server's default ``docker.pids_limit`` (seen in its inspect text).
PIDS_LIMIT = 4096
NO_LOGS = "(no logs)"
ZERO_TIME = "0001-01-01T00:00:00Z"
_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "KEY")
_EXIT_CODE = re.compile(r"exit(?:ed with)? code (\d+)")


@dataclass(frozen=True)
class PlainText:
    """A ``text/plain`` answer; ``deprecated`` adds the ``Deprecation: true`` header."""

    content: str
    deprecated: bool = False


Answer = PlainText | dict[str, Any]


# -- the routes ------------------------------------------------------------------------------------


def logs(state: OpenSandboxState, tenant: str, sandbox_id: str, query: Query) -> Answer:
    """Answer ``GET …/diagnostics/logs`` (``scope``, ``tail``, ``since``, ``container``)."""
    check = Checker()
    tail = query_int(check, query, "tail", 100, le=10000)
    check.raise_if_any()
    scope = query_last(query, "scope")
    if scope is not None:
        normalized = _scope("logs", scope, LOG_SCOPES)
        sb = state.find(sandbox_id, tenant)
        content, truncated = _bounded(_log_text(sb), STABLE_LOG_LINES, keep_tail=True)
        warning = "The current backend only contributes sandbox container logs to the all scope."
        return _descriptor(sb.id, "logs", normalized, content, truncated, warning)
    sb = state.find(sandbox_id, tenant)
    return PlainText(_bounded(_log_text(sb), tail, keep_tail=True)[0], deprecated=True)


def events(state: OpenSandboxState, tenant: str, sandbox_id: str, query: Query) -> Answer:
    """Answer ``GET …/diagnostics/events`` (``scope``, ``limit``)."""
    check = Checker()
    limit = query_int(check, query, "limit", 50, le=500)
    check.raise_if_any()
    scope = query_last(query, "scope")
    if scope is not None:
        normalized = _scope("events", scope, EVENT_SCOPES)
        sb = state.find(sandbox_id, tenant)
        text = _event_text(state, sb, STABLE_EVENT_LINES + 1)
        content, truncated = _bounded(text, STABLE_EVENT_LINES, keep_tail=False)
        warning = "The current backend only contributes runtime events to the all scope."
        return _descriptor(sb.id, "events", normalized, content, truncated, warning)
    sb = state.find(sandbox_id, tenant)
    return PlainText(_event_text(state, sb, limit), deprecated=True)


def inspect(state: OpenSandboxState, tenant: str, sandbox_id: str) -> PlainText:
    """Answer ``GET …/diagnostics/inspect``: the container as plain text."""
    return PlainText(inspect_text(state, state.find(sandbox_id, tenant)))


def summary(state: OpenSandboxState, tenant: str, sandbox_id: str, query: Query) -> PlainText:
    """Answer ``GET …/diagnostics/summary`` (``tail``, ``event_limit``): inspect, events and logs."""
    check = Checker()
    tail = query_int(check, query, "tail", 50, le=10000)
    event_limit = query_int(check, query, "event_limit", 20, le=500)
    check.raise_if_any()
    sb = state.find(sandbox_id, tenant)
    rule, dash = "=" * 72, "-" * 40
    sections = [rule, "SANDBOX DIAGNOSTICS SUMMARY", f"Sandbox ID: {sandbox_id}", rule]
    sections += ["", dash, "INSPECT", dash, inspect_text(state, sb)]
    sections += ["", dash, "EVENTS", dash, _event_text(state, sb, event_limit)]
    sections += ["", dash, f"LOGS (last {tail} lines)", dash, _bounded(_log_text(sb), tail, keep_tail=True)[0]]
    return PlainText("\n".join(sections) + "\n")


# -- the texts -------------------------------------------------------------------------------------


def inspect_text(state: OpenSandboxState, sb: SandboxRecord) -> str:
    """Return the Docker runtime's inspect text for the container the sandbox would run in."""
    container = _Container.of(sb)
    lines = [
        f"Container ID:   {container.id}",
        f"Name:           sandbox-{sb.id}",
        f"Image:          {(sb.spec.image or {}).get('uri') or 'N/A'}",
        f"Status:         {container.status}",
        f"Running:        {container.running}",
        f"Paused:         {sb.state == 'Paused'}",
        f"OOMKilled:      {container.oom_killed}",
        f"Exit Code:      {container.exit_code}",
        f"Started At:     {_docker_time(sb.created_at)}",
        f"Finished At:    {container.finished}",
        "",
        "Resources:",
    ]
    cpu = cpu_limit_cores(sb)
    if cpu:
        lines.append(f"  CPU:          {cpu:.2f} cores")
    memory = memory_limit_bytes(sb)
    if memory:
        lines.append(f"  Memory:       {memory // (1024 * 1024)} MiB")
    lines += [f"  PIDs Limit:   {PIDS_LIMIT}", "", "Network:", "  bridge: 127.0.0.1"]
    lines += ["", "Labels:", *(f"  {k}={v}" for k, v in sorted(_labels(sb).items()))]
    env = [*(f"{k}={v}" for k, v in sb.spec.env.items() if v is not None), f"OPENSANDBOX_ID={sb.id}"]
    lines += ["", "Environment:", *(f"  {_masked(entry)}" for entry in env)]
    return "\n".join(lines)


def _event_text(state: OpenSandboxState, sb: SandboxRecord, limit: int) -> str:
    """Return the events text: Docker's container summary, or (Kubernetes-like) the sandbox's transitions."""
    if state.profile.name != "docker":
        if not sb.history:
            return "(no events)"
        out = []
        for at, entered, reason, message in sb.history[:limit]:
            kind = "Warning" if entered == "Failed" else "Normal"
            out.append(f"[{datetime.fromtimestamp(at, UTC).replace(microsecond=0)}] {kind:8s} {reason:20s} {message}")
        return "\n".join(out)
    container = _Container.of(sb)
    lines = [
        f"Container:  {container.id} (sandbox-{sb.id})",
        f"Status:     {container.status}",
        f"Created:    {_docker_time(sb.created_at)}",
    ]
    if container.status != "created":
        lines.append(f"Started:    {_docker_time(sb.created_at)}")
    if container.finished != ZERO_TIME:
        lines.append(f"Finished:   {container.finished}")
    if container.oom_killed:
        lines.append("Event:      OOMKilled - container was killed due to out-of-memory")
    if container.exit_code:
        lines.append(f"Event:      Exited with code {container.exit_code}")
    if len(lines) <= 3:
        lines.append("(no notable events)")
    return "\n".join(lines)


def _log_text(sb: SandboxRecord) -> str:
    """Return the container's log: empty (no entrypoint runs; see the module docstring), read as ``(no logs)``."""
    return NO_LOGS


@dataclass(frozen=True)
class _Container:
    """The Docker state a sandbox's container would be in."""

    id: str
    status: str
    running: bool
    oom_killed: bool
    exit_code: int
    finished: str

    @classmethod
    def of(cls, sb: SandboxRecord) -> _Container:
        ended = sb.state in ("Failed", "Terminated")
        status = {"Pending": "created", "Paused": "paused", "Resuming": "paused"}.get(sb.state, "running")
        exit_code = 0
        if ended:
            status = "exited"
            found = _EXIT_CODE.search(sb.message)
            exit_code = int(found.group(1)) if found else (1 if sb.state == "Failed" else 0)
        return cls(
            id=hashlib.sha256(sb.id.encode()).hexdigest()[:12],
            status=status,
            running=status in ("running", "paused"),
            oom_killed=sb.state == "Failed" and (sb.reason, sb.message) in OOM_WORDINGS.values(),
            exit_code=exit_code,
            finished=_docker_time(sb.last_transition_at) if ended else ZERO_TIME,
        )


# -- helpers ---------------------------------------------------------------------------------------


def _scope(kind: Literal["logs", "events"], scope: str, supported: tuple[str, ...]) -> str:
    normalized = scope.strip().lower()
    if normalized not in supported:
        raise ApiError(
            400,
            "DIAGNOSTICS_SCOPE_UNSUPPORTED",
            f"Unsupported {kind} diagnostics scope {scope!r}. Supported scopes: {', '.join(supported)}.",
        )
    return normalized


def _descriptor(
    sandbox_id: str, kind: str, scope: str, content: str, truncated: bool, all_warning: str
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "sandboxId": sandbox_id,
        "kind": kind,
        "scope": scope,
        "delivery": "inline",
        "contentType": "text/plain; charset=utf-8",
        "content": content,
        "contentLength": len(content.encode("utf-8")),
        "truncated": truncated,
    }
    if scope == "all":
        body["warnings"] = [all_warning]
    return body


def _bounded(content: str, limit: int, *, keep_tail: bool) -> tuple[str, bool]:
    lines = content.splitlines(keepends=True)
    if len(lines) <= limit:
        return content, False
    return "".join(lines[-limit:] if keep_tail else lines[:limit]), True


def _labels(sb: SandboxRecord) -> dict[str, str]:
    labels = {"opensandbox.io/id": sb.id, **sb.spec.metadata}
    if sb.expires_at is not None:
        labels["opensandbox.io/expires-at"] = datetime.fromtimestamp(sb.expires_at, UTC).isoformat()
    return labels


def _masked(entry: str) -> str:
    key = entry.split("=", 1)[0]
    return f"{key}=***" if any(word in key.upper() for word in _SECRET_WORDS) else entry


def _docker_time(ts: float) -> str:
    """Return epoch seconds as Docker writes times: RFC 3339 with nanoseconds."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond * 1000:09d}Z"
