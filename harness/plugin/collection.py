"""What the plugin does to collected tests: provider selection, skips the target or runtime call for, marker checks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.plugin.state import SandproofState, contract_info
from harness.targets import TargetError

__all__ = ["fail_malformed", "select_items"]


def select_items(
    config: pytest.Config, state: SandproofState, items: list[pytest.Item], check_linux: Callable[[], str | None]
) -> None:
    """Deselect providers left out by ``--sandproof-provider``; mark what cannot run here as skipped.

    A ``runtime("linux")`` test is skipped with ``check_linux()``'s message (asked once, when such a test
    is collected); a contract test with the target's reason, or the run's runtime problem on the mock target.
    """
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    linux = None
    for item in items:
        needs = item.get_closest_marker("runtime")
        if needs is not None and "linux" in needs.args:
            linux = check_linux() if linux is None else linux
            if linux:
                item.add_marker(pytest.mark.skip(reason=linux))
        try:
            info = contract_info(item)
        except ValueError:
            info = None  # failed in setup, with the marker's problem
        if info is not None and state.providers is not None and info.provider not in state.providers:
            dropped.append(item)
            continue
        keep.append(item)
        if info is not None and not info.sdk:
            try:
                reason = state.target.skip_reason(info.provider, info.requires)
            except TargetError:
                reason = None  # the test's own use of the target reports the start failure
            if reason is None and state.runtime_problem is not None and state.target.kind == "mock":
                reason = state.runtime_problem
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def fail_malformed(item: pytest.Item) -> None:
    """Fail the test (without a traceback) when its contract or sdk marker is malformed."""
    try:
        contract_info(item)
    except ValueError as exc:
        pytest.fail(str(exc), pytrace=False)
