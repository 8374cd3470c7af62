"""The one step walker: sleeps on the virtual clock, one deadline from the start, stdin waits, ticks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator

from mockserver.core.clock import VirtualClock
from mockserver.runtime.walk import Ended, Tick, walk
from mockserver.sandbox.steps import Exit, Output, ShellEnd, Sleep, StdinPipe, Step, WaitStdin, out

#: Real seconds a test waits at most for a walk the clock has released (a guard, never an assertion).
GUARD = 10.0


def _steps(*steps: Step) -> Iterator[Step]:
    yield from steps


def _ignore(step: Output) -> None:
    del step


def _released(clock: VirtualClock, walking: Awaitable[Ended], *advances: float) -> Ended:
    """Start ``walking`` on a manual clock, advance the clock by each of ``advances``, return its end."""

    async def scenario() -> Ended:
        task = asyncio.ensure_future(walking)
        for seconds in advances:
            await asyncio.sleep(0.02)
            assert not task.done()
            clock.advance(seconds)
        return await asyncio.wait_for(task, GUARD)

    return asyncio.run(scenario())


def test_output_goes_to_the_callback_and_exit_says_how_it_ended() -> None:
    clock = VirtualClock("auto")
    seen: list[bytes] = []
    shell = ShellEnd("/tmp", {"A": "1"})
    steps = _steps(out("a"), Output("stderr", b"b"), Exit(3, shell))
    ended = asyncio.run(walk(steps, clock, timeout=None, output=lambda step: seen.append(step.data)))
    assert ended == Ended(3, shell) and not ended.timed_out
    assert seen == [b"a", b"b"]


def test_steps_without_an_exit_end_with_status_zero() -> None:
    ended = asyncio.run(walk(_steps(out("a")), VirtualClock("auto"), timeout=None, output=_ignore))
    assert ended == Ended(0)


def test_sleeps_advance_an_auto_clock_by_their_length() -> None:
    clock = VirtualClock("auto")
    start = clock.now()
    ended = asyncio.run(walk(_steps(Sleep(2), Sleep(3), Exit(0)), clock, timeout=None, output=_ignore))
    assert ended == Ended(0) and clock.now() - start == 5


def test_one_advance_that_crosses_the_sleep_deadline_releases_it() -> None:
    clock = VirtualClock("manual")
    walking = walk(_steps(Sleep(10), Exit(0)), clock, timeout=None, output=_ignore)
    assert _released(clock, walking, 100) == Ended(0)


def test_the_timeout_kills_mid_sleep_at_the_deadline() -> None:
    clock = VirtualClock("auto")
    start = clock.now()
    seen: list[bytes] = []
    steps = _steps(out("before"), Sleep(100), out("after"), Exit(0))
    ended = asyncio.run(walk(steps, clock, timeout=5, output=lambda step: seen.append(step.data)))
    assert ended.timed_out and ended == Ended(None)
    assert clock.now() - start == 5 and seen == [b"before"]


def test_a_sleep_that_ends_on_the_deadline_runs_whole() -> None:
    clock = VirtualClock("auto")
    ended = asyncio.run(walk(_steps(Sleep(2), Sleep(3), Exit(7)), clock, timeout=5, output=_ignore))
    assert ended == Ended(7)


def test_the_deadline_is_fixed_at_the_start_so_a_jump_past_it_kills_the_next_sleep() -> None:
    clock = VirtualClock("manual")
    seen: list[bytes] = []
    steps = _steps(Sleep(1), out("between"), Sleep(1), Exit(0))
    walking = walk(steps, clock, timeout=5, output=lambda step: seen.append(step.data))
    assert _released(clock, walking, 100) == Ended(None)
    assert seen == [b"between"]


def test_time_waiting_on_stdin_counts_toward_the_deadline() -> None:
    clock = VirtualClock("manual")
    pipe = StdinPipe()
    fed = asyncio.Event()

    async def wait_stdin(step: WaitStdin) -> None:
        await fed.wait()

    async def scenario() -> Ended:
        steps = _steps(WaitStdin(pipe, 0), Sleep(3), Exit(0))
        task = asyncio.ensure_future(walk(steps, clock, timeout=5, output=_ignore, stdin=wait_stdin))
        await asyncio.sleep(0.02)
        clock.advance(4)  # 4 s waiting on stdin, then the pipe moves
        fed.set()
        await asyncio.sleep(0.02)
        assert not task.done()  # sleeping 3 s from 4 s: past the deadline at 5 s
        clock.advance(10)
        return await asyncio.wait_for(task, GUARD)

    assert asyncio.run(scenario()) == Ended(None)


def test_a_stdin_wait_that_outlasts_the_deadline_is_killed() -> None:
    clock = VirtualClock("manual")
    never = asyncio.Event

    async def wait_stdin(step: WaitStdin) -> None:
        await never().wait()

    steps = _steps(WaitStdin(StdinPipe(), 0), Exit(0))
    assert _released(clock, walk(steps, clock, timeout=5, output=_ignore, stdin=wait_stdin), 5) == Ended(None)


def test_a_stdin_wait_without_a_timeout_waits_for_the_pipe() -> None:
    clock = VirtualClock("auto")
    pipe = StdinPipe()

    async def wait_stdin(step: WaitStdin) -> None:
        while not step.pipe.closed:
            await asyncio.sleep(0)

    async def scenario() -> Ended:
        steps = _steps(WaitStdin(pipe, 0), Exit(4))
        task = asyncio.ensure_future(walk(steps, clock, timeout=None, output=_ignore, stdin=wait_stdin))
        await asyncio.sleep(0.02)
        assert not task.done()
        pipe.closed = True
        return await asyncio.wait_for(task, GUARD)

    assert asyncio.run(scenario()) == Ended(4)


def test_without_a_stdin_callback_the_pipe_is_closed() -> None:
    pipe = StdinPipe()
    steps = _steps(WaitStdin(pipe, 0), Exit(0))
    assert asyncio.run(walk(steps, VirtualClock("auto"), timeout=1, output=_ignore)) == Ended(0)
    assert pipe.closed


def test_ticks_come_at_intervals_of_virtual_time_slept() -> None:
    clock = VirtualClock("auto")
    start = clock.now()
    at: list[float] = []
    tick = Tick(3, lambda: at.append(clock.now() - start))
    ended = asyncio.run(walk(_steps(Sleep(10), Exit(0)), clock, timeout=None, output=_ignore, tick=tick))
    assert ended == Ended(0) and at == [3, 6, 9] and clock.now() - start == 10


def test_a_jump_over_many_intervals_ticks_once() -> None:
    clock = VirtualClock("manual")
    ticks: list[float] = []
    tick = Tick(3, lambda: ticks.append(clock.now()))
    walking = walk(_steps(Sleep(10), Exit(0)), clock, timeout=None, output=_ignore, tick=tick)
    assert _released(clock, walking, 100) == Ended(0)
    assert len(ticks) == 1
