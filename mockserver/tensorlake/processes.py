"""Process runtimes: what executes the commands the management API starts inside a sandbox.

A runtime runs a :class:`~.model.daemon.CommandSpec` for a sandbox and reports what the process writes and how
it ends into the sandbox's :class:`~.model.daemon.Daemon` (the model keeps the records; the runtime only
executes). :class:`~.execution.ProcessRuntime` is the whole interface the routes use. Two runtimes implement it:

* :class:`EmulatorRuntime` (the default) runs the shared command emulator
  (:class:`~mockserver.runtime.emulator.EmulatorBackend`) as asyncio tasks, its ``Sleep`` steps on the mock's
  virtual clock and a run's ``timeout`` enforced on that clock from the process's start, time waiting on stdin
  included (:func:`~mockserver.runtime.walk.walk`). A process started with ``stdin_mode: "pipe"``
  gets an open stdin: what is written is fed to the command that reads it (``cat`` echoes it as it comes;
  ``wc``, ``grep``, ``sh`` and the like read it all once it is closed), and such a command runs until stdin is
  closed. It has no terminals and no ports (:data:`~mockserver.runtime.EMULATOR`): PTY sessions and TCP
  tunnels answer 501.
* :class:`~.linux_runtime.LinuxProcessRuntime` (``runtime="linux"``) runs real processes in Linux
  namespaces (:class:`~mockserver.runtime.linux.LinuxBackend`, see ``docs/runtime.md``), with PTYs and TCP
  tunnels into the sandbox.

A runtime's :attr:`~.execution.ProcessRuntime.capabilities` say which of PTYs (``pty``) and tunnels (``ports``) it serves.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from mockserver.core.clock import VirtualClock
from mockserver.runtime import EMULATOR, Capabilities, Terminal
from mockserver.runtime.emulator import EmulatorBackend, Runner
from mockserver.runtime.walk import walk
from mockserver.sandbox.steps import OpenStdin, Output, StdinPipe, WaitStdin

from .model.daemon import CommandSpec, Daemon, ProcessRecord, PtySpec
from .model.records import Sandbox

__all__ = ["EmulatorRuntime", "RecordedRuntime"]

_Key = tuple[str, int]


class RecordedRuntime:
    """What both runtimes share: finishing records and waking the followers of a process."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self._changed: dict[_Key, asyncio.Event] = {}
        self._followers = 0

    def _event(self, daemon: Daemon, proc: ProcessRecord) -> asyncio.Event:
        return self._changed.setdefault((daemon.sandbox_id, proc.pid), asyncio.Event())

    def _notify(self, daemon: Daemon, proc: ProcessRecord) -> None:
        self._event(daemon, proc).set()

    def _finish(
        self,
        daemon: Daemon,
        proc: ProcessRecord,
        *,
        exit_code: int | None = None,
        signal: int | None = None,
        reason: str | None = None,
    ) -> None:
        if daemon.finish(proc, self.clock.now(), exit_code=exit_code, signal=signal, reason=reason):
            self._notify(daemon, proc)  # wakes the followers waiting on this event; later ones see the end
            self._changed.pop((daemon.sandbox_id, proc.pid), None)

    async def follow(
        self, daemon: Daemon, proc: ProcessRecord, stream: str, *, with_exit: bool
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the process's output events as they come (and the exit event when asked)."""
        sent = 0
        self._followers += 1
        try:
            while True:
                sent = max(sent, proc.dropped)  # a follower that fell behind skips what was let go
                while sent - proc.dropped < len(proc.events):
                    event = proc.events[sent - proc.dropped]
                    sent += 1
                    if stream in ("output", event["stream"]):
                        yield event
                if not proc.running:
                    if with_exit:
                        yield proc.exit_event()
                    return
                changed = self._event(daemon, proc)
                changed.clear()  # nothing runs between the last look at the events and the wait
                await changed.wait()
        finally:
            self._followers -= 1

    def followers(self) -> int:
        """Return how many event streams are following processes now."""
        return self._followers


class EmulatorRuntime(RecordedRuntime):
    """Run commands in the command emulator as asyncio tasks on the server's event loop."""

    capabilities: Capabilities = EMULATOR

    def __init__(self, clock: VirtualClock, emulator_for: Callable[[Sandbox], Runner]) -> None:
        super().__init__(clock)
        self.backend: EmulatorBackend[Sandbox] = EmulatorBackend(emulator_for)
        self._tasks: dict[_Key, asyncio.Task[None]] = {}
        self._pipes: dict[_Key, tuple[StdinPipe, asyncio.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def spawn(self, sandbox: Sandbox, daemon: Daemon, spec: CommandSpec) -> ProcessRecord:
        """Start ``spec`` as a background task and return its record (with an open stdin pipe when asked)."""
        proc = daemon.start(spec, self.clock.now())
        self._loop = asyncio.get_running_loop()
        key = (daemon.sandbox_id, proc.pid)
        stdin = b""
        if spec.stdin_pipe:
            pipe = StdinPipe()
            self._pipes[key] = (pipe, asyncio.Event())
            stdin = OpenStdin(pipe)
        self._tasks[key] = asyncio.create_task(self._execute(sandbox, daemon, proc, spec.timeout, stdin))
        return proc

    async def _execute(
        self, sandbox: Sandbox, daemon: Daemon, proc: ProcessRecord, timeout: float | None, stdin: bytes
    ) -> None:
        emulator = self.backend.runner_for(sandbox)
        key = (daemon.sandbox_id, proc.pid)
        argv = [proc.command, *proc.args]

        def output(step: Output) -> None:
            daemon.write(proc, step.stream, step.data, self.clock.now())
            self._notify(daemon, proc)

        async def fed(step: WaitStdin) -> None:
            changed = self._pipes[key][1]
            while len(step.pipe.data) <= step.offset and not step.pipe.closed:
                changed.clear()
                await changed.wait()

        try:
            steps = emulator.run(argv, env=proc.env, cwd=proc.working_dir or "/", stdin=stdin)
            ended = await walk(steps, self.clock, timeout=timeout, output=output, stdin=fed)
            if ended.code is None:
                self._finish(daemon, proc, signal=9, reason="timed_out")
            else:
                self._finish(daemon, proc, exit_code=ended.code)
        except asyncio.CancelledError:
            self._finish(daemon, proc, signal=9, reason="signaled")
            raise
        except Exception as exc:  # an emulator bug must still end the stream cleanly
            daemon.write(
                proc, "stderr", f"sandproof: command failed in the emulator: {exc}\n".encode(), self.clock.now()
            )
            self._finish(daemon, proc, exit_code=127)
        finally:
            self._tasks.pop(key, None)
            self._pipes.pop(key, None)

    def live(self) -> int:
        """Return how many processes still run (each holds a task until it ends)."""
        return sum(not task.done() for task in self._tasks.values())

    def kill(self, daemon: Daemon, proc: ProcessRecord, signal: int = 9) -> None:
        """End a running process with ``signal`` and stop its task (the emulator has no signal handlers)."""
        if not proc.running:
            return
        self._finish(daemon, proc, signal=signal, reason="signaled")
        task = self._tasks.pop((daemon.sandbox_id, proc.pid), None)
        if task is not None:
            task.cancel()

    async def stop(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """End the process at once."""
        self.kill(daemon, proc)

    async def write_stdin(self, daemon: Daemon, proc: ProcessRecord, data: bytes) -> None:
        """Feed ``data`` to the process's stdin pipe (the command reads it when it reads stdin)."""
        held = self._pipes.get((daemon.sandbox_id, proc.pid))
        if held is not None:
            held[0].data.extend(data)
            held[1].set()

    async def close_stdin(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """Close the process's stdin pipe: a command reading it sees end of file."""
        held = self._pipes.get((daemon.sandbox_id, proc.pid))
        if held is not None:
            held[0].closed = True
            held[1].set()

    async def open_terminal(self, sandbox: Sandbox, spec: PtySpec) -> Terminal:
        """The emulator has no terminals."""
        raise NotImplementedError("the command emulator has no PTY")

    async def open_port(self, sandbox: Sandbox, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The emulator has no ports."""
        raise NotImplementedError("the command emulator has no ports")

    def close(self, sandbox_id: str) -> None:
        """Cancel every task of a sandbox that is gone; safe from any thread."""
        loop = self._loop
        for key, task in list(self._tasks.items()):
            if key[0] != sandbox_id or task.done():
                continue
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(task.cancel)
