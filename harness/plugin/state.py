"""Per-run state of the pytest plugin: contract marker data, the report being built and the mocks in use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.reporting.report import ContractReport, Outcome, shorten
from harness.targets import CAPABILITIES, PROVIDERS, Target
from harness.targets.mocks import MockStack

if TYPE_CHECKING:
    from mockserver.service import HttpMock

__all__ = ["STATE_KEY", "ContractInfo", "SandproofState", "contract_info", "outcome_of", "sandproof_state"]


@dataclass(frozen=True)
class ContractInfo:
    """What a test's ``contract`` or ``sdk`` marker says."""

    provider: str
    operation: str
    requires: tuple[str, ...]
    sdk: bool = False


def contract_info(item: pytest.Item) -> ContractInfo | None:
    """Return the item's contract marker data, or None; raise ValueError when the marker is malformed."""
    marker = item.get_closest_marker("contract")
    if marker is not None:
        args = list(marker.args)
        provider = args.pop(0) if args else marker.kwargs.get("provider")
        operation = args.pop(0) if args else marker.kwargs.get("operation")
        requires: Any = marker.kwargs.get("requires", ("api",))
        if isinstance(requires, str):
            requires = (requires,)
        bad = [r for r in requires if r not in CAPABILITIES]
        if bad or args:
            raise ValueError(
                f"contract marker on {item.nodeid}: requires must be drawn from {', '.join(CAPABILITIES)} "
                f"(got {tuple(requires)!r}) and no more than two positional arguments"
            )
        return _checked(item, "contract", provider, operation, tuple(requires), sdk=False)
    marker = item.get_closest_marker("sdk")
    if marker is not None:
        args = list(marker.args)
        provider = args.pop(0) if args else marker.kwargs.get("provider")
        operation = args.pop(0) if args else marker.kwargs.get("operation")
        if operation is None:
            operation = getattr(item, "originalname", None) or item.name
        return _checked(item, "sdk", provider, operation, (), sdk=True)
    return None


def _checked(
    item: pytest.Item, name: str, provider: object, operation: object, requires: tuple[str, ...], sdk: bool
) -> ContractInfo:
    """Validate marker arguments."""
    if provider not in PROVIDERS:
        raise ValueError(
            f"{name} marker on {item.nodeid}: provider must be one of {', '.join(PROVIDERS)}, got {provider!r}"
        )
    if not isinstance(operation, str) or not operation.strip():
        raise ValueError(f"{name} marker on {item.nodeid}: operation must be a non-empty string")
    return ContractInfo(str(provider), operation.strip(), requires, sdk)


# --- per-run state ------------------------------------------------------------------------------------


@dataclass
class SandproofState:
    """Everything the plugin keeps for one pytest config."""

    target: Target
    report: ContractReport
    container: bool = False
    strict: bool = False
    report_dir: Path | None = None
    providers: frozenset[str] | None = None
    junit_source: Path | None = None
    previous_profile: str | None = None
    written: list[Path] = field(default_factory=list)
    last_user: dict[int, str] = field(default_factory=dict)
    runtime: str = "emulator"
    runtime_problem: str | None = None
    tripwire: Any = None
    sdk_env_mode: str = "auto"
    sdk_env_exported: bool = False
    _mocks: MockStack = field(default_factory=MockStack)
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def real_target(self, provider: str) -> bool:
        """Tell whether ``provider`` is served by a real server here (a URL or the cloud without sandproof's admin
        API), whose documented deviations (:mod:`harness.strength.deviations`) do not fail the run."""
        if self.target.kind not in ("url", "cloud"):
            return False
        try:
            return not self.target.admin_available(provider)
        except Exception:
            return False

    def __post_init__(self) -> None:
        """Let the in-process ``mock`` target serve the fixtures' mocks (on the run's runtime)."""
        self._mocks.runtime = self.runtime
        if self.target.kind == "mock" and not self.container:
            self.target.configure(mocks=self._mocks)

    def mocks(self) -> MockStack:
        """Return the run's in-process mock stack (shared by the fixtures and the ``mock`` target)."""
        return self._mocks

    def note_unknown_fields(self, core: HttpMock, source: str | None = None) -> None:
        """Merge one mock's journaled unknown fields, crediting ``source`` (else the last test that used it)."""
        if source is None:
            source = self.last_user.get(id(core))
        else:
            self.last_user[id(core)] = source
        self.report.add_unknown_fields(core.provider, core.journal.unknown_fields(), source=source)

    def collect_unknown_fields(self) -> None:
        """Merge the unknown request fields every reachable mock has journaled into the report."""
        seen: set[str] = set()
        for running in self._mocks.started().values():
            self.note_unknown_fields(running.mock)
            seen.add(running.url)
        if self.target.kind not in ("mock", "url") or not self.target.started:
            return
        for provider in PROVIDERS:
            url = self.target.urls.get(provider)
            if url is None or url in seen or not self.target.admin_available(provider):
                continue
            client = self.target.admin_client(provider)
            try:
                self.report.add_unknown_fields(provider, client.unknown_fields())
            except Exception:
                continue
            finally:
                client.close()

    def on_close(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` when the run ends (before the mocks stop), last registered first."""
        self._closers.append(undo)

    def close(self) -> None:
        """Undo what :meth:`on_close` was given, stop the target and the mocks."""
        try:
            while self._closers:
                self._closers.pop()()
            self.target.stop()
        finally:
            self._mocks.close()


STATE_KEY = pytest.StashKey[SandproofState]()


def sandproof_state(config: pytest.Config) -> SandproofState:
    """Return the plugin state of a configured pytest run."""
    return config.stash[STATE_KEY]


def outcome_of(report: pytest.TestReport) -> tuple[Outcome | None, str]:
    """Map one phase report to a report outcome and reason (None for a passing setup or teardown)."""
    xfail = getattr(report, "wasxfail", None)
    if xfail is not None:
        if report.skipped:
            return "xfailed", f"xfail: {xfail}" if xfail else "xfail"
        return ("passed", "") if report.when == "call" else (None, "")
    if report.skipped:
        longrepr = report.longrepr
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        return "skipped", text.removeprefix("Skipped: ")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = getattr(crash, "message", None) or report.longreprtext
        return ("failed" if report.when == "call" else "error"), shorten(str(message))
    return ("passed", "") if report.when == "call" else (None, "")
