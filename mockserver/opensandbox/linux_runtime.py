"""The linux command runtime: execd's commands and bash sessions as real processes in Linux namespaces.

:class:`LinuxCommandRuntime` is the :class:`~.commands.CommandRuntime` of a mock that runs with
``runtime="linux"``: its processes are the runtime's (:class:`~mockserver.runtime.linux.LinuxBackend`). The model validates every request (:mod:`.model.execd`); this module runs it and
reports as execd does:

* ``POST /command``: ``bash -c <command>`` (``sh`` where there is no bash), or the ``argv`` as given, in its
  own process group, with the sandbox's environment plus ``envs``, in ``cwd``. Output streams as execd's
  ``stdout``/``stderr`` events as it comes (a ``ping`` every 3 s of quiet); the end is
  ``execution_complete`` (exit 0) or ``error`` with ``evalue`` the exit code and the traceback Go's
  ``exec`` gives (``exit status N``; ``-1`` and ``signal: killed`` / ``signal: terminated`` for a signal).
  ``timeout`` (ms, real time) kills the process group; ``DELETE /command?id=`` sends it SIGTERM.
  Background commands write to the command's combined log only (stderr folded into stdout, so the log
  keeps the order the two were written in). A command's log keeps its first :data:`LOG_BYTES_LIMIT`
  bytes (the rest is still streamed, not kept), and its output is taken one chunk per turn of the event
  loop, and not while :data:`EVENTS_QUEUED` events wait for the SSE client: the process is
  flow-controlled (:mod:`mockserver.linux.process`), so a flood goes only as fast as the client reads.
* ``POST /session/{id}/run``: as execd's bash sessions do, each run is a fresh ``bash --noprofile
  --norc`` given the session's exported variables and working directory, with stderr folded into stdout,
  that dumps its variables and directory at the end; both persist to the next run. Its output is sent one
  line per ``stdout`` event (empty lines dropped, as execd's event writer drops empty text).
* A command the memory cgroup's OOM killer ends (exit 137) takes the sandbox with it, as a Docker
  container's OOM kill does (see :meth:`~.linux_sandboxes.LinuxSandboxes.oom`).

Code contexts and PTY sessions are :mod:`.linux_code` and :mod:`.linux_pty`.

Known deviations: ``uid``/``gid`` are accepted and ignored (every process runs as the sandbox's root); an
OOM-killed foreground command ends its stream with an ``error`` event (``evalue`` 137) where a real
container's death breaks the connection.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import re
import shlex
import signal as signals
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mockserver.core import IdFactory, VirtualClock
from mockserver.runtime import LINUX, Capabilities, Exited, Output, Process
from mockserver.runtime.linux import LinuxBackend, SandboxStateError, SpawnError, shell

from .commands import NOT_PERSISTED, PING_INTERVAL, CommandRuntime, EventQueue, SessionState
from .model.execd import RunRequest, error_event, new_command, usage_metrics
from .model.records import CommandRecord, SandboxRecord

__all__ = ["LinuxCommandRuntime", "LinuxExecution", "SessionRun", "SessionState", "session_argv", "session_script"]

#: Go's names of the signals that end processes (``signal: <name>`` in execd's errors).
SIGNAL_NAMES = {
    1: "hangup",
    2: "interrupt",
    3: "quit",
    4: "illegal instruction",
    6: "aborted",
    8: "floating point exception",
    9: "killed",
    11: "segmentation fault",
    13: "broken pipe",
    14: "alarm clock",
    15: "terminated",
}
#: Bytes of a command's combined log kept for ``GET /command/{id}/logs``.
LOG_BYTES_LIMIT = 16 * 1024 * 1024
#: Events a foreground command's SSE stream may have waiting before its output is no longer taken.
EVENTS_QUEUED = 256
ENV_START, ENV_END = "__ENV_DUMP_START__", "__ENV_DUMP_END__"
PWD_MARK, EXIT_MARK = "__PWD__:", "__EXIT_CODE__:"
_EXPORT = re.compile(r'^declare -x ([A-Za-z_][A-Za-z0-9_]*)(?:="(.*)")?$')


def _exit_text(status: Exited) -> tuple[int, str]:
    """Return execd's (exit code, error text) of a process that did not exit 0."""
    if status.code is not None and not status.timed_out:
        return status.code, f"exit status {status.code}"
    name = SIGNAL_NAMES.get(status.signal or signals.SIGKILL, f"signal {status.signal}")
    return -1, f"signal: {name}"


class LinuxExecution(EventQueue):
    """One running command: starts the process, turns its events into execd's, records its end."""

    def __init__(
        self,
        record: CommandRecord,
        clock: VirtualClock,
        launch: Callable[[], Awaitable[Process]],
        *,
        stream: bool,
        on_oom: Callable[[], None],
        marker: Callable[[str], bool] | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(stream)
        self.record = record
        self.clock = clock
        self.launch = launch
        self.on_oom = on_oom
        self.marker = marker
        self.after = after
        self.process: Process | None = None
        self._stop_asked = False
        self._task: asyncio.Task[None] | None = None
        self._last_event = time.monotonic()

    def start(self) -> None:
        """Start the command on the running loop; ``record.stop`` then interrupts it (SIGTERM)."""
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._main())

        def stop() -> None:
            loop.call_soon_threadsafe(self._interrupt)

        self.record.stop = stop

    def _interrupt(self) -> None:
        self._stop_asked = True
        if self.process is not None:
            self.process.signal(signals.SIGTERM)

    def _emit(self, event: dict[str, Any]) -> None:
        self._last_event = time.monotonic()  # the pings count quiet from the last event
        super()._emit(event)

    async def _pings(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, PING_INTERVAL - (time.monotonic() - self._last_event)))
            if time.monotonic() - self._last_event >= PING_INTERVAL:
                self._emit({"type": "ping", "text": "pong", "timestamp": self.clock.now_ms()})

    async def _main(self) -> None:
        rec = self.record
        started = time.monotonic()
        pinger = asyncio.create_task(self._pings()) if self.queue is not None else None
        try:
            try:
                self.process = await self.launch()
            except SpawnError as exc:
                rec.finish(255, exc.message, self.clock.now())
                self._emit(error_event(exc.message, exc.message, self.clock.now_ms()))
                return
            if self._stop_asked:
                self._interrupt()
            status = await self._relay(self.process)
            if status.oom_killed:
                self.on_oom()
                rec.finish(137, "signal: killed", self.clock.now())
                self._emit(error_event("137", "signal: killed", self.clock.now_ms()))
                return
            code = status.code if status.code is not None and not status.timed_out else None
            if code == 0:
                rec.finish(0, None, self.clock.now())
                elapsed = round((time.monotonic() - started) * 1000)
                self._emit({"type": "execution_complete", "execution_time": elapsed, "timestamp": self.clock.now_ms()})
            else:
                exit_code, text = _exit_text(status)
                rec.finish(exit_code, text, self.clock.now())
                self._emit(error_event(str(exit_code), text, self.clock.now_ms()))
        except SandboxStateError:
            rec.finish(-1, "signal: killed", self.clock.now())
            self._emit(error_event("-1", "signal: killed", self.clock.now_ms()))
        finally:
            if pinger is not None:
                pinger.cancel()
            self._end_events()

    async def _relay(self, process: Process) -> Exited:
        decoders = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in ("stdout", "stderr")}
        partial = ""
        async for event in process.events():
            if isinstance(event, Output):
                stream = event.stream
                room = LOG_BYTES_LIMIT - len(self.record.output)
                if room > 0:
                    self.record.output.extend(event.data[:room])
                text = decoders[stream].decode(event.data)
                if self.marker is not None and stream == "stdout":
                    partial += text
                    *complete, partial = partial.split("\n")
                    for line in self._session_lines(complete):
                        self._emit({"type": "stdout", "text": line, "timestamp": self.clock.now_ms()})
                elif text:
                    self._emit({"type": stream, "text": text, "timestamp": self.clock.now_ms()})
                await asyncio.sleep(0)  # one chunk per turn of the loop: other requests go between
                while self.queue is not None and self.queue.qsize() >= EVENTS_QUEUED:
                    await asyncio.sleep(0.01)  # the stream's client lags: the process waits (flow control)
            else:
                if self.marker is not None and partial:
                    for line in self._session_lines([partial]):
                        self._emit({"type": "stdout", "text": line, "timestamp": self.clock.now_ms()})
                if self.after is not None:
                    self.after()
                return event
        raise RuntimeError("the event stream ended without an exit")

    def _session_lines(self, lines: list[str]) -> list[str]:
        """Return the lines to send, without the ones the marker takes (a session's end-of-run dump)."""
        marker = self.marker
        return [line for line in lines if line and (marker is None or not marker(line))]


class SessionRun:
    """The markers one session run prints at its end: its variables, directory and exit code."""

    def __init__(self, state: SessionState) -> None:
        self.state = state
        self.in_env = False
        self.env: dict[str, str] = {}
        self.pwd: str | None = None
        self.exit_code: int | None = None

    def consume(self, line: str) -> bool:
        """Take a marker line (or a line of the variables dump); tell whether it was one."""
        if line == ENV_START:
            self.in_env = True
        elif line == ENV_END:
            self.in_env = False
        elif self.in_env:
            match = _EXPORT.match(line)
            if match and match.group(1) not in NOT_PERSISTED:
                self.env[match.group(1)] = _unquote(match.group(2) or "")
        elif line.startswith(PWD_MARK):
            self.pwd = line[len(PWD_MARK) :]
        elif line.startswith(EXIT_MARK):
            with contextlib.suppress(ValueError):
                self.exit_code = int(line[len(EXIT_MARK) :])
        else:
            return False
        return True

    def settle(self) -> None:
        """Keep what the run dumped as the session's state for the next run."""
        if self.env:
            self.state.env = self.env
        if self.pwd:
            self.state.cwd = self.pwd
        self.state.started = True


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def session_argv(script: str) -> list[str]:
    """Return the argv of one session run of ``script``: bash without its start files (sh without bash)."""
    return ["bash", "--noprofile", "--norc", "-c", script] if shell() == "bash" else ["sh", "-c", script]


def session_script(state: SessionState, command: str, cwd: str) -> str:
    """Return the script of one session run (execd's wrapping: restore, run, dump)."""
    lines = ["exec 2>&1"]
    for key in sorted(state.env):
        lines.append(f"export {key}={shlex.quote(state.env[key])}")
    lines.append(f"cd {shlex.quote(cwd)}")
    lines.append(command if command.endswith("\n") else command + "\n")
    lines += [
        "__USER_EXIT_CODE__=$?",
        f'printf "\\n%s\\n" "{ENV_START}"',
        "export -p",
        f'printf "%s\\n" "{ENV_END}"',
        f'printf "{PWD_MARK}%s\\n" "$(pwd)"',
        f'printf "{EXIT_MARK}%s\\n" "$__USER_EXIT_CODE__"',
        'exit "$__USER_EXIT_CODE__"',
    ]
    return "\n".join(lines) + "\n"


class LinuxCommandRuntime(CommandRuntime):
    """Run execd's validated commands and session runs as real processes of the record's linux sandbox."""

    capabilities: Capabilities = LINUX

    def __init__(
        self,
        clock: VirtualClock,
        ids: IdFactory,
        backend: LinuxBackend[SandboxRecord],
        on_oom: Callable[[SandboxRecord], None],
    ) -> None:
        super().__init__(clock, ids)
        self.backend = backend
        self.on_oom = on_oom
        self.sessions: dict[tuple[str, str], SessionState] = {}
        self.samples: dict[str, tuple[float, float]] = {}

    def start(self, sb: SandboxRecord, run: RunRequest) -> tuple[CommandRecord, LinuxExecution]:
        """Record the command and start it (a foreground one streams its events)."""
        record = new_command(sb, self.ids, self.clock, run)
        argv = list(run.argv) if run.argv else [shell(), "-c", run.command]
        if run.background:  # one combined log, in the order written (execd points both at one file)
            argv = [shell(), "-c", 'exec "$@" 2>&1', shell(), *argv]
        timeout = run.timeout_ms / 1000.0 if run.timeout_ms and run.timeout_ms > 0 else None

        async def launch() -> Process:
            return await self.backend.start(sb, argv, env=run.env, cwd=run.cwd, timeout=timeout)

        execution = LinuxExecution(
            record, self.clock, launch, stream=not run.background, on_oom=lambda: self.on_oom(sb)
        )
        execution.start()
        return record, execution

    def run_in_session(
        self, sb: SandboxRecord, session_id: str, run: RunRequest
    ) -> tuple[CommandRecord, LinuxExecution]:
        """Run a command in a bash session (see the module docstring); the session keeps its state."""
        state = self.sessions.setdefault((sb.id, session_id), SessionState(sb.sessions.get(session_id, "/")))
        record = new_command(sb, self.ids, self.clock, run)
        script = session_script(state, run.command, run.cwd or state.cwd)
        timeout = run.timeout_ms / 1000.0 if run.timeout_ms and run.timeout_ms > 0 else None
        marker = SessionRun(state)

        async def launch() -> Process:
            return await self.backend.start(sb, session_argv(script), env=run.env, cwd="/", timeout=timeout)

        def after() -> None:
            marker.settle()
            if session_id in sb.sessions:
                sb.sessions[session_id] = state.cwd

        execution = LinuxExecution(
            record, self.clock, launch, stream=True, on_oom=lambda: self.on_oom(sb), marker=marker.consume, after=after
        )
        execution.start()
        return record, execution

    def forget_session(self, sb: SandboxRecord, session_id: str) -> None:
        """Drop a deleted session's state."""
        self.sessions.pop((sb.id, session_id), None)

    async def metrics(self, sb: SandboxRecord) -> dict[str, Any]:
        """Return ``GET /metrics``'s body: the memory and CPU of the sandbox's processes (CPU since the last call)."""
        usage = await self.backend.usage(sb)
        now = time.monotonic()
        last = self.samples.get(sb.id)
        self.samples[sb.id] = (now, usage.cpu_seconds)
        cpus = max(1, usage.cpu_count)
        percent = (
            0.0 if last is None or now <= last[0] else (usage.cpu_seconds - last[1]) / (now - last[0]) / cpus * 100
        )
        return usage_metrics(sb, percent, usage.memory_bytes, self.clock.now_ms())

    def clear(self) -> None:
        """Forget every session (the sandboxes are gone or replaced)."""
        self.sessions.clear()
