"""Run every deliberately wrong implementation against the contracts and print the mutation score.

Four families: wrong TensorLake and OpenSandbox policy engines (``tests/mutants/*_engines.py``, judged by
the policy checks) and wrong mocks of both providers (``tests/mutants/*_mocks.py``, judged by the API state
machines). A mutant is *killed* when at least one contract fails on it. ``python -m harness.mutation_report
[--report DIR]`` prints a table and the score, writes ``DIR/mutation.md``, and exits 1 if any mutant survived.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """What happened to one mutant."""

    family: str
    name: str
    killed: bool
    seconds: float


def _policy_outcomes(family: str, module: str, judge: Callable[[Any], bool]) -> list[Outcome]:
    outcomes = []
    for mutant in importlib.import_module(module).MUTANTS:
        started = time.monotonic()
        killed = judge(mutant)
        outcomes.append(Outcome(family, type(mutant).__name__, killed, time.monotonic() - started))
    return outcomes


def _tensorlake_engine_killed(engine: Any) -> bool:
    from harness.policy_tensorlake import run_checks

    return any(not r.passed for r in run_checks(engine, max_examples=60, fail_fast=True, shrink=False))


def _opensandbox_engine_killed(engine: Any) -> bool:
    from harness.policy_opensandbox import run_checks

    return any(not r.passed for r in run_checks(engine, max_examples=100, stop_on_failure=True))


def _mock_outcomes() -> list[Outcome]:
    from harness.mutation import load_mutants
    from harness.opensandbox_machine import run_mutant
    from harness.tensorlake_machine import kills_mutant

    runners: dict[str, Callable[[str, Any], bool]] = {"opensandbox-api": run_mutant, "tensorlake-api": kills_mutant}
    outcomes = []
    for name, factory in sorted(load_mutants().items()):
        suite = name.split(":", 1)[0]
        started = time.monotonic()
        killed = bool(runners[suite](name, factory))
        outcomes.append(Outcome(f"{suite} mocks", name.split(":", 1)[1], killed, time.monotonic() - started))
    return outcomes


def run_all(progress: Callable[[str], None] = print) -> list[Outcome]:
    """Run every family and return one outcome per mutant, reporting progress as it goes."""
    outcomes: list[Outcome] = []
    families: list[tuple[str, Callable[[], list[Outcome]]]] = [
        (
            "tensorlake policy engines",
            lambda: _policy_outcomes(
                "tensorlake policy engines", "tests.mutants.tensorlake_engines", _tensorlake_engine_killed
            ),
        ),
        (
            "opensandbox policy engines",
            lambda: _policy_outcomes(
                "opensandbox policy engines", "tests.mutants.opensandbox_engines", _opensandbox_engine_killed
            ),
        ),
        ("mock variants", _mock_outcomes),
    ]
    for label, run in families:
        started = time.monotonic()
        found = run()
        killed = sum(o.killed for o in found)
        progress(f"{label}: {killed}/{len(found)} killed in {time.monotonic() - started:.1f} s")
        outcomes.extend(found)
    return outcomes


def render(outcomes: Sequence[Outcome]) -> str:
    """Return the outcomes as a markdown report with the score per family and in total."""
    lines = ["# Mutation score", "", "| family | killed | total |", "|---|---|---|"]
    families = sorted({o.family for o in outcomes})
    for family in families:
        mine = [o for o in outcomes if o.family == family]
        lines.append(f"| {family} | {sum(o.killed for o in mine)} | {len(mine)} |")
    lines.append(f"| **all** | **{sum(o.killed for o in outcomes)}** | **{len(outcomes)}** |")
    lines += ["", "| family | mutant | result | seconds |", "|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {o.family} | {o.name} | {'killed' if o.killed else '**survived**'} | {o.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the mutation report; return 1 if any mutant survived."""
    parser = argparse.ArgumentParser(prog="python -m harness.mutation_report", description=__doc__)
    parser.add_argument("--report", metavar="DIR", help="also write DIR/mutation.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    outcomes = run_all(lambda line: print(line, flush=True))
    survivors = [o for o in outcomes if not o.killed]
    killed = len(outcomes) - len(survivors)
    for o in survivors:
        print(f"SURVIVED: {o.family} / {o.name}", flush=True)
    if args.report:
        path = Path(args.report)
        path.mkdir(parents=True, exist_ok=True)
        (path / "mutation.md").write_text(render(outcomes), encoding="utf-8")
    print(
        f"mutation score: {killed}/{len(outcomes)} mutants killed ({killed / max(len(outcomes), 1):.0%}) "
        f"in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    return 0 if not survivors else 1


if __name__ == "__main__":
    sys.exit(main())
