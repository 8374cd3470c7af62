from pathlib import Path

import pytest

from harness.reporting import mutation
from harness.reporting.mutation import Family, Outcome, kills_tensorlake_engine, render, run_families
from tests.mutants import tensorlake_engines


def test_render_counts_per_family_and_in_total() -> None:
    text = render([Outcome("a", "x", True, 0.1), Outcome("a", "y", False, 0.2), Outcome("b", "z", True, 0.3)])
    assert "| a | 1 | 2 |" in text and "| b | 1 | 1 |" in text and "| **all** | **2** | **3** |" in text
    assert "| a | y | **survived** |" in text


def test_a_surviving_mutant_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lucky = Family("f", {"lucky": object()}, lambda name, mutant: False)
    assert mutation.main(lambda: [lucky], ["--report", str(tmp_path)]) == 1
    assert "SURVIVED: f / lucky" in capsys.readouterr().out
    assert "survived" in (tmp_path / "mutation.md").read_text()


def test_every_mutant_killed_passes_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    doomed = Family("f", {"a": 1, "b": 2}, lambda name, mutant: True)
    assert mutation.main(lambda: [doomed], []) == 0
    assert "mutation score: 2/2 mutants killed" in capsys.readouterr().out


def test_the_policy_family_kills_every_tensorlake_engine_mutant() -> None:
    family = Family("tl", {type(m).__name__: m for m in tensorlake_engines.MUTANTS}, kills_tensorlake_engine)
    outcomes = run_families([family], progress=lambda line: None)
    assert len(outcomes) >= 8 and all(o.killed for o in outcomes), outcomes
