"""The restrict_sandbox_network checks: the reference passes with both engines, every wrong function is caught."""

from __future__ import annotations

import pytest

from contracts.opensandbox_adapter import reference_engine as opensandbox
from contracts.tensorlake_adapter import reference_engine as tensorlake
from harness.policy.sandbox_network import CHECKS, CONTRACTS, run_checks
from tests.harness.fakes import allow_everything
from tests.mutants.nemo_gym_functions import MUTANTS, Mutant

ENGINES = (tensorlake, opensandbox)


def _name(mutant: Mutant) -> str:
    return type(mutant).__name__


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.kind)
def test_the_reference_passes_every_check(engine: object) -> None:
    results = run_checks(engine, derandomize=False)
    assert [r.name for r in results] == list(CHECKS) and all(r.passed for r in results), results


def test_every_strength_is_used_and_every_check_cites_the_page() -> None:
    assert {c.strength for c in CONTRACTS.values()} == {"spec", "observed", "choice"}
    assert all(any(s.startswith("ng.") for s in c.sentences) for c in CONTRACTS.values())


@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_each_mutant_fails_the_check_aimed_at_it_with_either_engine(mutant: Mutant) -> None:
    assert (CONTRACTS[mutant.caught_by].strength == "choice") == bool(mutant.choice)
    for engine in ENGINES:
        [result] = run_checks(engine, restrict=mutant, only=[mutant.caught_by])
        assert not result.passed, f"{mutant.caught_by} with the {engine.kind} engine misses: {mutant.defect}"
        assert result.message


def test_an_engine_that_lets_everything_out_fails_the_limits() -> None:
    failed = {r.name for r in run_checks(allow_everything) if not r.passed}
    assert {"model_only_limits_egress", "model_and_tools_limits_egress"} <= failed


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.neighbour], ids=_name)
def test_the_boundary_check_kills_each_neighbour_mutant_with_either_engine(mutant: Mutant) -> None:
    for engine in ENGINES:
        [result] = run_checks(engine, restrict=mutant, only=["boundary_hosts"])
        assert not result.passed and mutant.neighbour in str(result.message), result
