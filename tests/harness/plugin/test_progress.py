"""What the plugin does around a contract test's call: ticker label, strength ledger, example counts."""

from __future__ import annotations

import pytest

from harness.plugin.progress import CHECKS_KEY, _example_counter, _is_contract, _progress_label, run_contract
from harness.plugin.state import SandproofState
from harness.reporting.progress import PROGRESS
from harness.reporting.report import ContractReport
from harness.strength import Contract, record, spec
from harness.targets import parse_target

pytest_plugins = ["pytester"]

TESTS = """
import pytest

@pytest.mark.contract("tensorlake", "create", requires="engine")
def test_contract():
    pass

@pytest.mark.sdk("opensandbox")
def test_sdk():
    pass

@pytest.mark.contract("e2b", "create")
def test_malformed():
    pass

def test_plain():
    pass
"""

KEPT = Contract("demo", "kept", spec("tl.dns.row-4"))


@pytest.fixture
def items(pytester: pytest.Pytester) -> dict[str, pytest.Item]:
    """Collect TESTS and map each test's name to its item."""
    return {item.name: item for item in pytester.getitems(TESTS)}


@pytest.fixture
def state() -> SandproofState:
    """Return the state of a run on a policy target (no mocks)."""
    return SandproofState(
        target=parse_target("policy:contracts.opensandbox_adapter:reference_engine"), report=ContractReport("policy")
    )


def test_contract_and_sdk_tests_are_told_from_malformed_and_plain_ones(items: dict[str, pytest.Item]) -> None:
    assert {name: _is_contract(item) for name, item in items.items()} == {
        "test_contract": True,
        "test_sdk": True,
        "test_malformed": False,
        "test_plain": False,
    }
    assert _progress_label(items["test_contract"]) == "tensorlake create"
    assert _progress_label(items["test_sdk"]) == "opensandbox test_sdk"
    assert _progress_label(items["test_malformed"]) == items["test_malformed"].nodeid


def test_the_example_counter_adds_the_test_cases_of_every_phase(
    items: dict[str, pytest.Item], state: SandproofState
) -> None:
    assert _example_counter(state, items["test_plain"]) is None
    assert _example_counter(state, items["test_malformed"]) is None
    count = _example_counter(state, items["test_contract"])
    assert count is not None
    count(
        {
            "generate-phase": {"test-cases": [1, 2, 3]},
            "shrink-phase": {"test-cases": [4]},
            "stopped-because": "settings.max_examples=3",
            "explain-phase": "not a dict",
        }
    )
    count("not statistics")
    assert state.report.examples == 4


def test_run_contract_keeps_the_checks_recorded_during_the_call(
    items: dict[str, pytest.Item], state: SandproofState
) -> None:
    item = items["test_contract"]
    call = run_contract(state, item)
    next(call)
    assert PROGRESS.label == "tensorlake create"
    record(KEPT, True)
    with pytest.raises(StopIteration) as done:
        call.send("the call's result")
    assert done.value.value == "the call's result"
    assert PROGRESS.label is None
    assert [o.to_json()["contract"] for o in item.stash[CHECKS_KEY]] == ["demo:kept"]
    assert [name for name, _ in item.user_properties] == ["sandproof_checks"]


def test_run_contract_leaves_other_tests_alone(items: dict[str, pytest.Item], state: SandproofState) -> None:
    item = items["test_plain"]
    call = run_contract(state, item)
    next(call)
    assert PROGRESS.label is None
    with pytest.raises(StopIteration) as done:
        call.send(None)
    assert done.value.value is None
    assert CHECKS_KEY not in item.stash and item.user_properties == []
