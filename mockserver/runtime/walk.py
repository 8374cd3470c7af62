"""The one walker of the emulator's steps on the mock's virtual clock, for every provider.

:func:`walk` runs a command's :class:`~mockserver.sandbox.steps.Step` stream: it hands each ``Output`` to the
provider, waits each ``Sleep`` out on the clock, lets the provider wait each ``WaitStdin`` and ends on ``Exit``.
It returns how the command ended (:class:`Ended`): its exit status, or killed by its timeout. The provider
turns that into its own records and events (TensorLake: signal 9, ``timed_out``; OpenSandbox: exit -1,
``signal: killed``).

The timeout rule is the one of a real process, killed after the wall time since it started: the deadline is
fixed when the walk starts, and time spent sleeping and time spent waiting on stdin both count toward it
(:func:`~mockserver.sandbox.steps.sleep_end`, which the synchronous collect of
:meth:`~mockserver.sandbox.CommandEmulator.run_to_completion` shares). A ``Sleep`` ends at a deadline fixed
when it starts, so one clock advance that crosses it releases it at once (a ``manual`` clock never has to be
advanced twice). An optional :class:`Tick` is called each ``every`` seconds of virtual time slept, once per
wake-up however far the clock jumped (OpenSandbox's ``ping``). The walker yields to the event loop between
steps, so a command that writes without sleeping cannot starve the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from mockserver.core.clock import VirtualClock
from mockserver.sandbox.steps import Exit, Output, ShellEnd, Sleep, Step, WaitStdin, sleep_end

__all__ = ["STDIN_POLL", "Ended", "Tick", "walk"]

#: Real seconds between two looks at the clock while a command with a timeout waits on stdin.
STDIN_POLL = 0.005


@dataclass(frozen=True)
class Ended:
    """How a walked command ended: its exit status, or ``None`` when its timeout killed it.

    ``shell`` is where the emulator's top-level shell ended (what a bash session keeps), when it said.
    """

    code: int | None
    shell: ShellEnd | None = None

    @property
    def timed_out(self) -> bool:
        """Return whether the command's timeout killed it."""
        return self.code is None


@dataclass(frozen=True)
class Tick:
    """Call ``call`` each ``every`` seconds of virtual time a command sleeps (at most once per wake-up)."""

    every: float
    call: Callable[[], None]


async def walk(
    steps: Iterable[Step],
    clock: VirtualClock,
    *,
    timeout: float | None,
    output: Callable[[Output], None],
    stdin: Callable[[WaitStdin], Awaitable[None]] | None = None,
    tick: Tick | None = None,
) -> Ended:
    """Walk ``steps`` on ``clock`` and return how the command ended; ``timeout`` (seconds) counts from now.

    ``output`` gets every ``Output`` step; ``stdin`` is awaited on a ``WaitStdin`` and returns once the pipe
    moved (without it, the pipe is closed: nothing writes to it). Steps that end without an ``Exit`` end
    with status 0.
    """
    started = clock.now()
    deadline = None if timeout is None else started + timeout
    next_tick = None if tick is None else started + tick.every
    for step in steps:
        if isinstance(step, Output):
            output(step)
        elif isinstance(step, Sleep):
            end, killed = sleep_end(clock.now(), step.seconds, deadline)
            while (now := clock.now()) < end:
                await clock.async_sleep((end if next_tick is None else min(end, next_tick)) - now)
                if tick is not None and next_tick is not None and clock.now() >= next_tick:
                    next_tick = clock.now() + tick.every
                    tick.call()
            if killed:
                return Ended(None)
        elif isinstance(step, WaitStdin):
            if stdin is None:
                step.pipe.closed = True
            elif not await _before(clock, deadline, stdin(step)):
                return Ended(None)
        elif isinstance(step, Exit):
            return Ended(step.code, step.shell)
        await asyncio.sleep(0)
    return Ended(0)


async def _before(clock: VirtualClock, deadline: float | None, waiting: Awaitable[None]) -> bool:
    """Await ``waiting``; return False (and stop it) if the clock reaches ``deadline`` first."""
    if deadline is None:
        await waiting
        return True
    task = asyncio.ensure_future(waiting)
    try:
        while clock.now() < deadline:
            done, _ = await asyncio.wait({task}, timeout=STDIN_POLL)
            if done:
                task.result()
                return True
        return False
    finally:
        task.cancel()
