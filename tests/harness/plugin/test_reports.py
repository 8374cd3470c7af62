"""The plugin's report plumbing: header, report directory, JUnit copy, phases and summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.plugin.reports import copy_junit, header, record_phase, summarise, wire_report_dir
from harness.plugin.state import SandproofState
from harness.reporting.report import ContractReport
from harness.targets import parse_target

pytest_plugins = ["pytester"]

POLICY = "policy:contracts.opensandbox_adapter:reference_engine"


def _state(spec: str = POLICY, **values: object) -> SandproofState:
    target = parse_target(spec)
    target.configure(container=False)
    return SandproofState(target=target, report=ContractReport(spec), **values)  # type: ignore[arg-type]


class _Terminal:
    """Collects what the summary writes."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"{sep} {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_the_header_names_a_target_or_runtime_that_is_not_the_default() -> None:
    assert header(_state("mock")) is None
    assert header(_state("mock", runtime="linux")) == "sandproof runtime: linux"
    assert header(_state("mock", container=True)) == "sandproof target: mock (container)"
    assert header(_state()) == f"sandproof target: {POLICY}"
    assert header(_state(runtime="linux", runtime_problem="no bwrap")) == (
        f"sandproof target: {POLICY}; sandproof runtime: linux (no bwrap)"
    )


def test_the_report_dir_takes_junit_unless_the_user_chose_a_file(pytester: pytest.Pytester, tmp_path: Path) -> None:
    state = _state()
    config = pytester.parseconfig(f"--sandproof-report={tmp_path / 'out'}")
    wire_report_dir(config, state)
    assert state.report_dir == (tmp_path / "out").resolve() and state.junit_source is None
    assert config.option.xmlpath == str(state.report_dir / "junit.xml")
    mine = tmp_path / "mine.xml"
    state = _state()
    wire_report_dir(pytester.parseconfig(f"--junitxml={mine}", f"--sandproof-report={tmp_path / 'out'}"), state)
    assert state.junit_source == mine.resolve()
    mine.write_text("<testsuites/>", encoding="utf-8")
    copy_junit(state)
    assert (tmp_path / "out" / "junit.xml").read_text(encoding="utf-8") == "<testsuites/>"


def test_contract_phases_reach_the_summary(pytester: pytest.Pytester) -> None:
    items = {
        item.name: item
        for item in pytester.getitems(
            "import pytest\n\n@pytest.mark.contract('opensandbox', 'delete', requires='engine')\n"
            "def test_contract():\n    pass\n\ndef test_plain():\n    pass\n"
        )
    }
    state = _state()
    for name, item in items.items():
        for when in ("setup", "call", "teardown"):
            outcome = "failed" if when == "call" and name == "test_contract" else "passed"
            longrepr = "delete kept the rule" if outcome == "failed" else None
            report = pytest.TestReport(item.nodeid, item.location, {}, outcome, longrepr, when, duration=0.1)
            record_phase(state, item, report)
    terminal = _Terminal()
    summarise(terminal, state)
    assert terminal.lines[0] == "= sandproof contracts"
    rows = [line.split() for line in terminal.lines if line.startswith("opensandbox")]
    assert rows == [["opensandbox", "delete", "0", "1", "0", *rows[0][5:]]]
    assert not any("plain" in line for line in terminal.lines)


def test_no_summary_without_contracts_or_a_report_dir() -> None:
    terminal = _Terminal()
    summarise(terminal, _state())
    assert terminal.lines == []
