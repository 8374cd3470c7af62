"""The linux runtime behind the runtime interface: real processes, terminals and ports of Linux sandboxes.

:class:`LinuxBackend` starts processes in the sandbox a provider's record is bound to (the provider's
``sandbox_of`` makes or finds it, see :mod:`mockserver.linux.bindings`) and hands them out as
:class:`RealProcess`, which is both a :class:`~.interface.Process` and a :class:`~.interface.Terminal`.
:func:`relay` is the one loop that turns a real process's events (``OutputChunk``, ``Exited``) into the
runtime's (:class:`~.interface.Output`, :class:`~.interface.Exited`): a terminal's output is ``stdout``.

A process whose sandbox is paused or gone ignores its stdin, signals and resizes (they would fail), as a
process that has ended does; a start that fails raises :class:`SpawnError` (``reason`` for
:func:`~.interface.spawn_exit_code`) or :class:`SandboxStateError` (the sandbox is paused or gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Generic, TypeVar

from mockserver.linux.forward import open_connection
from mockserver.linux.process import LinuxProcess, OutputChunk
from mockserver.linux.records import SandboxStateError, SpawnError, Usage
from mockserver.linux.sandbox import LinuxSandbox

from .interface import LINUX, Capabilities, Output, RuntimeEvent

__all__ = ["LinuxBackend", "RealProcess", "SandboxStateError", "SpawnError", "relay", "shell"]

#: A provider's sandbox record.
R = TypeVar("R")


def shell() -> str:
    """Return the shell execd would pick: bash when there is one, else sh."""
    return "bash" if shutil.which("bash") else "sh"


async def relay(process: LinuxProcess, since: int = 0) -> AsyncIterator[RuntimeEvent]:
    """Yield a real process's events from the ``since``-th on as the runtime's: output, then its exit."""
    async for event in process.aevents(since):
        if isinstance(event, OutputChunk):
            yield Output("stderr" if event.stream == "stderr" else "stdout", event.data)
        else:
            yield event  # one Exited for both runtimes (mockserver.core.exits)
            return


class RealProcess:
    """A real process of a linux sandbox: a :class:`~.interface.Process`, and a terminal when on a PTY."""

    def __init__(self, process: LinuxProcess) -> None:
        self.process = process

    @property
    def running(self) -> bool:
        """Tell whether the process still runs."""
        return self.process.running

    def events(self, since: int = 0) -> AsyncIterator[RuntimeEvent]:
        """Yield its events from the ``since``-th on (see :func:`relay`)."""
        return relay(self.process, since)

    def write_stdin(self, data: bytes) -> bool:
        """Feed ``data`` to its stdin (keystrokes, on a terminal); False when its sandbox is paused or gone."""
        try:
            self.process.write_stdin(data)
        except SandboxStateError:
            return False
        return True

    def close_stdin(self) -> None:
        """Close its stdin pipe."""
        with contextlib.suppress(SandboxStateError):
            self.process.close_stdin()

    def signal(self, number: int) -> None:
        """Send ``number`` to its process group."""
        if self.process.running:
            with contextlib.suppress(SandboxStateError):
                self.process.signal(number)

    def kill(self) -> None:
        """SIGKILL its process group."""
        with contextlib.suppress(SandboxStateError):
            self.process.kill()

    def resize(self, rows: int, cols: int) -> None:
        """Set its terminal's size (nothing for a process on pipes, or once it ended)."""
        if self.process.running and self.process.pty:
            self.process.resize(rows, cols)


class LinuxBackend(Generic[R]):
    """The linux runtime for one provider: processes, terminals and ports in each record's real sandbox."""

    capabilities: Capabilities = LINUX

    def __init__(self, sandbox_of: Callable[[R], Awaitable[LinuxSandbox]]) -> None:
        self.sandbox_of = sandbox_of

    async def start(
        self,
        record: R,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bool = False,
        timeout: float | None = None,
        pty: tuple[int, int] | None = None,
    ) -> RealProcess:
        """Start ``argv`` in the record's sandbox (made now if needed), with ``env`` added, in ``cwd``.

        ``stdin`` gives it a pipe; ``timeout`` (real seconds) kills its group; ``pty`` = (rows, cols) puts
        it on a new terminal.
        """
        sandbox = await self.sandbox_of(record)
        process = await sandbox.start_process_async(
            list(argv), env=dict(env or {}), cwd=cwd, stdin=stdin, timeout=timeout, pty=pty
        )
        return RealProcess(process)

    async def open_port(self, record: R, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to ``port`` inside the record's sandbox (OSError when nothing listens)."""
        return await open_connection(await self.sandbox_of(record), port)

    async def usage(self, record: R) -> Usage:
        """Return the CPU time, memory and process count of the record's sandbox (read off the loop)."""
        sandbox = await self.sandbox_of(record)
        return await asyncio.to_thread(sandbox.usage)
