"""Mutation score: deliberately wrong implementations the contracts must reject, and how many they do.

A :class:`Family` is a set of mutants (wrong policy engines, wrong mocks, ...) and a ``judge`` that runs the
contracts on one mutant and says what killed it: a :class:`Kill` names the failing check and its strength
(:mod:`harness.strength`). A mutant is killed when a check that fails a default run (``spec``, ``observed``, or
an untagged one) fails on it; a mutant that differs only where the sources are silent is a *choice
mutant* (its ``choice`` attribute says why) and must be caught by a ``choice`` check, which fails only a
strict run. :func:`run_families` judges every mutant, :func:`render` writes the markdown report with the score
per strength (:func:`run_parallel` spreads the mutants over worker processes) and :func:`main` is the command line a catalogue of mutants runs (sandproof's own catalogue:
``python -m tests.mutants``). Mock mutant modules may also register factories by suite with
:func:`register_mutants`, read back with :func:`load_mutants`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "MUTANTS",
    "Family",
    "Judgement",
    "Kill",
    "KillStrength",
    "MutantFactory",
    "Outcome",
    "kills_opensandbox_engine",
    "kills_restrict_function",
    "kills_tensorlake_engine",
    "load_mutants",
    "main",
    "mutation_results",
    "mutation_score",
    "register_mutants",
    "render",
    "run_families",
    "run_parallel",
    "score_line",
]

MutantFactory = Callable[[], object]
#: A judge of one mutant: anything truthy (a :class:`Kill`, True) when it killed it.
Runner = Callable[[str, MutantFactory], object]

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

#: The strength of what killed a mutant: a tagged check's strength, or ``untagged`` (a check without a tag).
KillStrength = Literal["spec", "observed", "choice", "untagged"]
_KILL_ORDER: tuple[KillStrength, ...] = ("spec", "observed", "untagged", "choice")


@dataclass(frozen=True)
class Kill:
    """What killed a mutant: the check (or rule group) that failed and its strength."""

    by: str
    strength: KillStrength


Judgement = Kill | bool | None


@dataclass(frozen=True)
class Family:
    """Mutants of one kind, the judge that runs the contracts on one of them, and the suite its checks belong to.

    The judge returns a :class:`Kill` (or True for a kill of unknown strength, False or None when the mutant
    survived). Each mutant may name the check aimed at it (``caught_by``) and, when only a ``choice`` check can
    catch it, say why (``choice``).
    """

    label: str
    mutants: Mapping[str, Any]
    judge: Callable[[str, Any], Judgement]
    suite: str = ""


@dataclass(frozen=True)
class Outcome:
    """What happened to one mutant: what killed it (None: survived) and whether it is declared a choice mutant."""

    family: str
    name: str
    kill: Kill | None
    seconds: float
    choice_mutant: bool = False

    @property
    def killed(self) -> bool:
        """Tell whether the default run kills it (a spec, observed or untagged contract failed)."""
        return self.kill is not None and self.kill.strength != "choice"

    @property
    def accounted(self) -> bool:
        """Tell whether it is killed by default, or is a declared choice mutant a choice check kills."""
        return self.killed or (self.choice_mutant and self.kill is not None)


def _kill(results: Sequence[Any]) -> Kill | None:
    """Return the first failing check that fails a default run, else the first failing choice, else None."""
    failing = [r for r in results if not r.passed]
    for result in failing:
        if result.strength != "choice":
            return Kill(result.name, result.strength or "untagged")
    return Kill(failing[0].name, "choice") if failing else None


def _aimed_first(engine: Any, checks: Sequence[str]) -> list[str]:
    """Return ``checks`` with the one the mutant declares it is caught by (``caught_by``) first.

    The verdict does not change (a mutant is killed by any check that fails a default run, and a choice mutant
    still runs every check), but a mutant caught by its own check stops after one check instead of after all
    the checks before it.
    """
    aimed = getattr(engine, "caught_by", "")
    return [aimed, *(c for c in checks if c != aimed)] if aimed in checks else list(checks)


def kills_tensorlake_engine(name: str, engine: Any) -> Kill | None:
    """Judge a TensorLake policy engine: what kills it (a check failing a default run first, else a choice)."""
    from harness.policy.tensorlake.checks import CHECKS, run_checks

    order = _aimed_first(engine, list(CHECKS))
    return _kill(run_checks(engine, max_examples=60, only=order, fail_fast=True, shrink=False))


def kills_opensandbox_engine(name: str, engine: Any) -> Kill | None:
    """Judge an OpenSandbox policy engine: what kills it (a check failing a default run first, else a choice)."""
    from harness.policy.opensandbox import CHECKS, run_checks

    order = tuple(_aimed_first(engine, list(CHECKS)))
    return _kill(run_checks(engine, max_examples=60, checks=order, stop_on_failure=True, shrink=False))


def kills_restrict_function(name: str, restrict: Any) -> Kill | None:
    """Judge a ``restrict_sandbox_network`` function with both reference engines judging its policies."""
    from contracts.opensandbox_adapter import reference_engine as opensandbox
    from contracts.tensorlake_adapter import reference_engine as tensorlake
    from harness.policy.sandbox_network import CHECKS, run_checks

    order = _aimed_first(restrict, list(CHECKS))
    found = [
        _kill(run_checks(engine, restrict=restrict, only=order, fail_fast=True, shrink=False))
        for engine in (tensorlake, opensandbox)
    ]
    kills = [k for k in found if k is not None]
    return min(kills, key=lambda k: _KILL_ORDER.index(k.strength), default=None)


def _as_kill(judgement: Judgement) -> Kill | None:
    if isinstance(judgement, Kill):
        return judgement
    return Kill("", "untagged") if judgement else None


def _judge(family: Family, name: str) -> Outcome:
    began = time.monotonic()
    mutant = family.mutants[name]
    kill = _as_kill(family.judge(name, mutant))
    declared = bool(getattr(mutant, "choice", ""))
    return Outcome(family.label, name, kill, time.monotonic() - began, declared)


def run_families(families: Sequence[Family], progress: Callable[[str], None] = print) -> list[Outcome]:
    """Judge every mutant of every family; report each family's score through ``progress`` as it ends."""
    outcomes: list[Outcome] = []
    for family in families:
        started = time.monotonic()
        found = [_judge(family, name) for name in family.mutants]
        progress(f"{family.label}: {score_line(found)} in {time.monotonic() - started:.1f} s")
        outcomes.extend(found)
    return outcomes


_WORKER_FAMILIES: Sequence[Family] = ()


def _start_worker(families: Callable[[], Sequence[Family]]) -> None:
    global _WORKER_FAMILIES
    _WORKER_FAMILIES = families()


def _judge_in_worker(index: int, name: str) -> Outcome:
    return _judge(_WORKER_FAMILIES[index], name)


def run_parallel(
    families: Callable[[], Sequence[Family]], jobs: int, progress: Callable[[str], None] = print
) -> list[Outcome]:
    """Judge every mutant as :func:`run_families` does, spread over ``jobs`` forked worker processes.

    Each worker builds the families once (``families()``); the outcomes come back in the catalogue's order and
    each family's score is reported when its last mutant is judged (the seconds are the sum of its mutants').
    """
    listed = families()
    tasks = [(index, name) for index, family in enumerate(listed) for name in family.mutants]
    results: dict[tuple[int, str], Outcome] = {}
    left = {index: len(family.mutants) for index, family in enumerate(listed)}
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=(families,)) as pool:
        pending = {pool.submit(_judge_in_worker, index, name): (index, name) for index, name in tasks}
        for future in as_completed(pending):
            index, name = pending[future]
            results[(index, name)] = future.result()
            left[index] -= 1
            if left[index] == 0:
                found = [results[(index, n)] for n in listed[index].mutants]
                seconds = sum(o.seconds for o in found)
                progress(f"{listed[index].label}: {score_line(found)} in {seconds:.1f} s of judging")
    return [results[task] for task in tasks]


def score_line(outcomes: Sequence[Outcome]) -> str:
    """Return the score per strength: killed by default (spec, observed, untagged), choice mutants, survivors."""
    killed = [o for o in outcomes if o.killed]
    by = {s: sum(1 for o in killed if o.kill is not None and o.kill.strength == s) for s in _KILL_ORDER[:3]}
    detail = ", ".join(f"{s} {n}" for s, n in by.items() if n)
    choices = [o for o in outcomes if not o.killed and o.choice_mutant]
    text = f"{len(killed)}/{len(outcomes)} killed by the default run" + (f" ({detail})" if detail else "")
    if choices:
        caught = sum(1 for o in choices if o.kill is not None)
        text += f"; {caught}/{len(choices)} choice mutants killed by choice checks (--strict)"
    return text


def _result(o: Outcome) -> str:
    if o.killed and o.kill is not None:
        return f"killed ({o.kill.strength}{': ' + o.kill.by if o.kill.by else ''})"
    if o.accounted and o.kill is not None:
        return f"choice mutant, killed by {o.kill.by} under --strict"
    return "**survived**"


def render(outcomes: Sequence[Outcome]) -> str:
    """Return the outcomes as a markdown report with the score per family and strength, and in total."""
    lines = [
        "# Mutation score",
        "",
        "Killed by the default run: a `spec`, `observed` or `untagged` contract failed. A choice mutant differs "
        "only where the sources are silent: only a `choice` check, which fails a `--strict` run, can catch it.",
        "",
        "| family | spec | observed | untagged | choice mutants (strict) | survived | total |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(label: str, mine: Sequence[Outcome]) -> str:
        counts = [
            sum(1 for o in mine if o.killed and o.kill is not None and o.kill.strength == s) for s in _KILL_ORDER[:3]
        ]
        choices = sum(1 for o in mine if not o.killed and o.accounted)
        survived = sum(1 for o in mine if not o.accounted)
        return f"| {label} | " + " | ".join(str(n) for n in [*counts, choices, survived, len(mine)]) + " |"

    for family in sorted({o.family for o in outcomes}):
        lines.append(row(family, [o for o in outcomes if o.family == family]))
    lines.append(row("**all**", outcomes))
    lines += ["", f"Score: {score_line(outcomes)}.", "", "| family | mutant | result | seconds |", "|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {o.family} | {o.name} | {_result(o)} | {o.seconds:.1f} |")
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
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="judge in N worker processes (default 1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    started = time.monotonic()

    def say(line: str) -> None:
        print(line, flush=True)

    outcomes = run_parallel(families, args.jobs, say) if args.jobs > 1 else run(families(), say)
    survivors = [o for o in outcomes if not o.accounted]
    for o in survivors:
        print(f"SURVIVED: {o.family} / {o.name}", flush=True)
    if args.report:
        path = Path(args.report)
        path.mkdir(parents=True, exist_ok=True)
        (path / "mutation.md").write_text(render(outcomes), encoding="utf-8")
    print(f"mutation score: {score_line(outcomes)} in {time.monotonic() - started:.1f} s", flush=True)
    return 0 if not survivors else 1
