"""Run commands as execd does on the command emulator: SSE events, timeouts, interrupts.

:class:`CommandRuntime` is what execd's routes start commands on, whatever the runtime: it records the
requests the model validated (:class:`~.model.execd.RunRequest`) and says what the runtime can do
(:attr:`CommandRuntime.capabilities`). :class:`EmulatorCommands` runs them on the command emulator: each
sandbox's :class:`~mockserver.runtime.emulator.Runner` (the shared emulator, bound by
:func:`emulator_runner`) is kept by the runtime's :class:`~mockserver.runtime.emulator.EmulatorBackend`, and
each command is an :class:`Execution` task.

Each command runs as an asyncio task that walks the emulator's steps with the runtime's one walker
(:func:`~mockserver.runtime.walk.walk`): ``Sleep`` on the virtual clock, the command killed when its
``timeout`` (ms, counted from its start) runs out; it pushes execd events into a
queue the foreground SSE stream drains. Background commands have no reader: their output goes to
the combined log only.

A bash session's run (:meth:`EmulatorCommands.run_in_session`) starts from the session's variables and
directory and keeps where the emulator's shell ended (:class:`~mockserver.sandbox.steps.ShellEnd`) for the
next run, as the linux runtime keeps what its bash dumps; its output is stdout and stderr folded, one line per
``stdout`` event (empty lines dropped), as execd sends a session's output.

Known deviations: ``ping`` events come every 3 s of *virtual* time; there is no 1 s grace sleep
after completion; ``uid``/``gid`` are accepted and ignored. A session keeps every variable the emulated
shell ends with (it has no unexported variables), and also what a run that ended with ``exit`` set.
"""

from __future__ import annotations

import asyncio
import codecs
import collections
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockserver.core import DnsTable, IdFactory, VirtualClock
from mockserver.runtime import EMULATOR, Capabilities
from mockserver.runtime.emulator import EmulatorBackend, Runner
from mockserver.runtime.walk import Tick, walk
from mockserver.sandbox.network import HttpTable
from mockserver.sandbox.steps import Output, ShellEnd

from .execution import RunningCommand
from .model import execd
from .model.egress import PolicyGate, effective_policy
from .model.execd import RunRequest, error_event, frame, new_command
from .model.records import CommandRecord, SandboxRecord

__all__ = [
    "DEVIATING_OPERATIONS",
    "NOT_PERSISTED",
    "PING_INTERVAL",
    "CommandRuntime",
    "EmulatorCommands",
    "EventQueue",
    "Execution",
    "RunnerFactory",
    "SessionState",
    "emulator_runner",
    "frame",
]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {"execd": ("POST /command", "POST /session/{sessionId}/run")}

PING_INTERVAL = 3.0
#: Variables a bash session does not carry to its next run (the shell sets them afresh).
NOT_PERSISTED = frozenset({"PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "_", "SHLVL", "OLDPWD", "PWD"})
_END = object()


@dataclass
class SessionState:
    """A bash session's state between runs: its exported variables and working directory."""

    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    started: bool = False

    def keep(self, end: ShellEnd) -> None:
        """Keep where a run's shell ended as the session's state for its next run."""
        self.env = {k: v for k, v in end.env.items() if k not in NOT_PERSISTED}
        self.cwd = end.cwd
        self.started = True


#: Builds a sandbox's runner; ``gate`` answers its DNS and connection checks by its current egress policy.
RunnerFactory = Callable[[SandboxRecord, PolicyGate], Runner]


def emulator_runner(sb: SandboxRecord, gate: PolicyGate, http: HttpTable | None = None) -> Runner:
    """Bind the shared command emulator to a sandbox's filesystem and egress gate."""
    from mockserver.sandbox.commands import CommandEmulator

    return CommandEmulator(sb.fs, gate=gate, http=http or HttpTable())


class _Events:
    """The events of one command for its one reader: a deque, and a future the reader waits on when it is empty.

    Lighter than :class:`asyncio.Queue` (no getter list, no put side to wake): the command's task appends on the
    loop, and the SSE stream takes what is there without a wait between two queued events.
    """

    def __init__(self) -> None:
        self.items: collections.deque[Any] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        """Queue ``item`` and wake the reader."""
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def qsize(self) -> int:
        """Return how many events wait to be read."""
        return len(self.items)

    async def get(self) -> Any:
        """Return the next event, waiting for one if need be."""
        while not self.items:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        return self.items.popleft()


class EventQueue:
    """A command's execd events for its foreground SSE stream: queued while it runs, then an end marker.

    A background command (``stream`` False) has no reader: its events are dropped.
    """

    def __init__(self, stream: bool) -> None:
        self.queue: _Events | None = _Events() if stream else None

    def _emit(self, event: dict[str, Any]) -> None:
        if self.queue is not None:
            self.queue.put_nowait(event)

    def _end_events(self) -> None:
        """Mark the end of the events (after the terminal one)."""
        if self.queue is not None:
            self.queue.put_nowait(_END)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Yield the events the SSE stream must send, ending after the terminal one."""
        assert self.queue is not None
        while True:
            item = await self.queue.get()
            if item is _END:
                return
            yield item


class Execution(EventQueue):
    """One running command: drives the steps and publishes events; ``ended`` is called with it once it has ended."""

    def __init__(
        self,
        record: CommandRecord,
        runner: Runner,
        clock: VirtualClock,
        *,
        env: Mapping[str, str],
        cwd: str,
        timeout_ms: int | None,
        stream: bool,
        argv: Sequence[str] | None = None,
        session: Callable[[ShellEnd], None] | None = None,
        ended: Callable[[Execution], None] | None = None,
    ) -> None:
        super().__init__(stream)
        self.record = record
        self.argv = list(argv) if argv else None
        self.runner = runner
        self.clock = clock
        self.env = dict(env)
        self.cwd = cwd
        self.timeout = None if not timeout_ms or timeout_ms <= 0 else timeout_ms / 1000.0
        self.session = session
        self._lines: _Lines | None = _Lines() if session is not None else None
        self.on_end = ended

    def start(self) -> None:
        """Start the command's task on the running loop."""
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._main())
        self.record.stop = lambda: _cancel(task, loop)

    async def _main(self) -> None:
        rec = self.record
        started = self.clock.now()
        try:
            code = await self._walk()
        except asyncio.CancelledError:
            rec.finish(-1, rec.stop_reason, self.clock.now())
            self._emit(error_event("-1", rec.stop_reason, self.clock.now_ms()))
        except Exception as exc:  # an emulator failure is a start failure: evalue is the error text
            rec.finish(255, str(exc), self.clock.now())
            self._emit(error_event(str(exc), str(exc), self.clock.now_ms()))
        else:
            now = self.clock.now()
            if code is None:
                rec.finish(-1, "signal: killed", now)
                self._emit(error_event("-1", "signal: killed", self.clock.now_ms()))
            elif code == 0:
                rec.finish(0, None, now)
                elapsed = round((now - started) * 1000)
                self._emit({"type": "execution_complete", "execution_time": elapsed, "timestamp": self.clock.now_ms()})
            else:
                rec.finish(code, f"exit status {code}", now)
                self._emit(error_event(str(code), f"exit status {code}", self.clock.now_ms()))
        finally:
            self._end_events()
            if self.on_end is not None:
                self.on_end(self)

    async def _walk(self) -> int | None:
        """Walk the steps (:func:`~mockserver.runtime.walk.walk`); return the exit code, or None when the timeout killed it.

        Output becomes ``stdout``/``stderr`` events (a session's, bare lines); a ``ping`` goes out each
        :data:`PING_INTERVAL` of virtual time slept, one per wake-up however far the clock jumped.
        """
        command: str | Sequence[str] = self.argv if self.argv else self.record.content
        steps = self.runner.run(command, env=self.env, cwd=self.cwd)
        ended = await walk(
            steps, self.clock, timeout=self.timeout, output=self._output, tick=Tick(PING_INTERVAL, self._ping)
        )
        if ended.code is not None:
            self._end_session(ended.shell)
        return ended.code

    def _ping(self) -> None:
        self._emit({"type": "ping", "text": "pong", "timestamp": self.clock.now_ms()})

    def _output(self, step: Output) -> None:
        """Record a step's output and send it as events."""
        self.record.output.extend(step.data)
        if self._lines is not None:
            for line in self._lines.take(step.data):
                self._emit({"type": "stdout", "text": line, "timestamp": self.clock.now_ms()})
            return
        text = step.data.decode("utf-8", "replace")
        self._emit({"type": step.stream, "text": text, "timestamp": self.clock.now_ms()})

    def _end_session(self, end: ShellEnd | None) -> None:
        """Send a session run's last partial line, and hand the session where its shell ended."""
        if self._lines is not None:
            for line in self._lines.take(b"", final=True):
                self._emit({"type": "stdout", "text": line, "timestamp": self.clock.now_ms()})
        if self.session is not None and end is not None:
            self.session(end)


class _Lines:
    """Split a session run's output into the bare lines execd sends (empty ones dropped)."""

    def __init__(self) -> None:
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.partial = ""

    def take(self, data: bytes, *, final: bool = False) -> list[str]:
        """Return the complete lines ``data`` ends (every line left, when ``final``)."""
        self.partial += self.decoder.decode(data, final=final)
        *complete, self.partial = self.partial.split("\n")
        if final:
            complete.append(self.partial)
            self.partial = ""
        return [line for line in complete if line]


def _cancel(task: asyncio.Task[None], loop: asyncio.AbstractEventLoop) -> None:
    """Cancel ``task`` from any thread (a test thread, or the server's loop)."""
    if task.done() or loop.is_closed():
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        task.cancel()
    else:
        loop.call_soon_threadsafe(task.cancel)


class CommandRuntime:
    """The :class:`~.execution.Commands` execd's routes start commands on: the model's validated requests, a task each.

    :attr:`capabilities` say what else the runtime serves (here: nothing; the emulator keeps bash sessions,
    see :class:`EmulatorCommands` and :class:`~.linux_runtime.LinuxCommandRuntime`). A runtime implements
    :meth:`start`, and the session and metrics methods where it does more.
    """

    capabilities: Capabilities = Capabilities()

    def __init__(self, clock: VirtualClock, ids: IdFactory) -> None:
        self.clock = clock
        self.ids = ids
        #: The started commands that still run: each leaves the set as it ends.
        self._live: set[Execution] = set()

    def clear(self) -> None:
        """Forget what the runtime keeps per sandbox (the sandboxes are gone or replaced)."""

    def start(self, sb: SandboxRecord, run: RunRequest) -> tuple[CommandRecord, RunningCommand]:
        """Record the command and start it on the running loop (a foreground one streams its events)."""
        raise NotImplementedError

    def run_in_session(
        self, sb: SandboxRecord, session_id: str, run: RunRequest
    ) -> tuple[CommandRecord, RunningCommand]:
        """Run a command in a bash session: without the ``sessions`` capability, a command in its directory."""
        return self.start(sb, run)

    def forget_session(self, sb: SandboxRecord, session_id: str) -> None:
        """Drop a deleted session's state (a runtime without ``sessions`` keeps none)."""

    async def metrics(self, sb: SandboxRecord) -> dict[str, Any]:
        """Return ``GET /metrics``'s body: figures derived from the sandbox's limits and running commands."""
        return execd.metrics(sb, self.clock.now_ms())

    def running(self) -> int:
        """Return how many started commands still run (each holds a task until it ends)."""
        return len(self._live)


class EmulatorCommands(CommandRuntime):
    """Run the model's validated commands in the command emulator: one runner per sandbox (built by ``factory``)."""

    capabilities = EMULATOR

    def __init__(
        self, clock: VirtualClock, ids: IdFactory, dns: DnsTable, enforcement: str, factory: RunnerFactory
    ) -> None:
        super().__init__(clock, ids)
        self.dns = dns
        self.enforcement = enforcement
        self.factory = factory
        self.backend: EmulatorBackend[SandboxRecord] = EmulatorBackend(self._runner, key=lambda sb: sb.id)
        self.sessions: dict[tuple[str, str], SessionState] = {}

    def _runner(self, sb: SandboxRecord) -> Runner:
        gate = PolicyGate(lambda: effective_policy(sb), self.dns, self.enforcement)
        return self.factory(sb, gate)

    def clear(self) -> None:
        """Forget every runner and session (the sandboxes are gone or replaced)."""
        self.backend.clear()
        self.sessions.clear()

    def runner_for(self, sb: SandboxRecord) -> Runner:
        """Return the sandbox's runner; its egress obeys the sandbox's policy at the time of each check."""
        return self.backend.runner_for(sb)

    def start(self, sb: SandboxRecord, run: RunRequest) -> tuple[CommandRecord, RunningCommand]:
        """Record the command and start it on the running loop (a foreground one streams its events)."""
        record = new_command(sb, self.ids, self.clock, run)
        execution = Execution(
            record,
            self.runner_for(sb),
            self.clock,
            env=run.env,
            cwd=run.cwd,
            timeout_ms=run.timeout_ms,
            stream=not run.background,
            argv=run.argv,
            ended=self._live.discard,
        )
        self._live.add(execution)
        execution.start()
        return record, execution

    def run_in_session(
        self, sb: SandboxRecord, session_id: str, run: RunRequest
    ) -> tuple[CommandRecord, RunningCommand]:
        """Run a command in a bash session: from the session's variables and directory, keeping where it ends."""
        state = self.sessions.setdefault((sb.id, session_id), SessionState(sb.sessions.get(session_id, "/")))
        record = new_command(sb, self.ids, self.clock, run)

        def keep(end: ShellEnd) -> None:
            state.keep(end)
            if session_id in sb.sessions:
                sb.sessions[session_id] = state.cwd

        execution = Execution(
            record,
            self.runner_for(sb),
            self.clock,
            env={**run.env, **state.env},
            cwd=run.cwd,
            timeout_ms=run.timeout_ms,
            stream=True,
            session=keep,
            ended=self._live.discard,
        )
        self._live.add(execution)
        execution.start()
        return record, execution

    def forget_session(self, sb: SandboxRecord, session_id: str) -> None:
        """Drop a deleted session's state."""
        self.sessions.pop((sb.id, session_id), None)
