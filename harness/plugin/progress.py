"""What the plugin does around a contract test's call: the progress ticker, the strength ledger and example counts."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Generator
from typing import Any

import pytest

from harness.plugin.state import SandproofState, contract_info
from harness.reporting.progress import PROGRESS, Ticker
from harness.strength import CheckOutcome, ledger

__all__ = ["CHECKS_KEY", "run_contract", "start_ticker"]

#: The check outcomes a contract test's ledger recorded, kept on the item for its report.
CHECKS_KEY = pytest.StashKey[list[CheckOutcome]]()


def start_ticker(config: pytest.Config, state: SandproofState) -> None:
    """Print what a long contract test is doing every ``--sandproof-progress`` seconds (stopped at the end)."""
    interval = float(config.getoption("sandproof_progress") or 0)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if interval > 0 and reporter is not None:
        ticker = Ticker(lambda line: reporter.write_line(line, yellow=True), interval).start()
        state.on_close(ticker.stop)


def run_contract(state: SandproofState, item: pytest.Item) -> Generator[None, object, object]:
    """Run a contract test's call inside its strength ledger, naming it to the ticker and counting its examples.

    A generator for a ``wrapper=True`` hook: ``return (yield from run_contract(state, item))``. Items that
    are not contract or sdk tests run untouched.
    """
    if not _is_contract(item):
        return (yield)
    PROGRESS.start(_progress_label(item))
    info = contract_info(item)
    real = info is not None and state.real_target(info.provider)
    with ledger(strict=state.strict, real_target=real) as book:
        try:
            return (yield from _counting(state, item))
        finally:
            PROGRESS.stop()
            item.stash[CHECKS_KEY] = book.outcomes
            if book.outcomes:
                item.user_properties.append(
                    ("sandproof_checks", json.dumps([o.to_json() for o in book.outcomes], ensure_ascii=False))
                )


def _is_contract(item: pytest.Item) -> bool:
    """Tell whether the item carries a well-formed contract or sdk marker."""
    try:
        return contract_info(item) is not None
    except ValueError:
        return False


def _progress_label(item: pytest.Item) -> str:
    """Name the test to the ticker: its provider and operation, else its node id."""
    try:
        info = contract_info(item)
    except ValueError:
        info = None
    return f"{info.provider} {info.operation}" if info is not None else item.nodeid


def _counting(state: SandproofState, item: pytest.Item) -> Generator[None, object, object]:
    """Run the test, chaining an example counter into Hypothesis's statistics hook when Hypothesis is loaded."""
    counter = _example_counter(state, item)
    if counter is None:
        return (yield)
    from hypothesis import statistics

    collector: Any = statistics.collector
    previous: Callable[[Any], None] | None = collector.value

    def note(stats: Any) -> None:
        counter(stats)
        if previous is not None:
            previous(stats)

    with collector.with_value(note):
        return (yield)


def _example_counter(state: SandproofState, item: pytest.Item) -> Callable[[Any], None] | None:
    """Return a statistics callback for contract items when Hypothesis is loaded."""
    if "hypothesis" not in sys.modules:
        return None
    try:
        if contract_info(item) is None:
            return None
    except ValueError:
        return None

    def count(stats: Any) -> None:
        total = 0
        if isinstance(stats, dict):
            for key, phase in stats.items():
                if key.endswith("-phase") and isinstance(phase, dict):
                    total += len(phase.get("test-cases", ()))
        state.report.add_examples(item.nodeid, total)

    return count
