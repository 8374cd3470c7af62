"""pytest plugin ``sandproof``: target selection, mock fixtures, contract markers, Hypothesis profiles, reports.

Registered as the ``pytest11`` entry point ``sandproof``, so it loads in every pytest run where sandproof is
installed. Importing it has no side effects; everything happens in hooks, per pytest config, and the mocks
are only imported and started when a fixture or contract test needs them.

Options: ``--sandproof-target=T`` (default ``mock``), ``--sandproof-container``, ``--sandproof-report=DIR``,
``--sandproof-allow-reset`` (the contracts may reset a URL target, move its clock and arm faults on it; its
state is put back at the end; without it those contracts skip, see :mod:`harness.targets.live`),
``--sandproof-provider=P`` (repeatable; run only those providers' contracts), ``--sandproof-concurrency=N``
(clients of the concurrency contract, default 4; 0 skips it), ``--sandproof-strict`` (a check that differs
from sandproof's own choice fails the run too; by default only ``spec`` and ``observed`` checks do, see
:mod:`harness.strength`), ``--sandproof-runtime=emulator|linux`` (what the in-process mocks run sandboxes
on; ``linux`` where the machine cannot run it skips the tests that use those mocks, with the one message
naming what is missing).
Every contract test runs inside a :func:`harness.strength.ledger`; the tagged check outcomes it records go
into the report and, as the ``sandproof_checks`` property, into ``junit.xml``.
Markers: ``contract(provider, operation, requires=("api",))``, ``sdk(provider, operation=None)`` and
``runtime(name)`` (the test needs that runtime: ``runtime("linux")`` skips with the requirements message
where it cannot run). Fixtures: ``sandproof_target``, ``sandproof_runtime``, ``tensorlake_mock``,
``tensorlake_sdk_args``, ``opensandbox_mock``, ``opensandbox_asgi``. The mocks' SDK environment is exported
for the whole run before the first test module that imports an SDK at its top is imported (``auto``), at the
start (``--sandproof-sdk-env``) or never (``--no-sandproof-sdk-env``); see :mod:`harness.plugin.sdkenv`.
The real-cloud guard (:mod:`harness.plugin.guard`, the autouse ``cloud_guard`` fixture): a test that uses one of
those fixtures runs with its HTTP(S) proxy variables pointing at a loopback tripwire, so an SDK call bound for a
host beyond this machine is trapped, never sent, and fails the test with one message; ``sandproof_cloud``
(marker) lets a test out, and the ``tensorlake-cloud`` target is never guarded.
The per-run state lives in :mod:`harness.plugin.state`, the Hypothesis profiles in
:mod:`harness.plugin.profiles`; their public names are re-exported here. The hooks below are thin: the
options, markers and run configuration are in :mod:`harness.plugin.options`, the collection skips in
:mod:`harness.plugin.collection`, the ticker, ledger and example counts around a contract test in
:mod:`harness.plugin.progress`, the report in :mod:`harness.plugin.reports` and the fixtures (imported here
by name, so pytest finds them in this module) in :mod:`harness.plugin.fixtures`.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness.plugin import collection, guard, progress, reports
from harness.plugin.fixtures import (
    cloud_guard,
    export_sdk_env,
    opensandbox_asgi,
    opensandbox_mock,
    sandproof_runtime,
    sandproof_target,
    tensorlake_mock,
    tensorlake_sdk_args,
)
from harness.plugin.options import (
    DEFAULT_CONCURRENCY,
    RUNTIMES,
    add_markers,
    add_options,
    build_state,
    linux_problem,
)
from harness.plugin.profiles import (
    HYPOTHESIS_PROFILES,
    current_profile,
    load_env_profile,
    register_hypothesis_profiles,
    restore_profile,
)
from harness.plugin.progress import CHECKS_KEY
from harness.plugin.sdkenv import imports_an_sdk, sdk_env_mode
from harness.plugin.state import (
    STATE_KEY,
    ContractInfo,
    SandproofState,
    contract_info,
    outcome_of,
    sandproof_state,
)

__all__ = [
    "CHECKS_KEY",
    "DEFAULT_CONCURRENCY",
    "HYPOTHESIS_PROFILES",
    "RUNTIMES",
    "STATE_KEY",
    "ContractInfo",
    "SandproofState",
    "cloud_guard",
    "contract_info",
    "current_profile",
    "linux_problem",
    "load_env_profile",
    "opensandbox_asgi",
    "opensandbox_mock",
    "outcome_of",
    "register_hypothesis_profiles",
    "sandproof_runtime",
    "sandproof_state",
    "sandproof_target",
    "tensorlake_mock",
    "tensorlake_sdk_args",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the sandproof command-line options."""
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register markers and profiles, parse the target and wire the report directory."""
    add_markers(config)
    register_hypothesis_profiles()
    state = build_state(config, linux_problem)
    reports.wire_report_dir(config, state)
    config.stash[STATE_KEY] = state
    state.sdk_env_mode = sdk_env_mode(config)
    if state.sdk_env_mode == "always":
        export_sdk_env(state)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> None:
    """With ``sandproof_sdk_env = auto``: export the SDK environment before the first module that imports an SDK
    at its top is imported (:mod:`harness.plugin.sdkenv`); collection itself goes on as usual."""
    state = parent.config.stash.get(STATE_KEY, None)
    if (
        state is not None
        and state.sdk_env_mode == "auto"
        and not state.sdk_env_exported
        and state.target.kind == "mock"
        and imports_an_sdk(module_path)
    ):
        export_sdk_env(state)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Copy a user-chosen JUnit file into the report directory, restore the profile, stop everything."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    try:
        state.close()
    finally:
        reports.copy_junit(state)
        restore_profile(state.previous_profile)
        del config.stash[STATE_KEY]


def pytest_report_header(config: pytest.Config) -> str | None:
    """Name the target when it is not the default (and the runtime when it is not the emulator)."""
    state = config.stash.get(STATE_KEY, None)
    return None if state is None else reports.header(state)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the Hypothesis profile, start the report clock and the progress ticker."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    reports.start_report(state)
    progress.start_ticker(session.config, state)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect providers left out by ``--sandproof-provider``; mark contracts the target cannot serve as skipped."""
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        collection.select_items(config, state, items, linux_problem)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test whose contract or sdk marker is malformed."""
    if STATE_KEY in item.config.stash:
        collection.fail_malformed(item)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Open the test's strength ledger and count the Hypothesis examples a contract test runs; fail a guarded
    test that sent anything beyond this machine."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        return (yield)
    result = yield from progress.run_contract(state, item)
    trapped = item.stash.get(guard.TRAPPED_KEY, None)
    escaped = trapped.new() if trapped is not None else []
    if escaped:
        pytest.fail(guard.message(escaped), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Fold each phase of a contract test into the report."""
    report: pytest.TestReport = yield
    state = item.config.stash.get(STATE_KEY, None)
    if state is not None:
        reports.record_phase(state, item, report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """With a report directory, note the unknown request fields of every mock the test's fixtures hold."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is not None:
        reports.note_held_mocks(state, item)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Gather unknown request fields, write the report files and stop the target."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    reports.finish_report(state, exitstatus)
    state.close()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print passed, failed and skipped counts per provider and operation, with reasons."""
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        reports.summarise(terminalreporter, state)
