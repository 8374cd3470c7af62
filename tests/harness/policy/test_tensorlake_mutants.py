"""Mutation tests for the TensorLake contract checks: the reference passes them all, every mutant is caught."""

from __future__ import annotations

import pytest
from hypothesis import settings

from contracts.tensorlake_adapter import reference_engine
from harness.policy.tensorlake.checks import CHECKS, EXAMPLE_CHECKS, PROPERTY_CHECKS, run_checks
from tests.mutants.tensorlake_engines import MUTANTS, Mutant, WildcardMatchesApex

EXAMPLES = settings().max_examples


def _name(mutant: Mutant) -> str:
    return type(mutant).__name__


def test_reference_passes_every_check() -> None:
    results = run_checks(reference_engine, max_examples=EXAMPLES, derandomize=False)
    assert [result.name for result in results] == list(CHECKS)
    assert [result for result in results if not result.passed] == []


def test_there_are_enough_distinct_mutants() -> None:
    assert len(MUTANTS) >= 8
    assert len({_name(m) for m in MUTANTS}) == len(MUTANTS)
    assert all(m.defect and m.kind == "tensorlake" for m in MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_mutant_fails_a_fixed_example(mutant: Mutant) -> None:
    results = run_checks(mutant, only=EXAMPLE_CHECKS)
    assert any(not result.passed for result in results), f"no fixed example catches: {mutant.defect}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_mutant_fails_the_property_aimed_at_it(mutant: Mutant) -> None:
    assert mutant.caught_by in PROPERTY_CHECKS
    [result] = run_checks(mutant, max_examples=EXAMPLES, only=[mutant.caught_by], shrink=False)
    assert not result.passed, f"{mutant.caught_by} does not catch: {mutant.defect}"
    assert result.counterexample is not None
    assert result.message


def test_a_failure_carries_the_shrunk_counterexample() -> None:
    [result] = run_checks(WildcardMatchesApex(), only=["wildcard_apex"])
    assert result.name == "wildcard_apex"
    assert not result.passed
    assert result.counterexample is not None and result.message is not None
    assert "matched the apex" in result.message


def test_fail_fast_stops_at_the_first_failure() -> None:
    results = run_checks(WildcardMatchesApex(), fail_fast=True)
    assert [result.passed for result in results] == [True] * (len(results) - 1) + [False]


def test_unknown_check_names_are_refused() -> None:
    with pytest.raises(KeyError, match="no_such_check"):
        run_checks(reference_engine, only=["seed_table", "no_such_check"])
