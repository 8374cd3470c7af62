"""Mutation tests for the TensorLake contract checks: the reference passes them all, every mutant is caught.

A mutant's ``caught_by`` check must fail on it; a choice mutant is caught by a ``choice`` check and passes every
check that fails a default run, any other mutant is caught by a ``spec`` or ``observed`` check.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from contracts.tensorlake_adapter import reference_engine
from harness.policy.tensorlake.checks import (
    BOUNDARIES,
    CHECKS,
    CONTRACTS,
    EXAMPLE_CHECKS,
    PROPERTY_CHECKS,
    run_checks,
)
from harness.strength import ENFORCED
from tests.mutants.tensorlake_engines import MUTANTS, Mutant, WildcardMatchesApex

EXAMPLES = settings().max_examples


def _name(mutant: Mutant) -> str:
    return type(mutant).__name__


def test_reference_passes_every_check() -> None:
    results = run_checks(reference_engine, max_examples=EXAMPLES, derandomize=False)
    assert [result.name for result in results] == list(CHECKS)
    assert [result for result in results if not result.passed] == []
    assert all(result.contract is CONTRACTS[result.name] for result in results)


def test_every_check_is_tagged_and_the_strengths_are_mixed() -> None:
    strengths = {contract.strength for contract in CONTRACTS.values()}
    assert set(CHECKS) == set(CONTRACTS) and strengths == {"spec", "choice"}
    assert all(contract.suite == "tensorlake-policy" and contract.source for contract in CONTRACTS.values())
    assert all(contract.sentences for contract in CONTRACTS.values() if contract.strength == "spec")


def test_there_are_enough_distinct_mutants() -> None:
    assert len(MUTANTS) >= 8
    assert len({_name(m) for m in MUTANTS}) == len(MUTANTS)
    assert all(m.defect and m.kind == "tensorlake" for m in MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_a_choice_mutant_is_aimed_at_a_choice_check_and_only_then(mutant: Mutant) -> None:
    strength = CONTRACTS[mutant.caught_by].strength
    assert (strength == "choice") == bool(mutant.choice), f"{_name(mutant)} aims at a {strength} check"


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_mutant_fails_a_fixed_example(mutant: Mutant) -> None:
    results = run_checks(mutant, only=EXAMPLE_CHECKS)
    assert any(not result.passed for result in results), f"no fixed example catches: {mutant.defect}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_mutant_fails_the_property_aimed_at_it(mutant: Mutant) -> None:
    assert mutant.caught_by in PROPERTY_CHECKS or mutant.caught_by in BOUNDARIES
    [result] = run_checks(mutant, max_examples=EXAMPLES, only=[mutant.caught_by], shrink=False)
    assert not result.passed, f"{mutant.caught_by} does not catch: {mutant.defect}"
    assert result.counterexample is not None
    assert result.message


NEIGHBOURS = [m for m in MUTANTS if m.neighbour]


def test_every_documented_neighbour_has_a_wrong_engine() -> None:
    named = " | ".join(m.neighbour for m in NEIGHBOURS)
    for neighbour in ("apex", "one label deeper", "many labels deeper", "same suffix without the dot",
                      "letter case", "trailing dot", "punycode", "first address", "last address",
                      "one below the first address", "one above the last address"):  # fmt: skip
        assert neighbour in named, f"no wrong engine gets the {neighbour!r} neighbour wrong"
    assert any(m.caught_by == "boundary_port" for m in NEIGHBOURS), "no wrong engine gets the port suffix wrong"


@pytest.mark.parametrize("mutant", NEIGHBOURS, ids=_name)
def test_the_boundary_checks_kill_each_neighbour_mutant_deterministically(mutant: Mutant) -> None:
    """The enumerated neighbours catch every wrong engine on every run (no draw involved): under the default mode
    a spec mutant fails the run, a choice mutant differs (and fails a strict run), naming its neighbour."""
    for strict in (False, True):
        results = run_checks(mutant, only=BOUNDARIES, strict=strict)
        failing = [r for r in results if r.fails_run(strict)]
        if mutant.choice and not strict:
            assert failing == [] and any(not r.passed for r in results)
            continue
        assert failing, f"the boundary checks miss {mutant.defect}"
        assert any(mutant.neighbour in str(r.message) for r in failing), [r.message for r in failing]
    assert run_checks(mutant, only=BOUNDARIES) == run_checks(mutant, only=BOUNDARIES, derandomize=False)


@pytest.mark.catalogue
@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.choice], ids=_name)
def test_a_choice_mutant_passes_every_enforced_check(mutant: Mutant) -> None:
    enforced = [name for name, contract in CONTRACTS.items() if contract.strength in ENFORCED]
    failed = [r.name for r in run_checks(mutant, max_examples=EXAMPLES, only=enforced, shrink=False) if not r.passed]
    assert failed == [], f"{_name(mutant)} is no choice mutant: {failed} fail on it"


def test_a_failure_carries_the_shrunk_counterexample() -> None:
    [result] = run_checks(WildcardMatchesApex(), only=["wildcard_apex"])
    assert result.name == "wildcard_apex" and result.strength == "spec"
    assert not result.passed
    assert result.counterexample is not None and result.message is not None
    assert "matched the apex" in result.message


def test_fail_fast_stops_at_the_first_failure_that_fails_the_run() -> None:
    results = run_checks(WildcardMatchesApex(), fail_fast=True)
    assert [result.passed for result in results] == [True] * (len(results) - 1) + [False]
    choice_only = next(m for m in MUTANTS if m.choice)
    lenient = run_checks(choice_only, fail_fast=True, max_examples=20, shrink=False)
    assert len(lenient) == len(CHECKS) and any(not r.passed for r in lenient)
    strict = run_checks(choice_only, fail_fast=True, strict=True, max_examples=20, shrink=False)
    assert len(strict) < len(CHECKS) and not strict[-1].passed and strict[-1].strength == "choice"


def test_unknown_check_names_are_refused() -> None:
    with pytest.raises(KeyError, match="no_such_check"):
        run_checks(reference_engine, only=["dns_table", "no_such_check"])
