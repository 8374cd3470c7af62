"""The plugin's report: the report directory and JUnit file, each test phase's outcome, unknown fields, summary."""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.plugin.progress import CHECKS_KEY
from harness.plugin.state import SandproofState, contract_info, outcome_of
from harness.targets import RunningMock

__all__ = [
    "copy_junit",
    "finish_report",
    "header",
    "note_held_mocks",
    "record_phase",
    "start_report",
    "summarise",
    "wire_report_dir",
]


def wire_report_dir(config: pytest.Config, state: SandproofState) -> None:
    """Take ``--sandproof-report`` (controller only) and point JUnit at it, or note a user-chosen JUnit file."""
    report_dir = config.getoption("sandproof_report")
    if report_dir and not hasattr(config, "workerinput"):
        state.report_dir = Path(report_dir).resolve()
        if hasattr(config.option, "xmlpath"):
            if config.option.xmlpath:
                state.junit_source = Path(config.option.xmlpath).resolve()
            else:
                config.option.xmlpath = str(state.report_dir / "junit.xml")


def copy_junit(state: SandproofState) -> None:
    """Copy a user-chosen JUnit file into the report directory."""
    if state.report_dir is not None and state.junit_source is not None and state.junit_source.is_file():
        destination = state.report_dir / "junit.xml"
        if destination != state.junit_source:
            state.report_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(state.junit_source, destination)


def header(state: SandproofState) -> str | None:
    """Name the target when it is not the default (and the runtime when it is not the emulator)."""
    runtime = f"sandproof runtime: {state.runtime}" + (f" ({state.runtime_problem})" if state.runtime_problem else "")
    if state.target.kind == "mock" and not state.container:
        return runtime if state.runtime != "emulator" else None
    header = f"sandproof target: {state.target.spec}" + (" (container)" if state.container else "")
    return header if state.runtime == "emulator" else f"{header}; {runtime}"


def start_report(state: SandproofState) -> None:
    """Start the report clock and note the loaded Hypothesis profile."""
    state.report.started = time.monotonic()
    if "hypothesis" in sys.modules:
        from hypothesis import settings

        state.report.profile = settings.get_current_profile_name()


def record_phase(state: SandproofState, item: pytest.Item, report: pytest.TestReport) -> None:
    """Fold one phase of a contract test (and, after the call, its check outcomes) into the report."""
    try:
        info = contract_info(item)
    except ValueError:
        info = None  # pytest reports the malformed marker as an error
    if info is not None:
        outcome, reason = outcome_of(report)
        if outcome is not None:
            state.report.record(item.nodeid, info.provider, info.operation, outcome, reason, report.duration)
        if report.when == "call":
            state.report.add_checks(item.nodeid, [o.to_json() for o in item.stash.get(CHECKS_KEY, [])])


def note_held_mocks(state: SandproofState, item: pytest.Item) -> None:
    """With a report directory, note the unknown request fields of every mock the test's fixtures hold."""
    if state.report_dir is None or "mockserver.core" not in sys.modules:
        return
    from mockserver.service import HttpMock

    for value in getattr(item, "funcargs", {}).values():
        core = value.mock if isinstance(value, RunningMock) else value
        if isinstance(core, HttpMock):
            found = core.journal.unknown_fields()
            if found:
                state.report.add_unknown_fields(core.provider, found, source=item.nodeid)


#: The modules that define the suite's contracts (their import registers them).
CONTRACT_MODULES = (
    "harness.machines.opensandbox.machine",
    "harness.machines.tensorlake.machine",
    "harness.concurrency.runner",
    "harness.policy.opensandbox",
    "harness.policy.tensorlake",
    "harness.policy.sandbox_network",
)


def finish_report(state: SandproofState, exitstatus: int) -> None:
    """Gather unknown request fields and write the report files."""
    import importlib

    from harness.strength import contracts

    if state.report.records:  # a run of contracts: every contract is registered, whichever tests ran
        for module in CONTRACT_MODULES:
            importlib.import_module(module)
        state.report.known_contracts = contracts()  # what a covered provider's run could have judged
    state.report.finish(int(exitstatus))
    with contextlib.suppress(Exception):  # best effort: a target may have gone away
        state.collect_unknown_fields()
    if state.report_dir is not None:
        state.written = state.report.write(state.report_dir)


def summarise(terminalreporter: Any, state: SandproofState) -> None:
    """Print passed, failed and skipped counts per provider and operation, with reasons, and the report files."""
    lines = state.report.summary_lines()
    if not lines and state.report_dir is None:
        return
    terminalreporter.write_sep("=", "sandproof contracts")
    for line in lines or ["no contract tests ran"]:
        terminalreporter.write_line(line)
    if state.report_dir is not None:
        files = [*state.written]
        if (state.report_dir / "junit.xml").is_file() or state.junit_source is not None:
            files.append(state.report_dir / "junit.xml")
        terminalreporter.write_line("report: " + ", ".join(str(p) for p in files))
