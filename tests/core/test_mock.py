import time

import pytest

from mockserver.core import VirtualClock
from mockserver.core.clock import DEFAULT_EPOCH
from tests.demo_mock import DemoMock


def test_reset_in_wall_mode_keeps_the_real_time() -> None:
    mock = DemoMock(clock=VirtualClock("wall", start=time.time()))
    mock.advance(3600)
    mock.reset()
    assert abs(mock.clock.now() - time.time()) < 60, "a reset must not rewind a wall clock to the fixed epoch"


@pytest.mark.parametrize("mode", ["manual", "auto"])
def test_reset_in_virtual_modes_returns_to_the_fixed_epoch(mode: str) -> None:
    mock = DemoMock(clock=VirtualClock(mode, start=DEFAULT_EPOCH + 99))  # type: ignore[arg-type]
    mock.advance(10)
    mock.reset()
    assert mock.clock.now() == DEFAULT_EPOCH


def test_advance_moves_the_clock_and_runs_the_hook() -> None:
    mock = DemoMock(clock=VirtualClock("manual"))
    seen: list[float] = []
    mock.on_clock_advance = lambda: seen.append(mock.clock.now())  # type: ignore[method-assign]
    assert mock.advance(5) == DEFAULT_EPOCH + 5
    assert seen == [DEFAULT_EPOCH + 5]
