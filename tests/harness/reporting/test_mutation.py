from pathlib import Path

import pytest

from harness.reporting import mutation
from harness.reporting.mutation import (
    Family,
    Kill,
    Outcome,
    kills_restrict_function,
    kills_tensorlake_engine,
    render,
    run_families,
    score_line,
)
from tests.mutants import nemo_gym_functions, tensorlake_engines


def _outcomes() -> list[Outcome]:
    return [
        Outcome("a", "x", Kill("wildcard_apex", "spec"), 0.1),
        Outcome("a", "y", None, 0.2),
        Outcome("a", "c", Kill("idna", "choice"), 0.1, choice_mutant=True),
        Outcome("b", "z", Kill("update", "untagged"), 0.3),
        Outcome("b", "w", Kill("unreachable", "observed"), 0.3),
    ]


def test_render_counts_per_family_strength_and_in_total() -> None:
    text = render(_outcomes())
    assert "| a | 1 | 0 | 0 | 1 | 1 | 3 |" in text and "| b | 0 | 1 | 1 | 0 | 0 | 2 |" in text
    assert "| **all** | 1 | 1 | 1 | 1 | 1 | 5 |" in text
    assert "| a | y | **survived** |" in text and "| a | x | killed (spec: wildcard_apex) |" in text
    assert "| a | c | choice mutant, killed by idna under --strict |" in text


def test_the_score_line_counts_per_strength() -> None:
    line = score_line(_outcomes())
    assert line == (
        "3/5 killed by the default run (spec 1, observed 1, untagged 1); "
        "1/1 choice mutants killed by choice checks (--strict)"
    )


def test_a_choice_kill_of_an_undeclared_mutant_is_a_survivor() -> None:
    undeclared = Outcome("a", "u", Kill("idna", "choice"), 0.1)
    assert not undeclared.killed and not undeclared.accounted
    declared = Outcome("a", "d", Kill("idna", "choice"), 0.1, choice_mutant=True)
    assert not declared.killed and declared.accounted
    assert not Outcome("a", "n", None, 0.1, choice_mutant=True).accounted


def test_a_surviving_mutant_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lucky = Family("f", {"lucky": object()}, lambda name, mutant: False)
    assert mutation.main(lambda: [lucky], ["--report", str(tmp_path)]) == 1
    assert "SURVIVED: f / lucky" in capsys.readouterr().out
    assert "survived" in (tmp_path / "mutation.md").read_text()


def test_every_mutant_killed_passes_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    doomed = Family("f", {"a": 1, "b": 2}, lambda name, mutant: True)
    assert mutation.main(lambda: [doomed], []) == 0
    assert "mutation score: 2/2 killed by the default run (untagged 2)" in capsys.readouterr().out


def _families() -> list[Family]:
    def judge(name: str, mutant: object) -> Kill | None:
        return None if name.startswith("lucky") else Kill(f"check-{name}", "observed" if name == "b" else "spec")

    return [
        Family("f", {"a": 1, "b": 2, "lucky": 3}, judge),
        Family("g", {"c": 4, "d": 5}, judge),
    ]


def test_judging_in_worker_processes_gives_the_sequential_outcomes_in_catalogue_order() -> None:
    lines: list[str] = []
    parallel = mutation.run_parallel(_families, 2, lines.append)
    sequential = run_families(_families(), progress=lambda line: None)
    key = [(o.family, o.name, o.kill) for o in parallel]
    assert key == [(o.family, o.name, o.kill) for o in sequential]
    assert [(o.family, o.name) for o in parallel] == [("f", "a"), ("f", "b"), ("f", "lucky"), ("g", "c"), ("g", "d")]
    assert sorted(line.split(":")[0] for line in lines) == ["f", "g"]
    assert any(line.startswith("f: 2/3 killed") for line in lines), lines


def test_jobs_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        mutation.main(_families, ["--jobs", "0"])
    assert exited.value.code == 2 and "--jobs must be at least 1" in capsys.readouterr().err


def test_a_survivor_found_by_a_worker_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation.main(_families, ["--jobs", "2"]) == 1
    assert "SURVIVED: f / lucky" in capsys.readouterr().out


@pytest.mark.catalogue
def test_the_policy_family_kills_every_tensorlake_engine_mutant_or_its_choice() -> None:
    family = Family("tl", {type(m).__name__: m for m in tensorlake_engines.MUTANTS}, kills_tensorlake_engine)
    outcomes = run_families([family], progress=lambda line: None)
    assert len(outcomes) >= 8 and all(o.accounted for o in outcomes), outcomes
    for outcome in outcomes:
        mutant = family.mutants[outcome.name]
        assert outcome.choice_mutant == bool(mutant.choice)
        assert outcome.killed != outcome.choice_mutant, outcome


def test_the_restrict_family_kills_every_restrict_mutant() -> None:
    family = Family("ng", {type(m).__name__: m for m in nemo_gym_functions.MUTANTS}, kills_restrict_function)
    outcomes = run_families([family], progress=lambda line: None)
    assert all(o.accounted for o in outcomes), outcomes
    assert {o.name for o in outcomes if o.choice_mutant} == {"UnknownModeInherits"}
