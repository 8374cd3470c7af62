"""What the management API's routes run processes on, whatever the runtime: the execution adapter's interface.

The routes (:mod:`.routes.management`) see a :class:`ProcessRuntime`; its implementations turn the runtime's
events into the daemon's process records (:mod:`.processes` on the command emulator, :mod:`.linux_runtime` on
the linux runtime) and the mock picks one (``mock.py``). This module imports no runtime implementation, so
the routes never do (``lint-imports``). A route of a capability the runtime lacks (``pty``: PTY sessions,
``ports``: TCP tunnels) answers 501 ``not_supported`` (:func:`~.model.management.unsupported`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

from mockserver.runtime import Capabilities, Terminal

from .model.daemon import CommandSpec, Daemon, ProcessRecord, PtySpec
from .model.records import Sandbox

__all__ = ["ProcessRuntime"]


class ProcessRuntime(Protocol):
    """Start, signal and follow the processes of sandboxes; open their terminals and ports."""

    #: What the runtime serves beyond commands: PTY sessions (``pty``), TCP tunnels (``ports``).
    capabilities: Capabilities

    def spawn(self, sandbox: Sandbox, daemon: Daemon, spec: CommandSpec) -> ProcessRecord:
        """Start ``spec`` in ``sandbox`` in the background; return its (running) record."""

    def kill(self, daemon: Daemon, proc: ProcessRecord, signal: int = 9) -> None:
        """End a running process with ``signal`` (a no-op once it ended); the record may end a moment later."""

    async def stop(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """Kill the process (SIGKILL to its group) and wait, briefly, until its record shows the end."""

    async def write_stdin(self, daemon: Daemon, proc: ProcessRecord, data: bytes) -> None:
        """Feed ``data`` to a process's stdin pipe."""

    async def close_stdin(self, daemon: Daemon, proc: ProcessRecord) -> None:
        """Close a process's stdin pipe (it sees end of file)."""

    def follow(self, daemon: Daemon, proc: ProcessRecord, stream: str, *, with_exit: bool) -> AsyncIterator[Any]:
        """Yield the process's output events on ``stream`` as they come, and its exit event if ``with_exit``."""

    async def open_terminal(self, sandbox: Sandbox, spec: PtySpec) -> Terminal:
        """Start ``spec`` on a new PTY in ``sandbox`` (only with the ``pty`` capability)."""

    async def open_port(self, sandbox: Sandbox, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to ``port`` inside ``sandbox`` (OSError when nothing listens; only with the ``ports`` capability)."""

    def close(self, sandbox_id: str) -> None:
        """Kill every process of a sandbox that is gone (safe from any thread)."""
