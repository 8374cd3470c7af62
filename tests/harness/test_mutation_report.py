from pathlib import Path

import pytest

from harness import mutation_report
from harness.mutation_report import Outcome, render


def test_render_counts_per_family_and_in_total() -> None:
    text = render([Outcome("a", "x", True, 0.1), Outcome("a", "y", False, 0.2), Outcome("b", "z", True, 0.3)])
    assert "| a | 1 | 2 |" in text and "| b | 1 | 1 |" in text and "| **all** | **2** | **3** |" in text
    assert "| a | y | **survived** |" in text


def test_a_surviving_mutant_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(mutation_report, "run_all", lambda progress: [Outcome("f", "lucky", False, 0.0)])
    assert mutation_report.main(["--report", str(tmp_path)]) == 1
    assert "SURVIVED: f / lucky" in capsys.readouterr().out
    assert "survived" in (tmp_path / "mutation.md").read_text()


def test_the_policy_families_kill_every_engine_mutant() -> None:
    outcomes = mutation_report._policy_outcomes(
        "tl", "tests.mutants.tensorlake_engines", mutation_report._tensorlake_engine_killed
    )
    assert len(outcomes) >= 8 and all(o.killed for o in outcomes), outcomes
