"""Waits as decisions: the SDK's request budget, how long a wait lasts, following decisions without waiting."""

from __future__ import annotations

import pytest

from mockserver.tensorlake.model.waits import DEFAULT_BUDGET_MS, Settle, request_budget, wait_span, without_waiting


@pytest.mark.parametrize(
    ("timeout", "grace", "budget"),
    [
        ("60000", "5000", 55.0),
        ("60000", None, 60.0),
        (None, None, DEFAULT_BUDGET_MS / 1000),
        ("soon", "5000", DEFAULT_BUDGET_MS / 1000 - 5),
        ("1000", "5000", 0.0),
        ("9" * 5000, None, DEFAULT_BUDGET_MS / 1000),
        ("60000", "-1", 60.0),
    ],
)
def test_request_budget(timeout: str | None, grace: str | None, budget: float) -> None:
    assert request_budget(timeout, grace) == budget


def test_wait_span_is_bounded_by_the_deadline_and_the_budget() -> None:
    assert wait_span(105.0, 30.0, 100.0, manual=False) == 5.0
    assert wait_span(200.0, 30.0, 100.0, manual=False) == 30.0
    assert wait_span(90.0, 30.0, 100.0, manual=False) == 0.0


@pytest.mark.parametrize(("at", "budget", "manual"), [(None, 30.0, False), (105.0, 0.0, False), (105.0, 30.0, True)])
def test_nothing_waits_without_a_deadline_a_budget_or_on_a_manual_clock(
    at: float | None, budget: float, manual: bool
) -> None:
    assert wait_span(at, budget, 100.0, manual=manual) == 0.0


def test_without_waiting_follows_every_decision_with_no_time_passed() -> None:
    seen: list[float] = []

    def second(waited: float) -> str:
        seen.append(waited)
        return "done"

    def first(waited: float) -> Settle[str]:
        seen.append(waited)
        return Settle(20.0, 5.0, second)

    assert without_waiting(Settle(10.0, 5.0, first)) == "done"
    assert seen == [0.0, 0.0]
    assert without_waiting("plain") == "plain"
