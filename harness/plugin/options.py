"""The plugin's command-line options and markers, the runtime choices, and the run state they configure."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from harness.plugin.profiles import current_profile, load_env_profile
from harness.plugin.state import SandproofState
from harness.reporting.report import ContractReport
from harness.targets import PROVIDERS, TargetError, parse_target

__all__ = ["DEFAULT_CONCURRENCY", "RUNTIMES", "add_markers", "add_options", "build_state", "linux_problem"]

#: Clients of the concurrency contract unless ``--sandproof-concurrency`` says otherwise.
DEFAULT_CONCURRENCY = 4
#: What ``--sandproof-runtime`` chooses from.
RUNTIMES = ("emulator", "linux")


def linux_problem() -> str | None:
    """Return why the linux runtime cannot run here (the one requirements message), or None when it can."""
    from mockserver.linux.requirements import check_requirements

    report = check_requirements()
    return None if report.ok else report.message()


def _clients(value: str) -> int:
    """Parse ``--sandproof-concurrency``: a whole number of clients, 0 or more."""
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of clients, got {value!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"the number of clients cannot be negative, got {count}")
    return count


def add_options(parser: pytest.Parser) -> None:
    """Add the sandproof command-line options and ini values to ``parser``."""
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
        "--sandproof-allow-reset",
        action="store_true",
        default=False,
        help="let the contracts reset a tensorlake:URL or opensandbox:URL server, move its clock and arm faults on "
        "it (its state is saved first and put back at the end); without it they skip",
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
        "imported at the top of a test module (tensorlake reads its variables at import) points at them "
        "(default: auto, when the first test module that imports an SDK at its top is collected)",
    )
    group.addoption(
        "--no-sandproof-sdk-env",
        action="store_false",
        dest="sandproof_sdk_env",
        help="never export the mocks' SDK environment for the whole run (only the fixtures set it, per test)",
    )
    parser.addini(
        "sandproof_sdk_env",
        type="string",
        default="auto",
        help="auto (default), always (as --sandproof-sdk-env) or never (as --no-sandproof-sdk-env): when the "
        "mocks' SDK environment is exported for the whole run",
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


def add_markers(config: pytest.Config) -> None:
    """Register the ``contract``, ``sdk``, ``runtime`` and ``sandproof_cloud`` markers."""
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
    config.addinivalue_line(
        "markers",
        "sandproof_cloud: let a test that uses sandproof's fixtures reach hosts beyond this machine (the real-cloud "
        "guard otherwise traps and fails such a call)",
    )


def build_state(config: pytest.Config, check_linux: Callable[[], str | None]) -> SandproofState:
    """Parse the target and the options into the run's state; load the ``HYPOTHESIS_PROFILE`` profile.

    ``check_linux`` says why the linux runtime cannot run (None when it can); it is asked only when
    ``--sandproof-runtime=linux``. A bad ``--sandproof-target`` is a :class:`pytest.UsageError`.
    """
    previous_profile = current_profile()
    try:
        target = parse_target(config.getoption("sandproof_target"))
        container = bool(config.getoption("sandproof_container"))
        target.configure(container=container, allow_reset=bool(config.getoption("sandproof_allow_reset")))
    except TargetError as exc:
        raise pytest.UsageError(f"--sandproof-target: {exc}") from exc
    load_env_profile(config)
    wanted = config.getoption("sandproof_provider")
    strict = bool(config.getoption("sandproof_strict"))
    runtime = str(config.getoption("sandproof_runtime") or "emulator")
    return SandproofState(
        target=target,
        report=ContractReport(target.spec, strict=strict),
        container=container,
        strict=strict,
        providers=frozenset(wanted) if wanted else None,
        previous_profile=previous_profile,
        runtime=runtime,
        runtime_problem=check_linux() if runtime == "linux" else None,
    )
