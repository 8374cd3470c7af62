"""The OpenSandbox contract checks pass on the reference and catch every seeded mutant."""

from __future__ import annotations

import pytest

from contracts.opensandbox_adapter import reference_engine
from harness.policy.opensandbox import CHECKS, run_checks
from tests.mutants.opensandbox_engines import MUTANTS, Mutant

EXAMPLES = 50
REFERENCE_EXAMPLES = 30  # the laws are also tested directly in test_opensandbox_policy.py


def test_reference_passes_every_check() -> None:
    results = run_checks(reference_engine, max_examples=REFERENCE_EXAMPLES)
    assert [result.name for result in results] == list(CHECKS)
    failed = [(result.name, result.counterexample) for result in results if not result.passed]
    assert not failed


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: type(mutant).__name__)
def test_mutant_fails_a_check(mutant: Mutant) -> None:
    assert mutant.caught_by in CHECKS
    (result,) = run_checks(mutant, max_examples=EXAMPLES, checks=(mutant.caught_by,))
    assert not result.passed
    assert result.counterexample


def test_mutants_are_distinct_faults() -> None:
    assert len({type(mutant) for mutant in MUTANTS}) == len(MUTANTS) >= 5
    assert reference_engine.kind == "opensandbox"
    assert all(mutant.kind == "opensandbox" for mutant in MUTANTS)


def test_stop_on_failure_stops_at_first_failing_check() -> None:
    mutant = next(m for m in MUTANTS if m.caught_by == "validate_agrees")
    results = run_checks(mutant, max_examples=EXAMPLES, stop_on_failure=True)
    assert len(results) == 1
    assert results[0].name == "validate_agrees"
    assert not results[0].passed
