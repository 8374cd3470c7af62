"""Benchmark the contract suite: how long ``sandproof check --target mock`` takes, and how many examples it runs.

A full run times a fresh ``sandproof check --target mock -q`` (goal: under 60 s wall on a quiet 2-core machine; its CPU seconds are printed too) and reads its
examples and pace from the report. ``--smoke`` does not rerun the suite: it reads the last report under
``reports/contracts`` (``make test`` writes it just before the bench smoke run) and says so, or skips.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from support import ROOT, child_env, emit

GOAL_S = 60.0


def _read(report: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((report / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return data


def _children_cpu() -> float:
    """Return the user plus system CPU seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    """Run (or read) the contract suite's timing and print it."""
    parser = argparse.ArgumentParser(prog="bench/suite.py")
    parser.add_argument("--smoke", action="store_true", help="read the last report instead of running the suite")
    args = parser.parse_args(argv)
    if args.smoke:
        found = _read(ROOT / "reports" / "contracts")
        if found is None:
            print("contract suite: no report under reports/contracts (smoke runs do not rerun the suite); skipped")
            emit("suite", {"skipped": True})
            return 0
        source, wall = "last report (reports/contracts)", float(found.get("duration_seconds", 0.0))
        cpu = None
    else:
        with tempfile.TemporaryDirectory(prefix="sandproof-suite-") as tmp:
            command = [sys.executable, "-m", "sandproof.cli", "check", "--target", "mock", "-q", "--report", tmp]
            began, cpu_before = time.monotonic(), _children_cpu()
            done = subprocess.run(command, cwd=ROOT, env=child_env(), capture_output=True, text=True, check=False)
            wall, cpu = time.monotonic() - began, _children_cpu() - cpu_before
            if done.returncode != 0:
                print(done.stdout[-3000:], done.stderr[-2000:])
                raise SystemExit(f"the contract suite failed (exit {done.returncode})")
            found = _read(Path(tmp)) or {}
        source = "fresh run"
    examples = int(found.get("examples", 0))
    totals = found.get("totals", {})
    cpu_text = "" if cpu is None else f" ({cpu:.1f} s CPU)"
    print(
        f"contract suite (sandproof check --target mock, {source}): {wall:.1f} s wall{cpu_text}, {examples:,} Hypothesis "
        f"examples, {totals.get('passed', '?')} passed / {totals.get('failed', '?')} failed (goal < {GOAL_S:.0f} s)"
    )
    emit(
        "suite",
        {
            "seconds": round(wall, 1),
            "cpu_seconds": None if cpu is None else round(cpu, 1),
            "examples": examples,
            "source": source,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
