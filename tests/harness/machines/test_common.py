"""Tests of harness.machines.common: the mutant judge."""

from __future__ import annotations

import pytest
from hypothesis.errors import FlakyStrategyDefinition

from harness.machines.common import JUDGE_ATTEMPTS, judge


def test_a_flaky_run_is_judged_again_and_its_next_verdict_counts() -> None:
    calls: list[int] = []

    def run() -> str | None:
        calls.append(1)
        if len(calls) == 1:
            raise FlakyStrategyDefinition("the replay drew less data")
        return "[policy_kept] the PATCH lost the policy"

    kill = judge(run)
    assert kill is not None and kill.by == "policy_kept"
    assert len(calls) == 2


def test_a_run_flaky_every_time_is_an_error_not_a_survivor() -> None:
    calls: list[int] = []

    def run() -> str | None:
        calls.append(1)
        raise FlakyStrategyDefinition("the replay drew less data")

    with pytest.raises(FlakyStrategyDefinition):
        judge(run)
    assert len(calls) == JUDGE_ATTEMPTS


def test_a_clean_run_is_judged_once() -> None:
    calls: list[int] = []

    def run() -> str | None:
        calls.append(1)
        return None

    assert judge(run) is None
    assert len(calls) == 1
