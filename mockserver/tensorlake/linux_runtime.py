"""The linux process runtime: the management API's commands as real processes in Linux namespaces.

:class:`LinuxProcessRuntime` implements :class:`~.processes.ProcessRuntime` on the sandboxes of a
:class:`~mockserver.linux.host.LinuxHost`. It never decides anything the model decides: the routes validate
with the model's rules, the daemon records what happened, and this module only runs it.

* A command is ``[command, *args]`` exec'd without a shell (``PATH`` looked up), with the sandbox's
  environment plus ``env``, in ``working_dir`` (``/`` by default). Its stdout and stderr become the daemon's
  line events as they come, :data:`LINES_PER_TURN` lines per turn of the event loop at most; the process
  is flow-controlled (:mod:`mockserver.linux.process`), so a flood goes as fast as it is recorded; its end is ``exit_code``, or ``signal`` with ``reason`` ``signaled``,
  ``timed_out`` (a run's ``timeout``, in real seconds) or ``oom_killed`` (the sandbox's memory cgroup).
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
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from mockserver.core.clock import VirtualClock
from mockserver.linux import ExitStatus, LinuxProcess, LinuxSandbox, OutputChunk, SandboxStateError, SpawnError
from mockserver.linux.forward import open_connection

from .model import management as rules
from .model.daemon import CommandSpec, Daemon, ProcessRecord, PtySpec
from .model.records import Sandbox
from .processes import RecordedRuntime, Terminal

__all__ = ["LinuxProcessRuntime", "LinuxTerminal"]

_Key = tuple[str, int]
#: Output lines recorded per turn of the event loop (a flood of short lines is recorded in slices).
LINES_PER_TURN = 128
STOP_WAIT = 5.0
_SPAWN_CODES = {"permission_denied": 126}


@dataclass
class _Running:
    """A command of the daemon and the real process behind it (once it started)."""

    task: asyncio.Task[None] | None = None
    process: LinuxProcess | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    pending_signal: int | None = None


async def _start(
    linux: LinuxSandbox,
    spec: CommandSpec | PtySpec,
    *,
    stdin: bool = False,
    timeout: float | None = None,
    pty: tuple[int, int] | None = None,
) -> LinuxProcess:
    """Start ``[command, *args]`` of ``spec`` in ``linux``: its ``env`` added, in its ``working_dir`` (``/``)."""
    return await linux.start_process_async(
        [spec.command, *spec.args],
        env=dict(spec.env),
        cwd=spec.working_dir or "/",
        stdin=stdin,
        timeout=timeout,
        pty=pty,
    )


def _pieces(data: bytes) -> list[bytes]:
    """Cut ``data`` into slices of about :data:`LINES_PER_TURN` lines each."""
    lines = data.count(b"\n")
    if lines <= LINES_PER_TURN:
        return [data]
    size = max(1, len(data) * LINES_PER_TURN // lines)
    return [data[start : start + size] for start in range(0, len(data), size)]


class LinuxTerminal:
    """A process on a PTY of a linux sandbox (the :class:`~.processes.Terminal` the PTY WebSocket drives)."""

    def __init__(self, process: LinuxProcess) -> None:
        self.process = process

    def write(self, data: bytes) -> None:
        """Send keystrokes to the terminal."""
        with contextlib.suppress(SandboxStateError):
            self.process.write_stdin(data)

    def resize(self, rows: int, cols: int) -> None:
        """Set the terminal's size (its foreground process group gets SIGWINCH)."""
        if self.process.running:
            self.process.resize(rows, cols)

    def kill(self) -> None:
        """SIGKILL the terminal's process group."""
        with contextlib.suppress(SandboxStateError):
            self.process.kill()

    async def output(self) -> AsyncIterator[bytes | int]:
        """Yield the terminal's output from its start, then the exit code."""
        async for event in self.process.aevents():
            if isinstance(event, OutputChunk):
                yield event.data
            else:
                yield event.shell_code


class LinuxProcessRuntime(RecordedRuntime):
    """Run the daemon's commands as real processes of the sandbox ``sandbox_of`` makes (or finds)."""

    terminals = True

    def __init__(self, clock: VirtualClock, sandbox_of: Callable[[Sandbox], Awaitable[LinuxSandbox]]) -> None:
        super().__init__(clock)
        self.sandbox_of = sandbox_of
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
            linux = await self.sandbox_of(sandbox)
            try:
                process = await _start(linux, spec, stdin=spec.stdin_pipe, timeout=spec.timeout)
            except SpawnError as exc:
                daemon.write(proc, "stderr", f"{exc.message}\n".encode(), self.clock.now())
                self._finish(daemon, proc, exit_code=_SPAWN_CODES.get(exc.code, 127))
                return
            running.process = process
            running.started.set()
            if running.pending_signal is not None:
                process.signal(running.pending_signal)
            async for event in process.aevents():
                if isinstance(event, OutputChunk):
                    stream = "stderr" if event.stream == "stderr" else "stdout"
                    for piece in _pieces(event.data):
                        daemon.write(proc, stream, piece, self.clock.now())
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

    def _end(self, daemon: Daemon, proc: ProcessRecord, status: ExitStatus) -> None:
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
        with contextlib.suppress(SandboxStateError):
            running.process.signal(signal)

    async def stop(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """SIGKILL the process group and wait up to :data:`STOP_WAIT` s for the record to show the end."""
        self.kill(daemon, proc, signals.SIGKILL)
        running = self._running.get((daemon.sandbox_id, proc.pid))
        if running is None or running.task is None:
            return
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(running.task), STOP_WAIT)

    async def _process(self, daemon: Daemon, proc: ProcessRecord) -> LinuxProcess | None:
        running = self._running.get((daemon.sandbox_id, proc.pid))
        if running is None:
            return None
        await running.started.wait()
        return running.process

    async def write_stdin(self, daemon: Daemon, proc: ProcessRecord, data: bytes) -> None:
        """Feed ``data`` to the process's stdin pipe."""
        process = await self._process(daemon, proc)
        if process is not None:
            with contextlib.suppress(SandboxStateError):
                process.write_stdin(data)

    async def close_stdin(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """Close the process's stdin pipe."""
        process = await self._process(daemon, proc)
        if process is not None:
            with contextlib.suppress(SandboxStateError):
                process.close_stdin()

    # -- terminals and ports -----------------------------------------------------------------------

    async def open_terminal(self, sandbox: Sandbox, spec: PtySpec) -> Terminal:
        """Start ``spec`` on a new PTY of the sandbox (the model's refusal when it cannot start)."""
        linux = await self.sandbox_of(sandbox)
        try:
            process = await _start(linux, spec, pty=(spec.rows, spec.cols))
        except SpawnError as exc:
            raise rules.pty_start_failed(exc.message) from exc
        return LinuxTerminal(process)

    async def open_port(self, sandbox: Sandbox, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to ``port`` inside the sandbox (OSError when nothing listens)."""
        return await open_connection(await self.sandbox_of(sandbox), port)

    def close(self, sandbox_id: str) -> None:
        """Cancel the tasks of a sandbox that is gone (its processes died with it); safe from any thread."""
        for key, running in list(self._running.items()):
            task = running.task
            if key[0] != sandbox_id or task is None or task.done():
                continue
            loop = task.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)
