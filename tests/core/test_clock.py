import asyncio
import threading
import time

import pytest

from mockserver.core import VirtualClock
from mockserver.core.clock import DEFAULT_EPOCH


def test_manual_clock_stands_still_until_advanced() -> None:
    clock = VirtualClock("manual")
    assert clock.now() == DEFAULT_EPOCH
    time.sleep(0.01)
    assert clock.now() == DEFAULT_EPOCH
    assert clock.advance(2.5) == DEFAULT_EPOCH + 2.5
    assert clock.now_ms() == int((DEFAULT_EPOCH + 2.5) * 1000)


def test_auto_sleep_advances_time_at_once() -> None:
    clock = VirtualClock("auto")
    started = time.monotonic()
    assert clock.sleep(3600)
    assert time.monotonic() - started < 1
    assert clock.now() == DEFAULT_EPOCH + 3600


def test_manual_sleep_blocks_until_another_thread_advances() -> None:
    clock = VirtualClock("manual")
    woke = threading.Event()

    def sleeper() -> None:
        clock.sleep(10)
        woke.set()

    thread = threading.Thread(target=sleeper)
    thread.start()
    assert not woke.wait(0.05)
    clock.advance(5)
    assert not woke.wait(0.05)
    clock.advance(5)
    assert woke.wait(2)
    thread.join()


def test_manual_sleep_gives_up_after_real_timeout() -> None:
    assert VirtualClock("manual").sleep(10, real_timeout=0.02) is False


def test_async_sleep_waits_for_advance() -> None:
    clock = VirtualClock("manual")

    async def scenario() -> bool:
        task = asyncio.create_task(clock.async_sleep(1))
        await asyncio.sleep(0.02)
        assert not task.done()
        clock.advance(1)
        return await asyncio.wait_for(task, 2)

    assert asyncio.run(scenario())


def test_wall_clock_moves_and_adds_offsets() -> None:
    clock = VirtualClock("wall")
    first = clock.now()
    time.sleep(0.02)
    assert clock.now() > first
    before = clock.now()
    clock.advance(100)
    assert clock.now() >= before + 100


def test_clock_rejects_going_backwards_and_bad_modes() -> None:
    with pytest.raises(ValueError):
        VirtualClock("manual").advance(-1)
    with pytest.raises(ValueError):
        VirtualClock("sometimes")  # type: ignore[arg-type]


def test_set_mode_keeps_the_time_and_dump_load_round_trips() -> None:
    clock = VirtualClock("manual")
    clock.advance(42)
    clock.set_mode("auto")
    assert clock.now() == DEFAULT_EPOCH + 42
    other = VirtualClock("wall")
    other.load(clock.dump())
    assert other.mode == "auto" and other.now() == DEFAULT_EPOCH + 42
    with pytest.raises(ValueError):
        other.load({"mode": "bogus", "now": 1})
