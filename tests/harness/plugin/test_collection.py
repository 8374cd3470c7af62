"""What the plugin does to collected tests: provider selection, skips, malformed markers."""

from __future__ import annotations

import pytest

from harness.plugin.collection import fail_malformed, select_items
from harness.plugin.state import SandproofState
from harness.reporting.report import ContractReport
from harness.targets import parse_target

pytest_plugins = ["pytester"]

POLICY = "policy:contracts.opensandbox_adapter:reference_engine"
TESTS = """
import pytest

@pytest.mark.contract("tensorlake", "create", requires="engine")
def test_tensorlake():
    pass

@pytest.mark.contract("opensandbox", "list")
def test_opensandbox_api():
    pass

@pytest.mark.contract("opensandbox", "network-policy", requires="engine")
def test_opensandbox_engine():
    pass

@pytest.mark.runtime("linux")
def test_linux_one():
    pass

@pytest.mark.runtime("linux")
def test_linux_two():
    pass

@pytest.mark.contract("e2b", "create")
def test_malformed():
    pass
"""


def _skip_reasons(items: list[pytest.Item]) -> dict[str, str]:
    """Map each item the plugin marked skipped to the reason."""
    return {item.name: str(marker.kwargs["reason"]) for item in items for marker in item.iter_markers("skip")}


def test_other_providers_are_deselected_and_what_cannot_run_is_skipped(pytester: pytest.Pytester) -> None:
    items = pytester.getitems(TESTS)
    state = SandproofState(
        target=parse_target(POLICY), report=ContractReport(POLICY), providers=frozenset({"opensandbox"})
    )
    asked: list[str] = []

    def check_linux() -> str:
        asked.append("linux")
        return "missing bubblewrap"

    select_items(items[0].config, state, items, check_linux)
    assert [item.name for item in items] == [
        "test_opensandbox_api",
        "test_opensandbox_engine",
        "test_linux_one",
        "test_linux_two",
        "test_malformed",
    ]
    assert _skip_reasons(items) == {
        "test_opensandbox_api": f"target '{POLICY}' is a opensandbox policy engine, not an API server",
        "test_linux_one": "missing bubblewrap",
        "test_linux_two": "missing bubblewrap",
    }
    assert asked == ["linux"]  # asked once for the whole collection


def test_the_runtime_problem_skips_contracts_on_the_mock_target(pytester: pytest.Pytester) -> None:
    items = pytester.getitems(TESTS)
    target = parse_target("mock")
    target.configure(container=False)
    state = SandproofState(target=target, report=ContractReport("mock"), runtime_problem="no linux here")
    try:
        select_items(items[0].config, state, items, lambda: None)
        reasons = _skip_reasons(items)
    finally:
        state.close()
    assert reasons == {
        name: "no linux here" for name in ("test_tensorlake", "test_opensandbox_api", "test_opensandbox_engine")
    }


def test_a_malformed_marker_fails_the_test_and_a_good_one_does_not(pytester: pytest.Pytester) -> None:
    items = {item.name: item for item in pytester.getitems(TESTS)}
    fail_malformed(items["test_tensorlake"])
    fail_malformed(items["test_linux_one"])
    with pytest.raises(pytest.fail.Exception, match="provider must be one of tensorlake, opensandbox, got 'e2b'"):
        fail_malformed(items["test_malformed"])
