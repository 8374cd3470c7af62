"""The example in docs/example_test.py really runs: against the mocks, and skipped where a target cannot."""

from __future__ import annotations

from pathlib import Path

import opensandbox  # noqa: F401  (imported once here, so the in-process runs do not re-import the SDK)
import pytest

from harness.reporting import report as report_module

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "example_test.py"


@pytest.fixture(autouse=True)
def _private_deviations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the example's registered deviation out of the session's registry."""
    monkeypatch.setattr(report_module, "_DEVIATIONS", [])


def test_docs_example_passes_against_the_mocks(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(example_test=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--sandproof-report={tmp_path}")
    result.assert_outcomes(passed=4)
    matrix = (tmp_path / "fidelity.md").read_text(encoding="utf-8")
    assert "| list | — | ✅ 3 passed |" in matrix and "| execd | — | — ⚠ |" in matrix


def test_docs_example_contracts_skip_on_a_policy_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(example_test=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--sandproof-target=policy:contracts.opensandbox_adapter:reference_engine"
    )
    result.assert_outcomes(passed=2, skipped=2)  # the SDK examples use the mock fixtures, not the target
