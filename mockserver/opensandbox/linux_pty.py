"""execd's PTY sessions on the linux runtime: a shell per session, its output retained for replay.

A :class:`PtySession` is created by ``POST /pty`` and starts its shell when the first WebSocket attaches:
``bash`` on a new PTY (or, in pipe mode, with stdin, stdout and stderr as pipes), or ``bash -c <command>``
when the session names a command. Everything the shell writes is kept (the newest
:data:`~.model.pty.REPLAY_LIMIT` bytes, with absolute offsets: the stream's byte count) and handed to
whichever client holds the session; the rules of holding, taking over and the frames are
:mod:`.model.pty`'s, the WebSocket itself is the routes'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from mockserver.runtime import Output, Terminal
from mockserver.runtime.linux import LinuxBackend, SpawnError, shell

from . import execution
from .execution import Holder
from .model import pty as rules
from .model.records import SandboxRecord

__all__ = ["PtySession", "PtySessions"]

_HEX = "0123456789abcdef"


@dataclass
class PtySession:
    """One PTY session: what it runs, its shell once started, and the output kept for replay."""

    id: str
    cwd: str | None
    command: str | None
    process: Terminal | None = None
    pipe: bool = False
    chunks: list[tuple[int, int, bytes]] = field(default_factory=list)
    total: int = 0
    exit_code: int | None = None
    holder: Holder | None = None
    pump: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        """Tell whether its shell was started (by a first attach)."""
        return self.process is not None

    @property
    def running(self) -> bool:
        """Tell whether the shell runs (or has not started yet)."""
        return self.exit_code is None

    async def start(self, backend: LinuxBackend[SandboxRecord], sb: SandboxRecord, pipe: bool) -> None:
        """Start the shell (PTY, or pipes when ``pipe``) in ``sb``'s sandbox and the pump that keeps its output."""
        if self.process is not None:
            return
        argv = [shell(), "-c", self.command] if self.command else [shell()]
        self.pipe = pipe
        self.process = await backend.start(
            sb, argv, env=dict(sb.spec.env), cwd=self.cwd or "/", stdin=pipe, pty=None if pipe else (24, 80)
        )
        self.pump = asyncio.ensure_future(self._pump(self.process))

    async def _pump(self, process: Terminal) -> None:
        async for event in process.events():
            if isinstance(event, Output):
                channel = rules.STDERR if event.stream == "stderr" else rules.STDOUT
                self.chunks.append((self.total, channel, event.data))
                self.total += len(event.data)
                while self.chunks and self.total - self.chunks[0][0] > rules.REPLAY_LIMIT:
                    self.chunks.pop(0)
                if self.holder is not None:
                    self.holder.queue.put_nowait((channel, event.data))
            else:
                self.exit_code = event.shell_code
                if self.holder is not None:
                    self.holder.queue.put_nowait(self.exit_code)

    def replay(self, since: int) -> tuple[int, bytes]:
        """Return the retained output from byte ``since`` on (clamped to the window) and its first offset."""
        parts = [(start, data) for start, _, data in self.chunks if start + len(data) > since]
        if not parts:
            return self.total, b""
        first = max(since, parts[0][0])
        data = b"".join(parts_data for _, parts_data in parts)
        return first, data[first - parts[0][0] :]

    def write(self, data: bytes) -> None:
        """Send stdin (keystrokes, in PTY mode)."""
        if self.process is not None and self.process.running:
            self.process.write_stdin(data)

    def resize(self, rows: int, cols: int) -> None:
        """Set the terminal's size (PTY mode only; ignored in pipe mode, as execd does)."""
        if self.process is not None and not self.pipe and rows and cols:
            self.process.resize(rows, cols)

    def signal(self, number: int | None) -> None:
        """Send a signal to the shell's process group (an unknown name: nothing)."""
        if number is not None and self.process is not None:
            self.process.signal(number)

    def kill(self) -> None:
        """End the shell."""
        self.signal(9)


class PtySessions:
    """Every sandbox's PTY sessions."""

    def __init__(self, backend: LinuxBackend[SandboxRecord], new_id: Callable[[], str]) -> None:
        self.backend = backend
        self.new_id = new_id
        self._sessions: dict[tuple[str, str], PtySession] = {}

    async def start(self, sb: SandboxRecord, session: execution.PtySession, pipe: bool) -> str | None:
        """Start a session's shell (PTY, or pipes when ``pipe``); return why it could not, or None."""
        assert isinstance(session, PtySession), "a session of these sessions"
        try:
            await session.start(self.backend, sb, pipe)
        except (SpawnError, OSError) as exc:
            return str(exc)
        return None

    def create(self, sb: SandboxRecord, request: rules.PtyRequest) -> PtySession:
        """Record a new session (its shell starts on the first attach)."""
        session = PtySession(self.new_id(), request.cwd, request.command)
        self._sessions[(sb.id, session.id)] = session
        return session

    def get(self, sb: SandboxRecord, session_id: str) -> PtySession:
        """Return a session; execd's 404 ``CONTEXT_NOT_FOUND`` when there is none."""
        session = self._sessions.get((sb.id, session_id))
        if session is None:
            raise rules.session_not_found(session_id)
        return session

    def delete(self, sb: SandboxRecord, session_id: str) -> None:
        """End a session and its shell; 404 when there is none."""
        session = self._sessions.pop((sb.id, session_id), None)
        if session is None:
            raise rules.session_not_found(session_id)
        session.kill()

    def clear(self) -> None:
        """Drop every session (the sandboxes are gone)."""
        self._sessions.clear()

    def forget(self, sandbox_id: str) -> None:
        """Drop a gone sandbox's sessions."""
        for key in [k for k in self._sessions if k[0] == sandbox_id]:
            del self._sessions[key]
