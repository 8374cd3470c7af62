"""The in-sandbox daemon's state: the processes a sandbox ran, what they wrote, and the log lines they left.

No execution here: a process runtime (:mod:`mockserver.tensorlake.processes`) runs each command and reports
what it writes and how it ends through :meth:`Daemon.write` and :meth:`Daemon.finish`; the management API's
rules (:mod:`.management`) and the lifecycle log routes read the records. Output is kept per line: a line
is complete at its ``\\n``, and what is left when the process ends is flushed as a last line.
"""

from __future__ import annotations

import collections
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from mockserver.core.errors import ApiError

from .records import ms

__all__ = [
    "LOG_LIMIT",
    "OUTPUT_LINE_LIMIT",
    "STREAMS",
    "VERSION",
    "CommandSpec",
    "Daemon",
    "ProcessRecord",
    "PtySession",
    "PtySpec",
]

STREAMS = ("stdout", "stderr")
LOG_LIMIT = 10_000
#: Output lines a process record keeps (the newest; ``dropped`` counts the older ones it let go).
OUTPUT_LINE_LIMIT = 50_000
#: A partial line longer than this is cut into a line of its own (a flood without newlines stays bounded).
LINE_BYTES_LIMIT = 64 * 1024
FIRST_PID = 100
VERSION = "sandproof-mock"


@dataclass(frozen=True)
class CommandSpec:
    """A validated command to start: what runs, where, and (for ``run``) its timeout in seconds."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    working_dir: str | None = None
    name: str | None = None
    stdin_pipe: bool = False
    timeout: float | None = None


@dataclass(frozen=True)
class PtySpec:
    """A validated PTY session to start: the program, its environment and directory, the terminal's size."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    working_dir: str | None = None
    rows: int = 24
    cols: int = 80


@dataclass
class PtySession:
    """One PTY session: its id, the token its WebSocket must present, and what it runs."""

    session_id: str
    token: str
    spec: PtySpec
    created_at: float


@dataclass
class ProcessRecord:
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
    dropped: int = 0

    def keep(self, event: dict[str, Any]) -> None:
        """Add an output event, letting the oldest go past :data:`OUTPUT_LINE_LIMIT` (in batches)."""
        self.events.append(event)
        excess = len(self.events) - OUTPUT_LINE_LIMIT
        if excess >= OUTPUT_LINE_LIMIT // 10:
            del self.events[:excess]
            self.dropped += excess

    @property
    def running(self) -> bool:
        """Tell whether the process has not ended."""
        return self.status == "running"

    def spec(self) -> CommandSpec:
        """Return the command this process runs (what a restart starts again)."""
        return CommandSpec(
            self.command, tuple(self.args), tuple(self.env.items()), self.working_dir, self.name, False, None
        )

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

    def started_event(self) -> dict[str, Any]:
        """Return the first event of a ``run`` stream."""
        return {"pid": self.pid, "started_at": ms(self.started_at)}

    def exit_event(self) -> dict[str, Any]:
        """Return the exit event of a finished process."""
        if self.status == "oom_killed":
            return {"signal": self.signal or 9, "oom_killed": True, "reason": "oom_killed"}
        if self.signal is not None:
            return {"signal": self.signal, "reason": self.reason or "signaled"}
        return {"exit_code": self.exit_code, "reason": self.reason or "exited"}


class Daemon:
    """The daemon state of one sandbox: its processes and the log lines they wrote."""

    def __init__(self, sandbox_id: str, namespace: str, started: float, uuid: Callable[[], str]) -> None:
        self.sandbox_id = sandbox_id
        self.namespace = namespace
        self.started = started
        self.uuid = uuid
        self.processes: dict[int, ProcessRecord] = {}
        self.next_pid = FIRST_PID
        self.logs: collections.deque[dict[str, Any]] = collections.deque(maxlen=LOG_LIMIT)
        self.ptys: dict[str, PtySession] = {}

    def find(self, ref: str) -> ProcessRecord:
        """Return the process with this pid or (URL-encoded) name; 404 if there is none."""
        ref = unquote(ref)
        if ref.isascii() and ref.isdigit() and int(ref) in self.processes:
            return self.processes[int(ref)]
        for proc in self.processes.values():
            if proc.name == ref:
                return proc
        raise ApiError(404, "process_not_found", f"process {ref!r} not found")

    def start(self, spec: CommandSpec, now: float) -> ProcessRecord:
        """Record a new running process for ``spec`` under the next pid."""
        proc = ProcessRecord(
            pid=self.next_pid,
            command=spec.command,
            args=list(spec.args),
            started_at=now,
            env=dict(spec.env),
            working_dir=spec.working_dir,
            name=spec.name,
            stdin_writable=spec.stdin_pipe,
        )
        self.next_pid += 1
        self.processes[proc.pid] = proc
        return proc

    def write(self, proc: ProcessRecord, stream: str, data: bytes, now: float) -> None:
        """Add what a process wrote to ``stream``: one event (and log line) per complete line."""
        buffered = proc.partial[stream] + data
        *complete, rest = buffered.split(b"\n")
        while len(rest) > LINE_BYTES_LIMIT:
            complete.append(rest[:LINE_BYTES_LIMIT])
            rest = rest[LINE_BYTES_LIMIT:]
        proc.partial[stream] = rest
        for raw in complete:
            self._line(proc, stream, raw, now)

    def finish(
        self,
        proc: ProcessRecord,
        now: float,
        *,
        exit_code: int | None = None,
        signal: int | None = None,
        reason: str | None = None,
    ) -> bool:
        """Mark ``proc`` ended (flushing partial lines); False (and nothing changes) if it already had.

        ``reason="oom_killed"`` (the kernel's OOM killer ended it) gives the status ``oom_killed``.
        """
        if not proc.running:
            return False
        for stream in STREAMS:
            if proc.partial[stream]:
                self._line(proc, stream, proc.partial[stream], now)
                proc.partial[stream] = b""
        proc.exit_code, proc.signal, proc.reason = exit_code, signal, reason
        if reason == "oom_killed":
            proc.status = "oom_killed"
        else:
            proc.status = "signaled" if signal is not None else "exited"
        proc.ended_at = now
        proc.stdin_writable = False
        return True

    def _line(self, proc: ProcessRecord, stream: str, raw: bytes, now: float) -> None:
        line = raw.decode("utf-8", "replace")
        proc.keep({"line": line, "timestamp": ms(now), "stream": stream})
        level = 3 if stream == "stdout" else 5
        signal: dict[str, Any] = {
            "timestamp": ms(now),
            "uuid": self.uuid(),
            "namespace": self.namespace,
            "application": "",
            "sandboxId": self.sandbox_id,
            "resourceAttributes": [],
            "body": line,
            "logAttributes": json.dumps({"stream": stream, "pid": proc.pid, "command": proc.command}),
            "allocations": [],
            "functionRuns": [],
            "level": level,
        }
        self.logs.append({"level": level, "processId": str(proc.pid), "body": line, "signal": signal, "pid": proc.pid})

    def log_processes(self) -> list[dict[str, Any]]:
        """Return one summary per process that wrote log lines, with counts and first/last times."""
        grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for entry in self.logs:
            grouped[entry["pid"]].append(entry)
        out = []
        for pid, entries in grouped.items():
            proc = self.processes.get(pid)
            out.append(
                {
                    "processId": str(pid),
                    "processPid": str(pid),
                    "processCommand": proc.command if proc else "",
                    "processManagedId": "",
                    "processManagedName": (proc.name or "") if proc else "",
                    "firstSeen": entries[0]["signal"]["timestamp"],
                    "lastSeen": entries[-1]["signal"]["timestamp"],
                    "logCount": len(entries),
                }
            )
        return out

    def info(self, now: float) -> dict[str, Any]:
        """Return the daemon info body: version, uptime and process counts."""
        return {
            "version": VERSION,
            "uptime_secs": int(now - self.started),
            "running_processes": sum(p.running for p in self.processes.values()),
            "total_processes": len(self.processes),
        }
