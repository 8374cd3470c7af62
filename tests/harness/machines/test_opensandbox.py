"""The OpenSandbox API state machine passes against the mock and fails against every wrong variant of it."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import settings

from harness.machines.opensandbox.machine import (
    ContractViolation,
    execd_framing_problem,
    make_machine,
    parse_run,
)
from harness.machines.opensandbox.proxy_rules import PROXY_HEADERS
from harness.machines.opensandbox.run import (
    MUTANT_SEEDS,
    http_clients,
    machine_settings,
    run_machine,
)
from harness.machines.opensandbox.run import check_mock as run_against_mock
from harness.machines.opensandbox.run import kills_mutant as run_mutant
from harness.reporting.mutation import Kill, load_mutants, mutation_score
from harness.strength import ledger
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.routes.ports import PortDispatcher
from tests.mutants.opensandbox_mocks import MOCK_MUTANTS, MockMutant

SEED = 0
#: Programs tried per mutant before giving up (every mutant dies well before this with SEED).
BOUND = 150
STEPS = 10


def _settings(max_examples: int = BOUND, *, shrink: bool = False) -> settings:
    return machine_settings(settings(max_examples=max_examples, database=None), steps=STEPS, shrink=shrink)


def test_the_real_mock_passes_every_rule() -> None:
    failure = run_against_mock(OpenSandboxMock(), operations=["state-machine"], settings=_settings(40), seed=SEED)
    assert failure is None, f"the machine rejects the real mock: {failure}"


def test_the_real_mock_passes_without_the_admin_api() -> None:
    mock = OpenSandboxMock(clock=VirtualClock("wall", start=time.time()))  # as a deployed server keeps time
    with mock.server() as server:
        machine = make_machine(http_clients(server.url), admin=None)
        run_machine(machine, settings=_settings(15), seed=SEED)
        assert mock.sandbox_ids() == [], "the programs must delete what they created"


@pytest.mark.catalogue
@pytest.mark.parametrize("mutant", MOCK_MUTANTS, ids=lambda m: m.name)
def test_the_machine_kills_the_mutant(mutant: MockMutant) -> None:
    failure: BaseException | None = None
    with ledger(strict=bool(mutant.choice)):
        for seed in MUTANT_SEEDS:
            failure = run_against_mock(mutant(), operations=[mutant.caught_by], settings=_settings(), seed=seed)
            if failure is not None:
                break
    assert failure is not None, f"{mutant.name} survived {BOUND} programs per seed: {mutant.defect}"
    assert isinstance(failure, ContractViolation), f"{mutant.name}: {type(failure).__name__}: {failure}"
    assert failure.rule in mutant.killed_by, f"{mutant.name} was reported by {failure.rule}: {failure}"
    assert failure.contract is not None and failure.contract.name == mutant.contract, failure
    assert (failure.contract.strength == "choice") == bool(mutant.choice), failure.contract


@pytest.mark.catalogue  # re-judges catalogue mutants: the mutation report of make contracts-mock does
def test_a_choice_mutant_is_only_a_choice_kill() -> None:
    mutant = next(m for m in MOCK_MUTANTS if m.choice)
    assert run_mutant(mutant.name, mutant) == Kill("admin_api", "choice")
    framed = next(m for m in MOCK_MUTANTS if m.name == "data-prefixed-frames")
    assert run_mutant(framed.name, framed) == Kill("execd_sse_framing", "observed")


def test_execd_framing_is_pinned_on_the_wire_while_the_parser_stays_lenient() -> None:
    bare = '{"type":"init","text":"c1","timestamp":1}\n\n{"type":"execution_complete","timestamp":2}\n\n'
    framed = "".join(f"data: {frame}\n\n" for frame in bare.split("\n\n") if frame)
    assert execd_framing_problem(bare) is None
    assert "`data:` prefix" in (execd_framing_problem(framed) or "")
    assert "blank line" in (execd_framing_problem(bare[:-2]) or "")
    assert "not a JSON object" in (execd_framing_problem("[1]\n\n") or "")
    assert parse_run(bare) == parse_run(framed) and parse_run(framed).exit_code == 0


#: A seed whose failing program shrinks to the minimal one (the shrinker can stop at a local minimum: with seed 0,
#: since the proxy-headers rule joined the machine, it keeps pauses of the first sandbox and runs on a second one).
SHRINK_SEED = 1


def test_a_failure_shrinks_to_a_minimal_program_with_replay_instructions() -> None:
    mutant = next(m for m in MOCK_MUTANTS if m.name == "non-zero-exit-succeeds")
    failure = run_against_mock(mutant(), operations=["execd"], settings=_settings(50, shrink=True), seed=SHRINK_SEED)
    assert isinstance(failure, ContractViolation)
    report = "\n".join(getattr(failure, "__notes__", []))
    program = [line for line in report.splitlines() if line.startswith(("state.", "sandboxes_"))]
    assert program[0].startswith("sandboxes_0 = state.first_sandbox(")
    assert program[-2].startswith("state.run_command(command=ExitWith(code=1)"), program
    assert program[-1] == "state.teardown()"
    assert len([line for line in program if "listing_matches_model" not in line]) == 3, program
    assert "@reproduce_failure(" in report
    assert f"--hypothesis-seed={SHRINK_SEED}" in report


def test_the_mutants_are_distinct_and_registered() -> None:
    names = [m.name for m in MOCK_MUTANTS]
    assert len(set(names)) == len(names) >= 5
    assert all(m.killed_by and m.defect for m in MOCK_MUTANTS)
    registered = load_mutants("opensandbox-api")
    assert sorted(registered) == sorted(f"opensandbox-api:{name}" for name in names)


def test_mutation_score_counts_kills() -> None:
    mutants = load_mutants("opensandbox-api")
    killed = {"opensandbox-api:create-200", "opensandbox-api:list-oldest-first"}
    assert mutation_score(lambda name, factory: name in killed, mutants) == (2, len(mutants))
    assert isinstance(mutants["opensandbox-api:create-200"](), OpenSandboxMock)
    one = {name: mutants[name] for name in sorted(killed)}
    assert mutation_score(run_mutant, one) == (2, 2)


def test_proxy_headers_judges_nothing_where_no_app_reports_its_request() -> None:
    """A target whose sandbox ports have nothing behind them (502) gives the rule nothing to judge: the contract
    test then skips the ``proxy-headers`` operation with :data:`NOTHING_BEHIND` instead of passing or failing."""
    mock = OpenSandboxMock()
    ctx = mock.proxy_app.ctx
    bare = dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, user_ports=False), user_port=None)
    mock.proxy_app = PortDispatcher(bare, via_proxy=True)
    with ledger() as book:
        assert run_against_mock(mock, operations=["proxy-headers"], settings=_settings(10), seed=SEED) is None
    assert PROXY_HEADERS.key not in book.by_contract
    assert "answers" in {key.split(":")[1] for key in book.by_contract}  # the programs did run
    with ledger() as book:
        assert (
            run_against_mock(OpenSandboxMock(), operations=["proxy-headers"], settings=_settings(10), seed=SEED) is None
        )
    assert book.by_contract[PROXY_HEADERS.key].status == "passed"
