"""What execd's routes run things on, whatever the runtime: the execution adapter's interface.

One route table (:mod:`.routes.execd`) serves execd on both runtimes. The routes see an :class:`Execd`: its
:class:`Commands` (commands, bash sessions, metrics: every runtime), and its :class:`CodeContexts` and
:class:`PtySessions` where the runtime has those capabilities (``code``, ``pty``), else None; a route of a
missing capability answers that capability's documented refusal (:mod:`.model.code`, :mod:`.model.execd`).

The implementations turn the runtime's events into execd's records and SSE events: :mod:`.commands` on the
command emulator, :mod:`.linux_runtime`, :mod:`.linux_code` and :mod:`.linux_pty` on the linux runtime; the
mock composes one :class:`Execd` (``mock.py``). This module imports no runtime implementation, so the routes
never do (``lint-imports``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mockserver.runtime import Capabilities

from .model import code as code_rules
from .model import pty as pty_rules
from .model.execd import RunRequest
from .model.records import CommandRecord, SandboxRecord

__all__ = ["CodeContexts", "Commands", "Execd", "Holder", "PtySession", "PtySessions", "RunningCommand"]


class RunningCommand(Protocol):
    """A started command as the routes see it: its record and, for a foreground one, its SSE events."""

    record: CommandRecord

    def events(self) -> AsyncIterator[dict[str, Any]]:
        """Yield the events the SSE stream must send, ending after the terminal one."""
        ...


class Commands(Protocol):
    """execd's commands, bash sessions and metrics on one runtime."""

    capabilities: Capabilities

    def start(self, sb: SandboxRecord, run: RunRequest) -> tuple[CommandRecord, RunningCommand]:
        """Record the command and start it (a foreground one streams its events)."""
        ...

    def run_in_session(
        self, sb: SandboxRecord, session_id: str, run: RunRequest
    ) -> tuple[CommandRecord, RunningCommand]:
        """Run a command in a bash session (its state kept between runs where the runtime has ``sessions``)."""
        ...

    def forget_session(self, sb: SandboxRecord, session_id: str) -> None:
        """Drop a deleted session's state."""
        ...

    async def metrics(self, sb: SandboxRecord) -> dict[str, Any]:
        """Return ``GET /metrics``'s body."""
        ...


class CodeContexts(Protocol):
    """execd's code contexts (the ``code`` capability)."""

    async def create(self, sb: SandboxRecord, language: str, cwd: str | None) -> code_rules.CodeContext:
        """Make a context (starting its interpreter)."""
        ...

    def get(self, sb: SandboxRecord, context_id: str) -> code_rules.CodeContext:
        """Return a context (404 when there is none)."""
        ...

    def list(self, sb: SandboxRecord, language: str | None) -> list[code_rules.CodeContext]:
        """Return the contexts (of one language when given)."""
        ...

    def delete(self, sb: SandboxRecord, context_id: str) -> None:
        """End a context and its interpreter (404 when there is none)."""
        ...

    def delete_language(self, sb: SandboxRecord, language: str) -> None:
        """End every context of ``language``."""
        ...

    def interrupt(self, sb: SandboxRecord, context_id: str) -> None:
        """Interrupt the cell running in a context."""
        ...

    async def start_run(self, sb: SandboxRecord, run: code_rules.CodeRun) -> AsyncIterator[dict[str, Any]]:
        """Refuse the run as execd does, or return its events (``init`` first, the end last)."""
        ...


class Holder:
    """The client holding a PTY session; the session evicts it (close 4001) when another takes over."""

    def __init__(self, evict: Callable[[], Awaitable[None]]) -> None:
        self.evict = evict
        self.queue: asyncio.Queue[tuple[int, bytes] | int] = asyncio.Queue()


class PtySession(Protocol):
    """One PTY session as its routes drive it."""

    id: str
    pipe: bool
    total: int
    exit_code: int | None
    holder: Holder | None

    @property
    def started(self) -> bool:
        """Tell whether its shell was started (by a first attach)."""
        ...

    @property
    def running(self) -> bool:
        """Tell whether the shell runs (or has not started yet)."""
        ...

    def replay(self, since: int) -> tuple[int, bytes]:
        """Return the retained output from byte ``since`` on and its first offset."""
        ...

    def write(self, data: bytes) -> None:
        """Send stdin (keystrokes, in PTY mode)."""
        ...

    def resize(self, rows: int, cols: int) -> None:
        """Set the terminal's size (PTY mode only)."""
        ...

    def signal(self, number: int | None) -> None:
        """Send a signal to the shell's process group."""
        ...


class PtySessions(Protocol):
    """execd's PTY sessions (the ``pty`` capability)."""

    def create(self, sb: SandboxRecord, request: pty_rules.PtyRequest) -> PtySession:
        """Record a new session (its shell starts on the first attach)."""
        ...

    def get(self, sb: SandboxRecord, session_id: str) -> PtySession:
        """Return a session (404 ``CONTEXT_NOT_FOUND`` when there is none)."""
        ...

    def delete(self, sb: SandboxRecord, session_id: str) -> None:
        """End a session and its shell (404 when there is none)."""
        ...

    async def start(self, sb: SandboxRecord, session: PtySession, pipe: bool) -> str | None:
        """Start the session's shell (PTY, or pipes when ``pipe``); return why it could not, or None."""
        ...


@dataclass(frozen=True)
class Execd:
    """What execd runs on: the commands, and the code contexts and PTY sessions where the runtime has them."""

    commands: Commands
    code: CodeContexts | None = None
    ptys: PtySessions | None = None

    @property
    def capabilities(self) -> Capabilities:
        """Return what the runtime serves beyond commands."""
        return self.commands.capabilities
