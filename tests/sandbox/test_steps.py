"""The timeout rule every step walker shares (``sleep_end``)."""

from __future__ import annotations

import pytest

from mockserver.sandbox.steps import sleep_end


@pytest.mark.parametrize(
    ("now", "seconds", "deadline", "expected"),
    [
        (0.0, 3.0, None, (3.0, False)),  # no timeout: the sleep runs whole
        (1.0, 3.0, 10.0, (4.0, False)),  # ends before the deadline
        (2.0, 3.0, 5.0, (5.0, False)),  # ends on the deadline: not killed
        (4.0, 3.0, 5.0, (5.0, True)),  # crosses it: ends there, killed
        (7.0, 1.0, 5.0, (7.0, True)),  # the deadline went by already: killed at once
    ],
)
def test_a_sleep_ends_whole_or_at_the_deadline_that_kills_it(
    now: float, seconds: float, deadline: float | None, expected: tuple[float, bool]
) -> None:
    assert sleep_end(now, seconds, deadline) == expected
