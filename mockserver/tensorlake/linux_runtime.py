"""The linux process runtime: the management API's commands as real processes in Linux namespaces.

:class:`LinuxProcessRuntime` implements :class:`~.processes.ProcessRuntime` on the runtime layer's
:class:`~mockserver.runtime.linux.LinuxBackend` (the sandboxes of :mod:`.linux_sandboxes`). It never decides anything the model decides: the routes validate
with the model's rules, the daemon records what happened, and this module only runs it.

* A command is ``[command, *args]`` exec'd without a shell (``PATH`` looked up), with the sandbox's
  environment plus ``env``, in ``working_dir`` (``/`` by default). Its stdout and stderr become the daemon's
  line events as they come, :data:`LINES_PER_TURN` lines per turn of the event loop at most; the process
  is flow-controlled (:mod:`mockserver.linux.process`), so a flood goes as fast as it is recorded; its end
  is ``exit_code``, or ``signal`` with ``reason`` ``signaled``, ``timed_out`` (a run's ``timeout``, in real seconds) or ``oom_killed`` (the sandbox's memory cgroup).
* ``stdin_mode: "pipe"`` gives the process a real stdin pipe; ``stdin`` and ``stdin/close`` feed it.
* Signals go to the process group; a signal the program handles does not end it.
* Terminals are PTYs of the sandbox (:meth:`LinuxProcessRuntime.open_terminal`); ports are reached inside
  the sandbox's network namespace (:meth:`LinuxProcessRuntime.open_port`).

Known deviations: a command that cannot start (missing program, missing ``working_dir``) is reported as a
process that wrote the shell's message to stderr and exited 127 (126 when not executable), not as an error
of the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as signals
from dataclasses import dataclass, field

from mockserver.core.clock import VirtualClock
from mockserver.runtime import LINUX, Capabilities, Exited, Output, Process, Terminal, spawn_exit_code
from mockserver.runtime.linux import LinuxBackend, SandboxStateError, SpawnError

from .model import management as rules
from .model.daemon import CommandSpec, Daemon, ProcessRecord, PtySpec
from .model.records import Sandbox
from .processes import RecordedRuntime

__all__ = ["LinuxProcessRuntime"]

_Key = tuple[str, int]
#: Output lines recorded per turn of the event loop (a flood of short lines is recorded in slices).
LINES_PER_TURN = 128
STOP_WAIT = 5.0


@dataclass
class _Running:
    """A command of the daemon and the real process behind it (once it started)."""

    task: asyncio.Task[None] | None = None
    process: Process | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    pending_signal: int | None = None


def _pieces(data: bytes) -> list[bytes]:
    """Cut ``data`` into slices of about :data:`LINES_PER_TURN` lines each."""
    lines = data.count(b"\n")
    if lines <= LINES_PER_TURN:
        return [data]
    size = max(1, len(data) * LINES_PER_TURN // lines)
    return [data[start : start + size] for start in range(0, len(data), size)]


class LinuxProcessRuntime(RecordedRuntime):
    """Run the daemon's commands as real processes of the sandbox ``sandbox_of`` makes (or finds)."""

    capabilities: Capabilities = LINUX

    def __init__(self, clock: VirtualClock, backend: LinuxBackend[Sandbox]) -> None:
        super().__init__(clock)
        self.backend = backend
        self._running: dict[_Key, _Running] = {}

    # -- commands ----------------------------------------------------------------------------------

    def spawn(self, sandbox: Sandbox, daemon: Daemon, spec: CommandSpec) -> ProcessRecord:
        """Record ``spec`` as running and start it; the record follows the real process from then on."""
        proc = daemon.start(spec, self.clock.now())
        running = _Running()
        self._running[(daemon.sandbox_id, proc.pid)] = running
        running.task = asyncio.create_task(self._execute(sandbox, daemon, proc, spec, running))
        return proc

    async def _execute(
        self, sandbox: Sandbox, daemon: Daemon, proc: ProcessRecord, spec: CommandSpec, running: _Running
    ) -> None:
        key = (daemon.sandbox_id, proc.pid)
        try:
            try:
                process = await self.backend.start(
                    sandbox,
                    [spec.command, *spec.args],
                    env=dict(spec.env),
                    cwd=spec.working_dir or "/",
                    stdin=spec.stdin_pipe,
                    timeout=spec.timeout,
                )
            except SpawnError as exc:
                daemon.write(proc, "stderr", f"{exc.message}\n".encode(), self.clock.now())
                self._finish(daemon, proc, exit_code=spawn_exit_code(exc.code))
                return
            running.process = process
            running.started.set()
            if running.pending_signal is not None:
                process.signal(running.pending_signal)
            async for event in process.events():
                if isinstance(event, Output):
                    for piece in _pieces(event.data):
                        daemon.write(proc, event.stream, piece, self.clock.now())
                        self._notify(daemon, proc)
                        await asyncio.sleep(0)  # bounded work per turn of the loop: other requests go between
                else:
                    self._end(daemon, proc, event)
        except SandboxStateError:
            self._finish(daemon, proc, signal=9, reason="signaled")
        except asyncio.CancelledError:
            self._finish(daemon, proc, signal=9, reason="signaled")
            raise
        finally:
            running.started.set()
            self._running.pop(key, None)

    def _end(self, daemon: Daemon, proc: ProcessRecord, status: Exited) -> None:
        if status.oom_killed:
            self._finish(daemon, proc, signal=signals.SIGKILL, reason="oom_killed")
        elif status.timed_out:
            self._finish(daemon, proc, signal=signals.SIGKILL, reason="timed_out")
        elif status.code is None:
            self._finish(daemon, proc, signal=status.signal or signals.SIGKILL, reason="signaled")
        else:
            self._finish(daemon, proc, exit_code=status.code)

    def kill(self, daemon: Daemon, proc: ProcessRecord, signal: int = 9) -> None:
        """Send ``signal`` to the process group (a not yet started process gets it as soon as it starts)."""
        running = self._running.get((daemon.sandbox_id, proc.pid))
        if running is None or not proc.running:
            return
        if running.process is None:
            running.pending_signal = signal
            return
        running.process.signal(signal)

    async def stop(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """SIGKILL the process group and wait up to :data:`STOP_WAIT` s for the record to show the end."""
        self.kill(daemon, proc, signals.SIGKILL)
        running = self._running.get((daemon.sandbox_id, proc.pid))
        if running is None or running.task is None:
            return
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(running.task), STOP_WAIT)

    async def _process(self, daemon: Daemon, proc: ProcessRecord) -> Process | None:
        running = self._running.get((daemon.sandbox_id, proc.pid))
        if running is None:
            return None
        await running.started.wait()
        return running.process

    async def write_stdin(self, daemon: Daemon, proc: ProcessRecord, data: bytes) -> None:
        """Feed ``data`` to the process's stdin pipe."""
        process = await self._process(daemon, proc)
        if process is not None:
            process.write_stdin(data)

    async def close_stdin(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """Close the process's stdin pipe."""
        process = await self._process(daemon, proc)
        if process is not None:
            process.close_stdin()

    # -- terminals and ports -----------------------------------------------------------------------

    async def open_terminal(self, sandbox: Sandbox, spec: PtySpec) -> Terminal:
        """Start ``spec`` on a new PTY of the sandbox (the model's refusal when it cannot start)."""
        try:
            return await self.backend.start(
                sandbox,
                [spec.command, *spec.args],
                env=dict(spec.env),
                cwd=spec.working_dir or "/",
                pty=(spec.rows, spec.cols),
            )
        except SpawnError as exc:
            raise rules.pty_start_failed(exc.message) from exc

    async def open_port(self, sandbox: Sandbox, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to ``port`` inside the sandbox (OSError when nothing listens)."""
        return await self.backend.open_port(sandbox, port)

    def close(self, sandbox_id: str) -> None:
        """Cancel the tasks of a sandbox that is gone (its processes died with it); safe from any thread."""
        for key, running in list(self._running.items()):
            task = running.task
            if key[0] != sandbox_id or task is None or task.done():
                continue
            loop = task.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)
