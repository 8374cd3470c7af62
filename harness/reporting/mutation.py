"""Mutation score: deliberately wrong implementations the contracts must reject, and how many they do.

A :class:`Family` is a set of mutants (wrong policy engines, wrong mocks, ...) and a ``judge`` that runs the
contracts on one mutant and says whether they rejected (killed) it. :func:`run_families` judges every mutant,
:func:`render` writes the markdown report and :func:`main` is the command line a catalogue of mutants runs
(sandproof's own catalogue: ``python -m tests.mutants``). Mock mutant modules may also register factories by
suite with :func:`register_mutants`, read back with :func:`load_mutants`.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MUTANTS",
    "Family",
    "MutantFactory",
    "Outcome",
    "kills_opensandbox_engine",
    "kills_tensorlake_engine",
    "load_mutants",
    "main",
    "mutation_results",
    "mutation_score",
    "register_mutants",
    "render",
    "run_families",
]

MutantFactory = Callable[[], object]
Runner = Callable[[str, MutantFactory], bool]

#: ``"<suite>:<name>"`` → factory of every registered mutant.
MUTANTS: dict[str, MutantFactory] = {}
_LOCK = threading.Lock()


def register_mutants(suite: str, factories: Mapping[str, MutantFactory]) -> None:
    """Register ``factories`` as ``"<suite>:<name>"``; registering the same name again replaces it."""
    if not suite or ":" in suite:
        raise ValueError(f"suite must be a non-empty name without ':', got {suite!r}")
    with _LOCK:
        for name, factory in factories.items():
            if not callable(factory):
                raise TypeError(f"mutant {suite}:{name} is not callable")
            MUTANTS[f"{suite}:{name}"] = factory


def load_mutants(suite: str | None = None) -> dict[str, MutantFactory]:
    """Return the registered mutants, of ``suite`` if given."""
    with _LOCK:
        return {name: factory for name, factory in MUTANTS.items() if suite is None or name.split(":", 1)[0] == suite}


def mutation_results(run: Runner, mutants: Mapping[str, MutantFactory] | None = None) -> dict[str, bool]:
    """Return, for every mutant (default: all registered), whether ``run`` killed it."""
    chosen = load_mutants() if mutants is None else dict(mutants)
    return {name: bool(run(name, factory)) for name, factory in sorted(chosen.items())}


def mutation_score(run: Runner, mutants: Mapping[str, MutantFactory] | None = None) -> tuple[int, int]:
    """Return ``(killed, total)``: how many mutants (default: all registered) ``run`` killed, out of how many."""
    results = mutation_results(run, mutants)
    return sum(results.values()), len(results)


# --- families and the report ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """Mutants of one kind and the judge that runs the contracts on one of them (True: killed)."""

    label: str
    mutants: Mapping[str, Any]
    judge: Callable[[str, Any], bool]


@dataclass(frozen=True)
class Outcome:
    """What happened to one mutant."""

    family: str
    name: str
    killed: bool
    seconds: float


def kills_tensorlake_engine(name: str, engine: Any) -> bool:
    """Judge a TensorLake policy engine: killed when one policy check fails on it."""
    from harness.policy.tensorlake.checks import run_checks

    return any(not r.passed for r in run_checks(engine, max_examples=60, fail_fast=True, shrink=False))


def kills_opensandbox_engine(name: str, engine: Any) -> bool:
    """Judge an OpenSandbox policy engine: killed when one policy check fails on it."""
    from harness.policy.opensandbox import run_checks

    return any(not r.passed for r in run_checks(engine, max_examples=100, stop_on_failure=True))


def run_families(families: Sequence[Family], progress: Callable[[str], None] = print) -> list[Outcome]:
    """Judge every mutant of every family; report each family's score through ``progress`` as it ends."""
    outcomes: list[Outcome] = []
    for family in families:
        started = time.monotonic()
        found = []
        for name, mutant in family.mutants.items():
            began = time.monotonic()
            killed = bool(family.judge(name, mutant))
            found.append(Outcome(family.label, name, killed, time.monotonic() - began))
        killed_count = sum(o.killed for o in found)
        progress(f"{family.label}: {killed_count}/{len(found)} killed in {time.monotonic() - started:.1f} s")
        outcomes.extend(found)
    return outcomes


def render(outcomes: Sequence[Outcome]) -> str:
    """Return the outcomes as a markdown report with the score per family and in total."""
    lines = ["# Mutation score", "", "| family | killed | total |", "|---|---|---|"]
    for family in sorted({o.family for o in outcomes}):
        mine = [o for o in outcomes if o.family == family]
        lines.append(f"| {family} | {sum(o.killed for o in mine)} | {len(mine)} |")
    lines.append(f"| **all** | **{sum(o.killed for o in outcomes)}** | **{len(outcomes)}** |")
    lines += ["", "| family | mutant | result | seconds |", "|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {o.family} | {o.name} | {'killed' if o.killed else '**survived**'} | {o.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def main(
    families: Callable[[], Sequence[Family]],
    argv: Sequence[str] | None = None,
    *,
    prog: str = "mutation report",
    run: Callable[[Sequence[Family], Callable[[str], None]], list[Outcome]] = run_families,
) -> int:
    """Judge every mutant of ``families()``, print the score, optionally write ``DIR/mutation.md``; 1 if one survived."""
    parser = argparse.ArgumentParser(prog=prog, description="Run every deliberately wrong implementation.")
    parser.add_argument("--report", metavar="DIR", help="also write DIR/mutation.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    outcomes = run(families(), lambda line: print(line, flush=True))
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
