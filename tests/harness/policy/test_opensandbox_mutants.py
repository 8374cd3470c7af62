"""The OpenSandbox contract checks pass on the reference and catch every seeded mutant at the strength it claims."""

from __future__ import annotations

import pytest

from contracts.opensandbox_adapter import reference_engine
from harness.policy.opensandbox import CHECKS, CONTRACTS, run_checks
from harness.policy.opensandbox.boundaries import BOUNDARIES
from harness.strength import ENFORCED
from tests.mutants.opensandbox_engines import MUTANTS, Mutant

EXAMPLES = 50
REFERENCE_EXAMPLES = 30  # the laws are also tested directly in test_opensandbox_policy.py


def _name(mutant: Mutant) -> str:
    return type(mutant).__name__


def test_reference_passes_every_check() -> None:
    results = run_checks(reference_engine, max_examples=REFERENCE_EXAMPLES)
    assert [result.name for result in results] == list(CHECKS)
    failed = [(result.name, result.counterexample) for result in results if not result.passed]
    assert not failed
    assert all(result.contract is CONTRACTS[result.name] for result in results)


def test_every_check_is_tagged() -> None:
    assert set(CHECKS) == set(CONTRACTS)
    assert {c.strength for c in CONTRACTS.values()} == {"spec", "choice"}
    assert all(c.sentences for c in CONTRACTS.values() if c.strength == "spec")


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_mutant_fails_a_check(mutant: Mutant) -> None:
    assert mutant.caught_by in CHECKS
    assert (CONTRACTS[mutant.caught_by].strength == "choice") == bool(mutant.choice)
    (result,) = run_checks(mutant, max_examples=EXAMPLES, checks=(mutant.caught_by,))
    assert not result.passed
    assert result.counterexample


@pytest.mark.catalogue
@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.choice], ids=_name)
def test_a_choice_mutant_passes_every_enforced_check(mutant: Mutant) -> None:
    enforced = tuple(name for name, contract in CONTRACTS.items() if contract.strength in ENFORCED)
    failed = [r.name for r in run_checks(mutant, max_examples=EXAMPLES, checks=enforced) if not r.passed]
    assert failed == [], f"{_name(mutant)} is no choice mutant: {failed} fail on it"


def test_mutants_are_distinct_faults() -> None:
    assert len({type(mutant) for mutant in MUTANTS}) == len(MUTANTS) >= 5
    assert reference_engine.kind == "opensandbox"
    assert all(mutant.kind == "opensandbox" for mutant in MUTANTS)


def test_stop_on_failure_stops_at_first_failing_check() -> None:
    mutant = next(m for m in MUTANTS if m.caught_by == "validate_spec")
    results = run_checks(mutant, max_examples=EXAMPLES, stop_on_failure=True)
    assert len(results) == 1
    assert results[0].name == "validate_spec"
    assert not results[0].passed


NEIGHBOURS = [m for m in MUTANTS if m.neighbour]


def test_every_documented_neighbour_has_a_wrong_engine() -> None:
    named = " | ".join(m.neighbour for m in NEIGHBOURS)
    for neighbour in ("apex", "one label deeper", "many labels deeper", "same suffix without the dot",
                      "letter case", "trailing dot", "Unicode spelling", "one below the first address",
                      "port suffix"):  # fmt: skip
        assert neighbour in named, f"no wrong engine gets the {neighbour!r} neighbour wrong"


@pytest.mark.parametrize("mutant", NEIGHBOURS, ids=_name)
def test_the_boundary_checks_kill_each_neighbour_mutant_deterministically(mutant: Mutant) -> None:
    """The enumerated neighbours catch every wrong engine on every run, whatever the seed: a spec mutant fails a
    default run, a choice mutant differs (and fails a strict run); the failure names the neighbour."""
    for at_seed in (0, 1):
        for strict in (False, True):
            results = run_checks(mutant, checks=BOUNDARIES, at_seed=at_seed, strict=strict)
            failing = [r for r in results if r.fails_run(strict)]
            if mutant.choice and not strict:
                assert failing == [] and any(not r.passed for r in results)
                continue
            assert failing, f"the boundary checks miss {type(mutant).__name__}"
            assert any(mutant.neighbour in str(r.counterexample) for r in failing)
