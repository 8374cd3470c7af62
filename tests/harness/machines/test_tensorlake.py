"""Mutation tests for the TensorLake API contract: the real mock passes the machine, every wrong mock fails it.

Runs are bounded and deterministic: fixed seeds (:data:`MUTANT_SEEDS`), 30 programs of up to 12 steps, no
example database, no shrinking (except in the one test about shrinking).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from harness.machines.tensorlake.machine import (
    OPERATIONS,
    ContractViolation,
    make_machine,
    parse_sse,
)
from harness.machines.tensorlake.run import (
    MUTANT_SEEDS,
    check_mock,
    http_clients,
    kills_mutant,
    machine_settings,
    run_machine,
    run_mock,
)
from harness.machines.tensorlake.steps import ANONYMOUS_CALLS, framing_problem
from harness.reporting.mutation import load_mutants, mutation_score
from harness.strength import ledger
from mockserver.admin.client import AdminClient
from mockserver.asgi.server import MockServer
from mockserver.core import DnsTable
from mockserver.tensorlake import TensorLakeMock
from tests.mutants.tensorlake_mocks import (
    MUTANTS,
    SUITE,
    AnonymousCallsAllowed,
    MutantMock,
    NoWaitCreate200,
    SuspendEphemeral,
    mutant_name,
)

GROUPS = [op for op in OPERATIONS if op != "state-machine"]


def _name(mutant: type[MutantMock]) -> str:
    return mutant.__name__


@pytest.mark.parametrize("operation", GROUPS)
def test_the_real_mock_passes_every_group(operation: str) -> None:
    assert check_mock(TensorLakeMock(), operations=[operation], seed=MUTANT_SEEDS[0]) is None


def test_there_are_enough_distinct_registered_mutants() -> None:
    assert len(MUTANTS) >= 6
    assert len({m.defect for m in MUTANTS}) == len(MUTANTS)
    assert all(m.caught_by in OPERATIONS for m in MUTANTS)
    registered = load_mutants(SUITE)
    assert {f"{SUITE}:{mutant_name(m)}" for m in MUTANTS} <= set(registered)


@pytest.mark.catalogue
@pytest.mark.parametrize("mutant", MUTANTS, ids=_name)
def test_the_machine_kills_the_mutant(mutant: type[MutantMock]) -> None:
    kill = kills_mutant(mutant.__name__, mutant)
    assert kill is not None, f"the {mutant.caught_by} machine does not catch: {mutant.defect}"
    if mutant.choice:
        assert kill.strength == "choice", f"{mutant.__name__} is declared a choice mutant but {kill} killed it"
    else:
        assert (kill.by, kill.strength != "choice") == (mutant.contract, True), kill


@pytest.mark.catalogue  # re-judges catalogue mutants: the mutation report of make contracts-mock does
def test_a_choice_mutant_fails_a_strict_run_only() -> None:
    from tests.mutants.tensorlake_mocks import ProjectKeyForwarded

    with ledger(strict=False) as book:
        assert run_mock(ProjectKeyForwarded(), operations=["ports-ingress"], seed=MUTANT_SEEDS[0]) is None
    assert [o.contract for o in book.outcomes if o.status == "differs"] == ["tensorlake-api:project_key_stripped"]
    with ledger(strict=True):
        failure = run_mock(ProjectKeyForwarded(), operations=["ports-ingress"], seed=MUTANT_SEEDS[0])
    assert failure is not None and failure.contract is not None
    assert failure.contract.key == "tensorlake-api:project_key_stripped" and failure.contract.strength == "choice"


def test_the_real_mock_differs_from_no_choice() -> None:
    with ledger(strict=True) as book:
        assert run_mock(TensorLakeMock(), operations=["state-machine"], seed=MUTANT_SEEDS[1]) is None
    assert book.outcomes and all(o.status == "passed" for o in book.outcomes)
    assert {o.strength for o in book.outcomes} == {"spec", "observed", "choice"}


def test_the_run_stream_framing_is_pinned_while_the_parser_stays_lenient() -> None:
    bare = '{"pid": 1, "started_at": 1}\n\n{"exit_code": 0}\n\n'
    framed = 'data: {"pid": 1, "started_at": 1}\n\ndata: {"exit_code": 0}\n\n'
    assert framing_problem(framed) is None
    assert framing_problem('event: exit\ndata: {"exit_code": 0}\n\n') is None
    assert "not an SSE field" in (framing_problem(bare) or "")
    assert "blank line" in (framing_problem('data: {"exit_code": 0}') or "")
    assert "no JSON object" in (framing_problem("data: [1]\n\n") or "")
    assert parse_sse(framed).exit_code == 0


def test_a_failure_shrinks_to_a_minimal_program_with_its_seed() -> None:
    failure = check_mock(NoWaitCreate200(), operations=["lifecycle"], seed=MUTANT_SEEDS[0], steps=6, shrink=True)
    assert failure is not None
    assert "the model says 202" in failure
    program = [line for line in failure.splitlines() if line.startswith("state.")]
    assert program[-1] == "state.teardown()"
    assert len(program) <= 3, failure
    assert f"seed {MUTANT_SEEDS[0]}; replay with: --hypothesis-seed={MUTANT_SEEDS[0]}" in failure
    assert "@reproduce_failure" in failure


def test_run_machine_names_the_replay_command() -> None:
    mock = SuspendEphemeral()
    with MockServer(mock.app) as server:
        machine = make_machine(
            http_clients(server.url, api_key="k"), admin=None, operations=["suspend-resume"], resolve=DnsTable().resolve
        )
        with pytest.raises(ContractViolation) as caught:
            run_machine(
                machine,
                settings=machine_settings(max_examples=30, shrink=False, database=False),
                seed=7,
                replay="pytest tests/x.py::t",
            )
    assert "replay with: pytest tests/x.py::t --hypothesis-seed=7" in "\n".join(caught.value.__notes__)


def test_without_the_admin_api_the_machine_passes_against_the_mock_and_cleans_up() -> None:
    mock = TensorLakeMock()
    with MockServer(mock.app) as server:
        for operation in ("update", "ports-ingress", "egress-probe"):
            machine = make_machine(
                http_clients(server.url, api_key="k"), admin=None, operations=[operation], resolve=DnsTable().resolve
            )
            run_machine(machine, settings=machine_settings(max_examples=8, shrink=False, database=False), seed=3)
    assert mock.model.sandboxes == {}


@pytest.mark.parametrize("admin", [True, False])
def test_a_pinned_key_set_is_what_the_oracle_expects(admin: bool) -> None:
    """Against a mock that accepts only the machine's key, another key answers 401, and the machine agrees.

    With the admin API the oracle reads the key set; without it, 401 or 403 is accepted where the model says the
    answer depends on whether the key is valid.
    """
    mock = TensorLakeMock(api_keys=["k"])
    with MockServer(mock.app) as server:
        client = AdminClient(server.url) if admin else None
        machine = make_machine(
            http_clients(server.url, api_key="k"),
            admin=client,
            operations=["ports-ingress"],
            resolve=DnsTable().resolve,
        )
        state = machine()
        try:
            handle = state.steps.create(
                "create", {"resources": {"cpus": 1.0, "memory_mb": 1024}, "exposed_ports": [3000]}
            )
            for port in (9501, 3000):
                assert state.proxy.ingress_once(handle, port, "other-key", by_name=False)
            refused = [e for e in mock.journal.entries() if e.status == 401 and e.sandbox_id == handle.target_id]
            assert len(refused) == 2
            state.teardown()
            run_machine(machine, settings=machine_settings(max_examples=12, shrink=False, database=False), seed=4)
        finally:
            if client is not None:
                client.close()


_SMALL = {"resources": {"cpus": 1.0, "memory_mb": 1024}}


@contextlib.contextmanager
def _lifecycle_session(mock: TensorLakeMock, *, admin: bool) -> Iterator[tuple[Any, Any]]:
    """Serve ``mock`` and yield a lifecycle-only machine with one small sandbox created, and that sandbox."""
    with MockServer(mock.app) as server:
        client = AdminClient(server.url) if admin else None
        machine = make_machine(
            http_clients(server.url, api_key="k"), admin=client, operations=["lifecycle"], resolve=DnsTable().resolve
        )
        state = machine()
        try:
            yield state, state.steps.create("create", _SMALL)
        finally:
            state.teardown()
            if client is not None:
                client.close()


@pytest.mark.parametrize("admin", [True, False])
def test_calls_without_a_key_are_refused_and_change_nothing(admin: bool) -> None:
    mock = TensorLakeMock()
    with _lifecycle_session(mock, admin=admin) as (state, handle):
        state.steps.anonymous("anonymous_call", handle, ANONYMOUS_CALLS)
        refused = [e for e in mock.journal.entries() if e.status == 401]
        assert len(refused) == len(ANONYMOUS_CALLS)
        assert list(mock.model.sandboxes) == [handle.target_id]


@pytest.mark.parametrize("admin", [True, False])
def test_a_sandbox_a_wrong_mock_creates_without_a_key_is_reported_and_deleted(admin: bool) -> None:
    mock = AnonymousCallsAllowed()
    with _lifecycle_session(mock, admin=admin) as (state, handle):
        with pytest.raises(ContractViolation, match=r"POST /sandboxes -> 20\d, the model says 401") as caught:
            state.steps.anonymous("anonymous_call", handle, ["create"])
        assert caught.value.contract is not None and caught.value.contract.key == "tensorlake-api:anonymous_refused"
        assert list(mock.model.sandboxes) == [handle.target_id]


def test_mutation_score_counts_what_the_runner_killed() -> None:
    chosen = load_mutants(SUITE)
    killed = {f"{SUITE}:{mutant_name(MUTANTS[0])}", f"{SUITE}:{mutant_name(MUTANTS[1])}"}
    assert mutation_score(lambda name, factory: name in killed, chosen) == (2, len(chosen))


def test_kills_mutant_is_the_runner_mutation_score_takes() -> None:
    candidates = {"check:right": TensorLakeMock, "check:wrong": NoWaitCreate200}
    assert mutation_score(kills_mutant, candidates) == (1, 2)
