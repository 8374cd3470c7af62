"""A process running in a sandbox, seen from the host: its output as it comes, its exit, stdin and signals.

Events arrive on the runtime's I/O thread and are appended to the process's history; readers follow the
history from any point, blocking (:meth:`LinuxProcess.events`) or from asyncio (:meth:`LinuxProcess.aevents`,
safe from any event loop). The history keeps the newest :data:`HISTORY_LIMIT` bytes of output; a reader
that falls further behind skips what was dropped.

Output is flow-controlled: the sandbox's init sends at most :data:`WINDOW` bytes of a process's output
that the runtime has not acknowledged, and stops reading the process's pipes (so the process blocks on
its writes, as on a full pipe) until credit comes back. A process with readers gets credit as the furthest
of them takes the output (so a flood goes only as fast as the server consumes it); a process nobody
follows gets credit as its output arrives (its history then keeps only the newest bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mockserver.core.exits import Exited

__all__ = ["HISTORY_LIMIT", "WINDOW", "Exited", "LinuxProcess", "OutputChunk", "ProcessEvent", "StreamName"]

HISTORY_LIMIT = 8 * 1024 * 1024
#: Bytes of output the init may send before the runtime acknowledges them (the init's ``WINDOW`` too).
WINDOW = 1024 * 1024
#: Credit is returned in steps of at least this many bytes (one message per step).
CREDIT_STEP = WINDOW // 4
StreamName = Literal["stdout", "stderr", "pty"]


@dataclass(frozen=True)
class OutputChunk:
    """Bytes a process wrote to one stream (``pty`` for a process on a terminal)."""

    stream: StreamName
    data: bytes


ProcessEvent = OutputChunk | Exited


class LinuxProcess:
    """A handle on one process; every method is thread-safe."""

    def __init__(
        self,
        ident: int,
        argv: Sequence[str],
        *,
        pty: bool,
        stdin: bool,
        send: Callable[[dict[str, Any], bytes], None],
        signal: Callable[[int, int, bool], bool],
    ) -> None:
        self.ident = ident
        self.argv = tuple(argv)
        self.pty = pty
        self.pid: int | None = None
        self.started_at = time.time()
        self.ended_at: float | None = None
        self.status: Exited | None = None
        self._stdin_open = stdin or pty
        self._send = send
        self._signal = signal
        self._events: list[ProcessEvent] = []
        self._ends: list[int] = []  # the output offset at the end of each kept event
        self._base = 0
        self._bytes = 0
        self._received = 0  # output bytes received in all
        self._taken = 0  # output bytes the furthest reader has taken
        self._credited = 0  # output bytes acknowledged to the init
        self._readers = 0
        self._cond = threading.Condition()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def __repr__(self) -> str:
        return f"LinuxProcess({self.ident}, {list(self.argv)!r}, pid={self.pid}, status={self.status})"

    # -- fed by the runtime's I/O thread -----------------------------------------------------------

    def publish(self, event: ProcessEvent) -> None:
        """Append an event (runtime use); an Exited ends the history."""
        with self._cond:
            if self.status is not None:
                return
            self._events.append(event)
            if isinstance(event, OutputChunk):
                self._bytes += len(event.data)
                self._received += len(event.data)
                self._ends.append(self._received)
                trim = 0
                while self._bytes > HISTORY_LIMIT and len(self._events) - trim > 1:
                    dropped = self._events[trim]
                    trim += 1
                    if isinstance(dropped, OutputChunk):
                        self._bytes -= len(dropped.data)
                if trim:
                    del self._events[:trim], self._ends[:trim]
                    self._base += trim
                if self._readers == 0:
                    self._taken = self._received
                credit = self._credit_due()
            else:
                self._ends.append(self._received)
                credit = 0
                self.status = event
                self.ended_at = time.time()
                self._stdin_open = False
            self._cond.notify_all()
            waiters = list(self._waiters)
        self._grant(credit)
        for loop, flag in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(flag.set)

    # -- flow control ------------------------------------------------------------------------------

    def _credit_due(self) -> int:
        """Return the credit to send now (call holding the lock); counted as sent."""
        due = self._taken - self._credited
        if due < CREDIT_STEP:
            return 0
        self._credited += due
        return due

    def _grant(self, credit: int) -> None:
        if credit > 0 and self.status is None:
            with contextlib.suppress(ConnectionError, OSError):
                self._send({"op": "credit", "id": self.ident, "bytes": credit}, b"")

    def _took(self, index: int) -> None:
        """A reader has taken every event before position ``index``: acknowledge that output."""
        with self._cond:
            offset = self._ends[index - 1 - self._base] if index - 1 >= self._base else 0
            if offset <= self._taken:
                return
            self._taken = offset
            credit = self._credit_due()
        self._grant(credit)

    def _reading(self, delta: int) -> None:
        with self._cond:
            self._readers += delta
            if self._readers == 0:
                self._taken = self._received
            credit = self._credit_due()
        self._grant(credit)

    # -- reading -----------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Tell whether the process has not ended yet."""
        return self.status is None

    def _slice(self, since: int) -> tuple[list[ProcessEvent], int]:
        start = max(since, self._base)
        return self._events[start - self._base :], self._base + len(self._events)

    def events(self, since: int = 0, timeout: float | None = None) -> Iterator[ProcessEvent]:
        """Yield events from position ``since`` until the Exited (or until ``timeout`` seconds pass)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        position = since
        self._reading(1)
        try:
            while True:
                with self._cond:
                    start = max(position, self._base)
                    batch, position = self._slice(position)
                    if not batch:
                        left = None if deadline is None else deadline - time.monotonic()
                        if left is not None and left <= 0:
                            return
                        self._cond.wait(left)
                        continue
                for offset, event in enumerate(batch):
                    yield event
                    self._took(start + offset + 1)
                    if isinstance(event, Exited):
                        return
        finally:
            self._reading(-1)

    async def aevents(self, since: int = 0) -> AsyncIterator[ProcessEvent]:
        """Yield events from position ``since`` until the Exited, on the caller's event loop."""
        loop = asyncio.get_running_loop()
        flag = asyncio.Event()
        token = (loop, flag)
        with self._cond:
            self._waiters.add(token)
        self._reading(1)
        try:
            position = since
            while True:
                flag.clear()
                with self._cond:
                    start = max(position, self._base)
                    batch, position = self._slice(position)
                if not batch:
                    await flag.wait()
                    continue
                for offset, event in enumerate(batch):
                    yield event
                    self._took(start + offset + 1)
                    if isinstance(event, Exited):
                        return
        finally:
            with self._cond:
                self._waiters.discard(token)
            self._reading(-1)

    def wait(self, timeout: float | None = None) -> Exited | None:
        """Block until the process ends (or ``timeout``); return its status (None on timeout)."""
        with self._cond:
            self._cond.wait_for(lambda: self.status is not None, timeout)
            return self.status

    async def await_exit(self) -> Exited:
        """Wait on the caller's event loop until the process ends; return its status."""
        with self._cond:
            if self.status is not None:
                return self.status
            position = self._base + len(self._events)
        async for event in self.aevents(position):
            if isinstance(event, Exited):
                return event
        raise RuntimeError("the event stream ended without an exit")

    def output(self, stream: StreamName | None = None) -> bytes:
        """Return the output kept so far (one stream, or all in order)."""
        with self._cond:
            return b"".join(e.data for e in self._events if isinstance(e, OutputChunk) and stream in (None, e.stream))

    # -- acting ------------------------------------------------------------------------------------

    @property
    def stdin_open(self) -> bool:
        """Tell whether stdin still accepts data."""
        return self._stdin_open

    def write_stdin(self, data: bytes) -> bool:
        """Send ``data`` to the process's stdin (the terminal, for a PTY); tell whether it was accepted.

        Never blocks: what the sandbox's init has not read yet waits in the channel's bounded queue; while
        that queue is full (the init stopped reading), ``data`` is refused whole (False).
        """
        if not self._stdin_open:
            return False
        try:
            self._send({"op": "stdin", "id": self.ident}, bytes(data))
        except BlockingIOError:  # the channel's queue is full (ChannelFull)
            return False
        return True

    def close_stdin(self) -> bool:
        """Close stdin (a terminal gets end-of-input, ^D); tell whether it was open."""
        if not self._stdin_open:
            return False
        self._stdin_open = False
        self._send({"op": "stdin_close", "id": self.ident}, b"")
        return True

    def resize(self, rows: int, cols: int) -> None:
        """Set the terminal size of a PTY process (its foreground group gets SIGWINCH)."""
        if not self.pty:
            raise ValueError("not a PTY process")
        self._send({"op": "resize", "id": self.ident, "rows": int(rows), "cols": int(cols)}, b"")

    def signal(self, signum: int, *, group: bool = True) -> bool:
        """Send ``signum`` to the process (its whole process group by default); tell whether it was sent."""
        if self.status is not None:
            return False
        return self._signal(self.ident, signum, group)

    def kill(self) -> bool:
        """SIGKILL the process group."""
        return self.signal(9)
