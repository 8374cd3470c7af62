"""Run commands on the shared emulator as execd does: SSE events, status records, timeouts, interrupts.

Each command runs as an asyncio task that walks the emulator's steps, honours ``Sleep`` on the
virtual clock, kills the command when its ``timeout`` (ms) runs out and pushes execd events into a
queue the foreground SSE stream drains. Background commands have no reader: their output goes to
the combined log only.

Known deviations: ``ping`` events come every 3 s of *virtual* time; there is no 1 s grace sleep
after completion; ``uid``/``gid`` are accepted and ignored.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Protocol

from mockserver.core import VirtualClock
from mockserver.sandbox.steps import Exit, Output, Sleep, Step

from .models import CommandRecord

PING_INTERVAL = 3.0
_END = object()


class Runner(Protocol):
    """What runs one shell command: the shared emulator bound to a sandbox."""

    def run(self, command: str | Sequence[str], *, env: Mapping[str, str], cwd: str) -> Iterator[Step]:
        """Yield the command's steps."""
        ...


def frame(event: dict[str, Any]) -> bytes:
    """Return one execd SSE frame: a bare compact JSON object and a blank line."""
    return json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


def error_event(evalue: str, traceback: str, ts: int) -> dict[str, Any]:
    """Return an execd ``error`` event."""
    return {
        "type": "error",
        "timestamp": ts,
        "error": {"ename": "CommandExecError", "evalue": evalue, "traceback": [traceback]},
    }


class Execution:
    """One running command: drives the steps and publishes events."""

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
    ) -> None:
        self.record = record
        self.argv = list(argv) if argv else None
        self.runner = runner
        self.clock = clock
        self.env = dict(env)
        self.cwd = cwd
        self.timeout = None if not timeout_ms or timeout_ms <= 0 else timeout_ms / 1000.0
        self.queue: asyncio.Queue[Any] | None = asyncio.Queue() if stream else None
        self.cancel_reason = "signal: terminated"

    def start(self) -> None:
        """Start the command's task on the running loop."""
        loop = asyncio.get_running_loop()
        self.record.loop = loop
        self.record.task = loop.create_task(self._main())

    def _emit(self, event: dict[str, Any]) -> None:
        if self.queue is not None:
            self.queue.put_nowait(event)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Yield the events the SSE stream must send, ending after the terminal one."""
        assert self.queue is not None
        while True:
            item = await self.queue.get()
            if item is _END:
                return
            yield item

    async def _main(self) -> None:
        rec = self.record
        started = self.clock.now()
        try:
            code = await self._walk(started)
        except asyncio.CancelledError:
            rec.finish(-1, self.cancel_reason, self.clock.now())
            self._emit(error_event("-1", self.cancel_reason, self.clock.now_ms()))
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
            if self.queue is not None:
                self.queue.put_nowait(_END)

    async def _walk(self, started: float) -> int | None:
        """Run the steps; return the exit code, or None when the timeout killed the command."""
        since_ping = 0.0
        command: str | Sequence[str] = self.argv if self.argv else self.record.content
        for step in self.runner.run(command, env=self.env, cwd=self.cwd):
            if isinstance(step, Output):
                self.record.output.extend(step.data)
                text = step.data.decode("utf-8", "replace")
                self._emit({"type": step.stream, "text": text, "timestamp": self.clock.now_ms()})
            elif isinstance(step, Sleep):
                left = step.seconds
                while left > 0:
                    chunk = min(left, PING_INTERVAL - since_ping)
                    if self.timeout is not None:
                        remaining = started + self.timeout - self.clock.now()
                        if remaining <= 0:
                            return None
                        chunk = min(chunk, remaining)
                    await self.clock.async_sleep(chunk)
                    left -= chunk
                    since_ping += chunk
                    if since_ping >= PING_INTERVAL:
                        since_ping = 0.0
                        self._emit({"type": "ping", "text": "pong", "timestamp": self.clock.now_ms()})
            elif isinstance(step, Exit):
                return step.code
            await asyncio.sleep(0)
        return 0
