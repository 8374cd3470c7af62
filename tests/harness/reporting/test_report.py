"""The contract report: folding phases, tallies, summary lines, fidelity matrix, JSON, deviations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.reporting import report as report_module
from harness.reporting.report import (
    ContractReport,
    Tally,
    TestRecord,
    deviations,
    register_deviation,
    unregister_deviation,
)


@pytest.fixture(autouse=True)
def _own_deviation_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give each test an empty registry and put the real one back afterwards."""
    monkeypatch.setattr(report_module, "_DEVIATIONS", [])


def _sample() -> ContractReport:
    rep = ContractReport("mock", profile="ci")
    rep.record("t.py::a", "tensorlake", "create", "passed", duration=0.5)
    rep.record("t.py::b", "tensorlake", "create", "failed", "AssertionError: status 500 != 201")
    rep.record("t.py::c", "opensandbox", "create", "passed")
    rep.record("t.py::d", "opensandbox", "faults", "skipped", "no /_mock admin API")
    rep.record("t.py::e", "opensandbox", "faults", "skipped", "no /_mock admin API")
    rep.add_examples("t.py::a", 120)
    rep.add_unknown_fields("opensandbox", {"POST /v1/sandboxes": ["volumes", "extensions"]})
    rep.add_unknown_fields("opensandbox", {"POST /v1/sandboxes": {"volumes"}}, source="t.py::c")
    rep.finish(1)
    return rep


def test_phases_fold_into_the_worst_outcome() -> None:
    rep = ContractReport("mock")
    rep.record("x", "tensorlake", "get", "passed", duration=0.25)
    rep.record("x", "tensorlake", "get", "error", "teardown blew up", duration=0.25)
    rep.record("x", "tensorlake", "get", "passed")
    record = rep.records["x"]
    assert (record.outcome, record.reason, record.duration) == ("error", "teardown blew up", 0.5)


def test_tally_buckets_every_outcome() -> None:
    tally = Tally()
    for outcome in ("passed", "xpassed", "failed", "error", "skipped", "xfailed"):
        tally.add(TestRecord("n", "p", "o", outcome, reason=f"why {outcome}"))  # type: ignore[arg-type]
    assert (tally.passed, tally.failed, tally.skipped, tally.total) == (2, 2, 2, 6)
    assert "why passed" not in tally.reasons and "why skipped" in tally.reasons


def test_summary_lines_show_counts_and_reasons() -> None:
    lines = _sample().summary_lines()
    assert lines[0] == "target mock, Hypothesis profile ci"
    assert lines[1].split() == ["provider", "operation", "passed", "failed", "skipped", "notes"]
    tl = next(line for line in lines if line.startswith("tensorlake") and "create" in line)
    assert tl.split()[2:5] == ["1", "1", "0"] and "status 500 != 201" in tl
    faults = next(line for line in lines if "faults" in line)
    assert faults.split()[2:5] == ["0", "0", "2"] and "no /_mock admin API" in faults
    assert lines[-2].startswith("2 passed, 1 failed, 2 skipped in ")
    assert lines[-1] == "checks by strength: untagged 2 passed, 1 failed, 2 skipped"
    assert "120 Hypothesis examples" in lines[-2]
    assert ContractReport("mock").summary_lines() == []


def test_fidelity_matrix_cells_sections_and_escaping() -> None:
    rep = _sample()
    register_deviation("tensorlake", "create", "ids differ | in format", "real ids are opaque")
    register_deviation("opensandbox", "pause", "pause is instant", "no container to freeze")
    text = rep.fidelity_markdown()
    assert "| operation | tensorlake | opensandbox |" in text
    assert "| create | ❌ 1/2 passed ⚠ | ✅ 1 passed |" in text
    assert "| faults | — | ⏭ skipped |" in text
    assert "| pause | — | — ⚠ |" in text  # a deviation's operation gets a row even without tests
    assert "## Failures" in text and "`t.py::b`: AssertionError: status 500 != 201" in text
    assert "- **opensandbox · faults** (2 tests): no /_mock admin API" in text
    assert "| tensorlake | create | ids differ \\| in format | real ids are opaque |" in text
    assert "| opensandbox | `POST /v1/sandboxes` | extensions, volumes | `c` |" in text
    assert "Hypothesis profile `ci`" in text and "120 Hypothesis examples" in text


def test_matrix_without_deviations_or_failures_says_so() -> None:
    rep = ContractReport("policy:x:y")
    rep.record("t::a", "opensandbox", "network-policy", "passed")
    text = rep.fidelity_markdown()
    assert "None registered." in text and "## Failures" not in text and "## Skipped" not in text
    assert "| network-policy | — | ✅ 1 passed |" in text


def test_json_and_files(tmp_path: Path) -> None:
    rep = _sample()
    written = rep.write(tmp_path / "out")
    assert [p.name for p in written] == ["fidelity.md", "results.json"]
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert data["target"] == "mock" and data["exit_status"] == 1
    assert data["totals"] == {"passed": 2, "failed": 1, "skipped": 2}
    assert data["examples"] == 120 and data["examples_per_second"] > 0
    assert data["unknown_fields"] == {"opensandbox": {"POST /v1/sandboxes": ["extensions", "volumes"]}}
    assert data["unknown_field_sources"]["opensandbox"]["POST /v1/sandboxes"] == {
        "extensions": [],
        "volumes": ["t.py::c"],
    }
    assert {c["operation"] for c in data["cells"]} == {"create", "faults"}
    assert next(t for t in data["tests"] if t["nodeid"] == "t.py::a")["examples"] == 120


def test_deviation_registry_dedupes_validates_and_forgets() -> None:
    first = register_deviation(" tensorlake ", "create", "slow", "why")
    again = register_deviation("tensorlake", "create", "slow", "why")
    assert first == again and deviations() == [first] and first.provider == "tensorlake"
    with pytest.raises(ValueError, match="description must be a non-empty string"):
        register_deviation("tensorlake", "create", " ", "why")
    unregister_deviation(first)
    unregister_deviation(first)
    assert deviations() == []


def test_long_reasons_are_shortened() -> None:
    rep = ContractReport("mock")
    rep.record("t", "tensorlake", "op", "failed", "x " * 1000)
    assert len(rep.records["t"].reason) == 300 and rep.records["t"].reason.endswith("…")


def _checks(contract: str, strength: str, status: str, example: str | None = None) -> dict[str, object]:
    return {"contract": contract, "strength": strength, "status": status, "source": "why", "counterexample": example}


def _tagged(strict: bool = False) -> ContractReport:
    rep = ContractReport("policy:m:e", strict=strict)
    rep.record("t::policy", "tensorlake", "network-policy", "passed")
    rep.add_checks(
        "t::policy",
        [
            _checks("tl:a", "spec", "passed"),
            _checks("tl:b", "spec", "passed"),
            _checks("tl:c", "observed", "passed"),
            _checks("tl:d", "choice", "passed"),
            _checks("tl:e", "choice", "differs", "{'deny_out': ['a.com', 'a.com']}"),
        ],
    )
    rep.record("t::machine", "tensorlake", "update", "failed", "boom")
    rep.add_checks("t::machine", [])
    rep.record("t::skipped", "tensorlake", "faults", "skipped", "no admin")
    return rep


def test_checks_are_counted_per_strength_and_untagged_tests_apart() -> None:
    rep = _tagged()
    zero = {"passed": 0, "failed": 0, "skipped": 0, "deviation": 0, "differs": 0}
    assert rep.strength_counts() == {
        "spec": {**zero, "passed": 2},
        "observed": {**zero, "passed": 1},
        "choice": {**zero, "passed": 1, "differs": 1},
        "untagged": {**zero, "failed": 1, "skipped": 1},
    }
    assert rep.strength_line() == (
        "spec 2 passed · observed 1 passed · choice 1 passed, 1 differ · untagged 1 failed, 1 skipped"
    )
    assert _tagged(strict=True).strength_line().endswith("(strict: choices fail the run)")


def test_a_differing_choice_is_reported_with_its_counterexample_everywhere() -> None:
    rep = _tagged()
    lines = rep.summary_lines()
    assert lines[-2] == "checks by strength: " + rep.strength_line()
    assert lines[-1] == "differs from sandproof's choice: tl:e (t::policy): {'deny_out': ['a.com', 'a.com']}"
    data = rep.to_json()
    [difference] = data["choice_differences"]
    assert difference["contract"] == "tl:e" and difference["nodeid"] == "t::policy"
    assert difference["counterexample"] == "{'deny_out': ['a.com', 'a.com']}"
    assert data["strength"]["choice"]["differs"] == 1 and data["strict"] is False
    text = rep.fidelity_markdown()
    assert "## Checks that differs from sandproof's choice" not in text
    assert "## Checks that differ from sandproof's choice" in text
    assert "| `tl:e` | `t::policy` | why | {'deny_out': ['a.com', 'a.com']} |" in text
    assert "Checks by strength: spec 2 passed" in text


def test_without_differences_there_is_no_section() -> None:
    rep = ContractReport("mock")
    rep.record("t::a", "tensorlake", "network-policy", "passed")
    rep.add_checks("t::a", [_checks("tl:a", "choice", "passed")])
    assert rep.differences() == [] and "differ from sandproof" not in rep.fidelity_markdown()
    assert rep.to_json()["choice_differences"] == []
