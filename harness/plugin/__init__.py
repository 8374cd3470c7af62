"""pytest plugin ``sandproof``: target selection, mock fixtures, contract markers, Hypothesis profiles, reports.

Registered as the ``pytest11`` entry point ``sandproof``, so it loads in every pytest run where sandproof is
installed. Importing it has no side effects; everything happens in hooks, per pytest config, and the mocks
are only imported and started when a fixture or contract test needs them.

Options: ``--sandproof-target=T`` (default ``mock``), ``--sandproof-container``, ``--sandproof-report=DIR``,
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
``tensorlake_sdk_args``, ``opensandbox_mock``, ``opensandbox_asgi``. ``--sandproof-sdk-env`` (or the ini ``sandproof_sdk_env = true``) exports the mocks'
SDK environment before test modules are imported.
The per-run state lives in :mod:`harness.plugin.state`, the Hypothesis profiles in
:mod:`harness.plugin.profiles`; their public names are re-exported here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.plugin.profiles import (
    HYPOTHESIS_PROFILES,
    current_profile,
    load_env_profile,
    register_hypothesis_profiles,
)
from harness.plugin.state import (
    STATE_KEY,
    ContractInfo,
    SandproofState,
    contract_info,
    outcome_of,
    sandproof_state,
)
from harness.reporting.progress import PROGRESS, Ticker
from harness.reporting.report import ContractReport
from harness.strength import CheckOutcome, ledger
from harness.targets import PROVIDERS, RunningMock, Target, TargetError, parse_target

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_CONCURRENCY",
    "HYPOTHESIS_PROFILES",
    "ContractInfo",
    "SandproofState",
    "contract_info",
    "register_hypothesis_profiles",
    "sandproof_state",
]


#: Clients of the concurrency contract unless ``--sandproof-concurrency`` says otherwise.
DEFAULT_CONCURRENCY = 4
#: What ``--sandproof-runtime`` chooses from.
RUNTIMES = ("emulator", "linux")


def linux_problem() -> str | None:
    """Return why the linux runtime cannot run here (the one requirements message), or None when it can."""
    from mockserver.linux.requirements import check_requirements

    report = check_requirements()
    return None if report.ok else report.message()


# --- options, markers, configuration ------------------------------------------------------------------


def _clients(value: str) -> int:
    """Parse ``--sandproof-concurrency``: a whole number of clients, 0 or more."""
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of clients, got {value!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"the number of clients cannot be negative, got {count}")
    return count


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the sandproof command-line options."""
    group = parser.getgroup("sandproof", "sandproof contract tests")
    group.addoption(
        "--sandproof-target",
        default="mock",
        metavar="T",
        help="what the contracts run against: mock (default), tensorlake:URL, opensandbox:URL, "
        "tensorlake-cloud, policy:MODULE:ATTR",
    )
    group.addoption(
        "--sandproof-container",
        action="store_true",
        default=False,
        help="run the mock target in a Docker container (testcontainers) instead of in-process",
    )
    group.addoption(
        "--sandproof-report",
        default=None,
        metavar="DIR",
        help="write DIR/junit.xml, DIR/fidelity.md and DIR/results.json",
    )
    group.addoption(
        "--sandproof-strict",
        action="store_true",
        default=False,
        help="fail on checks that differ from sandproof's own choices too (default: only spec and observed fail)",
    )
    group.addoption(
        "--sandproof-provider",
        action="append",
        choices=PROVIDERS,
        default=None,
        help="run only this provider's contract and sdk tests (repeatable)",
    )
    group.addoption(
        "--sandproof-sdk-env",
        action="store_true",
        default=None,
        help="serve both in-process mocks from the start of the run and export their SDK environment, so an SDK "
        "imported at the top of a test module (tensorlake reads its variables at import) points at them",
    )
    parser.addini(
        "sandproof_sdk_env",
        type="bool",
        default=False,
        help="as --sandproof-sdk-env: export the mocks' SDK environment before test modules are imported",
    )
    group.addoption(
        "--sandproof-progress",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="while a contract test runs longer, print what it is doing every SECONDS (default 15; 0: never)",
    )
    group.addoption(
        "--sandproof-runtime",
        choices=RUNTIMES,
        default="emulator",
        help="what the in-process mocks run sandboxes on: the command emulator (default) or real programs in "
        "Linux namespaces (linux: needs root, bubblewrap, nftables, iproute2; see docs/runtime.md)",
    )
    group.addoption(
        "--sandproof-concurrency",
        type=_clients,
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help=f"clients of the concurrency contract (default {DEFAULT_CONCURRENCY}; 0 skips it)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register markers and profiles, parse the target and wire the report directory."""
    config.addinivalue_line(
        "markers",
        "contract(provider, operation, requires=('api',)): a sandproof contract test; skipped when the "
        "target does not offer the provider's required capabilities (api, admin, engine)",
    )
    config.addinivalue_line(
        "markers", "sdk(provider, operation=None): a test that drives the provider's real SDK (SDK matrix)"
    )
    config.addinivalue_line(
        "markers",
        "runtime(name): the test needs this sandbox runtime; runtime('linux') skips with the requirements "
        "message where the linux runtime cannot run",
    )
    register_hypothesis_profiles()
    previous_profile = current_profile()
    try:
        target = parse_target(config.getoption("sandproof_target"))
        container = bool(config.getoption("sandproof_container"))
        target.configure(container=container)
    except TargetError as exc:
        raise pytest.UsageError(f"--sandproof-target: {exc}") from exc
    load_env_profile(config)
    wanted = config.getoption("sandproof_provider")
    strict = bool(config.getoption("sandproof_strict"))
    runtime = str(config.getoption("sandproof_runtime") or "emulator")
    state = SandproofState(
        target=target,
        report=ContractReport(target.spec, strict=strict),
        container=container,
        strict=strict,
        providers=frozenset(wanted) if wanted else None,
        previous_profile=previous_profile,
        runtime=runtime,
        runtime_problem=linux_problem() if runtime == "linux" else None,
    )
    report_dir = config.getoption("sandproof_report")
    if report_dir and not hasattr(config, "workerinput"):
        state.report_dir = Path(report_dir).resolve()
        if hasattr(config.option, "xmlpath"):
            if config.option.xmlpath:
                state.junit_source = Path(config.option.xmlpath).resolve()
            else:
                config.option.xmlpath = str(state.report_dir / "junit.xml")
    config.stash[STATE_KEY] = state
    if _sdk_env_wanted(config):
        _export_sdk_env(state)


def _sdk_env_wanted(config: pytest.Config) -> bool:
    option = config.getoption("sandproof_sdk_env")
    return bool(option) if option is not None else bool(config.getini("sandproof_sdk_env"))


def _export_sdk_env(state: SandproofState) -> None:
    """Serve both mocks now and export their SDK environment for the whole run (restored at the end)."""
    if state.runtime_problem is not None:
        return  # the tests that would use them are skipped with the reason
    try:
        running = [state.mocks().get(provider) for provider in PROVIDERS]
    except TargetError as exc:
        raise pytest.UsageError(f"--sandproof-sdk-env: {exc}") from exc
    patch = pytest.MonkeyPatch()
    for mock in running:
        for name, value in mock.env.items():
            patch.setenv(name, value)
    state.on_close(patch.undo)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Copy a user-chosen JUnit file into the report directory, restore the profile, stop everything."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    try:
        state.close()
    finally:
        if state.report_dir is not None and state.junit_source is not None and state.junit_source.is_file():
            destination = state.report_dir / "junit.xml"
            if destination != state.junit_source:
                state.report_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(state.junit_source, destination)
        if state.previous_profile is not None and current_profile() != state.previous_profile:
            from hypothesis import settings

            settings.load_profile(state.previous_profile)  # an in-process run must not leak its profile
        del config.stash[STATE_KEY]


def pytest_report_header(config: pytest.Config) -> str | None:
    """Name the target when it is not the default (and the runtime when it is not the emulator)."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    runtime = f"sandproof runtime: {state.runtime}" + (f" ({state.runtime_problem})" if state.runtime_problem else "")
    if state.target.kind == "mock" and not state.container:
        return runtime if state.runtime != "emulator" else None
    header = f"sandproof target: {state.target.spec}" + (" (container)" if state.container else "")
    return header if state.runtime == "emulator" else f"{header}; {runtime}"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the Hypothesis profile and start the report clock."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    state.report.started = time.monotonic()
    interval = float(session.config.getoption("sandproof_progress") or 0)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if interval > 0 and reporter is not None:
        ticker = Ticker(lambda line: reporter.write_line(line, yellow=True), interval).start()
        state.on_close(ticker.stop)
    if "hypothesis" in sys.modules:
        from hypothesis import settings

        state.report.profile = settings.get_current_profile_name()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect providers left out by ``--sandproof-provider``; mark contracts the target cannot serve as skipped."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    linux = None
    for item in items:
        needs = item.get_closest_marker("runtime")
        if needs is not None and "linux" in needs.args:
            linux = linux_problem() if linux is None else linux
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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test whose contract or sdk marker is malformed."""
    if STATE_KEY not in item.config.stash:
        return
    try:
        contract_info(item)
    except ValueError as exc:
        pytest.fail(str(exc), pytrace=False)


CHECKS_KEY = pytest.StashKey[list[CheckOutcome]]()


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Open the test's strength ledger and count the Hypothesis examples a contract test runs."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None or not _is_contract(item):
        return (yield)
    PROGRESS.start(_progress_label(item))
    with ledger(strict=state.strict) as book:
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Fold each phase of a contract test into the report."""
    report: pytest.TestReport = yield
    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        return report
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
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """With a report directory, note the unknown request fields of every mock the test's fixtures hold."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None or state.report_dir is None or "mockserver.core" not in sys.modules:
        return
    from mockserver.service import HttpMock

    for value in getattr(item, "funcargs", {}).values():
        core = value.mock if isinstance(value, RunningMock) else value
        if isinstance(core, HttpMock):
            found = core.journal.unknown_fields()
            if found:
                state.report.add_unknown_fields(core.provider, found, source=item.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Gather unknown request fields, write the report files and stop the target."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    state.report.finish(int(exitstatus))
    with contextlib.suppress(Exception):  # best effort: a target may have gone away
        state.collect_unknown_fields()
    if state.report_dir is not None:
        state.written = state.report.write(state.report_dir)
    state.close()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print passed, failed and skipped counts per provider and operation, with reasons."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
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


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sandproof_target(request: pytest.FixtureRequest) -> Target:
    """Return the run's target (started on first use of a URL, mock or admin client; stopped at the end)."""
    return sandproof_state(request.config).target


def _serve_mock(request: pytest.FixtureRequest, provider: str) -> Iterator[RunningMock]:
    """Yield a freshly reset in-process mock with its SDK environment set, then restore the environment."""
    state = sandproof_state(request.config)
    if state.runtime_problem is not None:
        pytest.skip(state.runtime_problem)
    try:
        running = state.mocks().get(provider)
    except TargetError as exc:
        pytest.fail(str(exc), pytrace=False)
    # A socket server journals a request just after answering it: collect late entries before the reset.
    state.note_unknown_fields(running.mock)
    running.reset()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in running.env.items():
            patch.setenv(name, value)
        try:
            yield running
        finally:
            state.note_unknown_fields(running.mock, request.node.nodeid)


@pytest.fixture(scope="session")
def sandproof_runtime(request: pytest.FixtureRequest) -> str:
    """Return what the in-process mocks run sandboxes on (``emulator`` or ``linux``)."""
    return sandproof_state(request.config).runtime


@pytest.fixture
def tensorlake_mock(request: pytest.FixtureRequest) -> Iterator[RunningMock]:
    """Serve a fresh TensorLake mock (``.url``, ``.mock``, ``.env``) with the SDK env vars set."""
    yield from _serve_mock(request, "tensorlake")


@pytest.fixture
def opensandbox_mock(request: pytest.FixtureRequest) -> Iterator[RunningMock]:
    """Serve a fresh OpenSandbox mock (``.url``, ``.mock``, ``.env``) with the SDK env vars set."""
    yield from _serve_mock(request, "opensandbox")


@pytest.fixture
def tensorlake_sdk_args(tensorlake_mock: RunningMock) -> dict[str, str]:
    """Return ``api_url``/``api_key`` for TensorLake SDK calls on a fresh mock: ``Sandbox.create(**tensorlake_sdk_args)``.

    The SDK reads its environment once, at import; passing these explicitly works whenever it was imported.
    """
    return {"api_url": tensorlake_mock.url, "api_key": tensorlake_mock.api_key}


@pytest.fixture
def opensandbox_asgi(request: pytest.FixtureRequest) -> Iterator[httpx.ASGITransport]:
    """Return an ``httpx.ASGITransport`` into a fresh OpenSandbox mock (the same one ``opensandbox_mock`` serves)."""
    state = sandproof_state(request.config)
    if state.runtime_problem is not None:
        pytest.skip(state.runtime_problem)
    try:
        core = state.mocks().core("opensandbox")
    except TargetError as exc:
        pytest.fail(str(exc), pytrace=False)
    state.note_unknown_fields(core)
    core.reset()
    try:
        yield core.transport()
    finally:
        state.note_unknown_fields(core, request.node.nodeid)
