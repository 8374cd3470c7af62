"""A randomized differential campaign: seeded Hypothesis programs against the real server and the mock, by step budget.

:func:`run_campaign` draws request programs from :func:`~harness.differential.strategies.programs` with a fixed
Hypothesis seed, sends each to both sides through a :class:`~harness.differential.runner.DifferentialRunner`
until at least ``steps`` steps have run, and returns a :class:`CampaignResult`: the step count, the divergent
steps (differences no deviation covers), the steps whose differences a deviation explains (counted per
deviation) and the same per operation. The same seed and budget draw the same programs.

``python -m harness.differential.campaign`` (``make differential``) boots the real opensandbox-server 1.1.1 on
the fake Docker API and a wall-clock mock, runs a large budget with progress lines, prints the summary and every
divergent step, and exits 1 on any divergence. The unit suite runs a small budget of the same campaign.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

from harness.differential.compare import Comparison, ProgramResult
from harness.differential.deviations import Deviation
from harness.differential.programs import Program
from harness.differential.real_server import RealOpenSandboxServer, Settings
from harness.differential.runner import DifferentialRunner, Side
from harness.differential.strategies import programs
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.model.server_file import load_server_file

__all__ = [
    "DEFAULT_SEED",
    "LIMITED",
    "CampaignResult",
    "main",
    "mock_for_differential",
    "run_campaign",
    "sides",
]

DEFAULT_SEED = 20_260_101
KEY = "sandproof-differential-key"
#: A non-default configuration both sides run from: a maximum sandbox timeout, no egress image, a narrow port
#: range, a host-volume allow-list.
LIMITED: Settings = {
    "server": {"max_sandbox_timeout_seconds": 86400},
    "docker": {"port_range_min": 45000, "port_range_max": 45200},
    "storage": {"allowed_host_paths": ["/tmp/sandproof-allowed"]},
}


def _label(deviation: Deviation) -> str:
    """Return a short name for a deviation in summaries."""
    return f"{deviation.finding or 'known'} {deviation.operation} / {deviation.field_or_aspect}"


@dataclass
class CampaignResult:
    """What a campaign saw: steps, divergent steps and explained steps, overall and per operation."""

    seed: int
    programs: int = 0
    steps: int = 0
    divergent: list[Comparison] = field(default_factory=list)
    explained_steps: int = 0
    by_deviation: Counter[str] = field(default_factory=Counter)
    by_operation: dict[str, Counter[str]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, result: ProgramResult) -> None:
        """Count one program's comparisons."""
        self.programs += 1
        for comparison in result.comparisons:
            self.steps += 1
            tally = self.by_operation.setdefault(comparison.step.operation, Counter())
            tally["steps"] += 1
            if not comparison.ok:
                self.divergent.append(comparison)
                tally["divergent"] += 1
            elif comparison.differences:
                self.explained_steps += 1
                tally["explained"] += 1
            for deviation in {d.deviation for d in comparison.differences if d.deviation is not None}:
                self.by_deviation[_label(deviation)] += 1

    @property
    def ok(self) -> bool:
        """Return whether no step diverged."""
        return not self.divergent

    def summary(self) -> str:
        """Return the summary table: totals, explained steps per deviation, and per operation."""
        share = 100.0 * len(self.divergent) / self.steps if self.steps else 0.0
        lines = [
            f"differential campaign: seed {self.seed}, {self.programs} programs, {self.steps} steps, "
            f"{len(self.divergent)} divergent ({share:.1f}%), {self.explained_steps} explained by a deviation, "
            f"{self.seconds:.1f}s",
            "explained steps per deviation:",
            *(f"  {count:6d}  {label}" for label, count in sorted(self.by_deviation.items())),
            "per operation:           steps  divergent  explained",
        ]
        for operation, tally in sorted(self.by_operation.items()):
            lines.append(f"  {operation:<20} {tally['steps']:6d} {tally['divergent']:10d} {tally['explained']:10d}")
        return "\n".join(lines)

    def report(self, limit: int = 50) -> str:
        """Return the readable diff of the first `limit` divergent steps."""
        shown = [c.report() for c in self.divergent[:limit]]
        rest = len(self.divergent) - len(shown)
        return "\n".join(shown + ([f"... and {rest} more divergent steps"] if rest > 0 else []))


class _BudgetSpent(Exception):
    """Raised inside the Hypothesis test once the step budget is spent."""


def run_campaign(
    runner: DifferentialRunner,
    *,
    steps: int,
    seed_value: int = DEFAULT_SEED,
    min_steps: int = 3,
    max_steps: int = 8,
    progress: Callable[[CampaignResult], None] | None = None,
) -> CampaignResult:
    """Run seeded generated programs through `runner` until at least `steps` steps ran; return the tally.

    `progress` is called after every program. Hypothesis only draws here (no shrinking, no database): the
    campaign counts divergences instead of stopping at the first, and the seed makes the draw reproducible.
    """
    result = CampaignResult(seed_value)
    began = time.monotonic()

    @settings(
        max_examples=steps,  # every program has a step, so the budget is reached before the examples run out
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @seed(seed_value)
    @given(program=programs(min_steps, max_steps))
    def drive(program: Program) -> None:
        if result.steps >= steps:
            raise _BudgetSpent  # ends the draw; Hypothesis replays this example once, which sends nothing
        result.add(runner.run(program))
        result.seconds = time.monotonic() - began
        if progress is not None:
            progress(result)

    with contextlib.suppress(_BudgetSpent):
        drive()
    result.seconds = time.monotonic() - began
    return result


def mock_for_differential(real: RealOpenSandboxServer) -> OpenSandboxMock:
    """Return the mock the differential compares, built from the configuration file the running `real` server
    started from (so a difference is a behaviour, not a setting); on a wall clock, since relative times need one."""
    return OpenSandboxMock(clock=VirtualClock("wall", start=time.time()), config=load_server_file(real.config_path))


@contextmanager
def sides(settings: Settings | None = None) -> Iterator[tuple[Side, Side]]:
    """Start the real server from its configuration (`settings` over the run's own) and a served mock from the
    same file; yield their sides."""
    with (
        RealOpenSandboxServer(api_key=KEY, settings=settings) as real,
        mock_for_differential(real).server() as served,
    ):
        yield Side("real", real.url, KEY), Side("mock", served.url, KEY)


def main(argv: list[str] | None = None) -> int:
    """Run a campaign from the command line; exit 1 on any divergence."""
    parser = argparse.ArgumentParser(prog="python -m harness.differential.campaign", description=__doc__)
    parser.add_argument("--steps", type=int, default=2000, help="step budget (default 2000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"Hypothesis seed (default {DEFAULT_SEED})")
    parser.add_argument("--every", type=int, default=200, help="print a progress line every N steps")
    parser.add_argument("--show", type=int, default=50, help="divergent steps to print in full")
    parser.add_argument(
        "--limited",
        action="store_true",
        help="run both sides from the non-default configuration LIMITED (a maximum timeout, a narrow port range)",
    )
    args = parser.parse_args(argv)
    marks = [args.every]

    def progress(result: CampaignResult) -> None:
        if result.steps >= marks[0]:
            marks[0] = (result.steps // args.every + 1) * args.every
            print(
                f"  {result.steps:6d} steps, {result.programs} programs, {len(result.divergent)} divergent, "
                f"{result.explained_steps} explained, {result.seconds:.0f}s",
                flush=True,
            )

    print(f"differential campaign: {args.steps} steps, seed {args.seed}", flush=True)
    with sides(LIMITED if args.limited else None) as (real, mock), DifferentialRunner(real, mock) as runner:
        result = run_campaign(runner, steps=args.steps, seed_value=args.seed, progress=progress)
    if result.divergent:
        print(result.report(args.show))
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
