"""Run every benchmark under ``bench/`` in turn, then print the headline figures against their goals.

``--smoke`` is a quick pass (it runs in ``make test``): small populations, short phases, three kills, and the
contract suite's duration read from the last report instead of a fresh run. Each benchmark prints one
``@figures`` line; the summary at the end is built from those. Ratios are measured within one run, so the
machine's load weighs on both sides alike; nothing here asserts a wall-clock time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCHES = (
    "policy.py",
    "tensorlake.py",
    "opensandbox.py",
    "overhead.py",
    "listing.py",
    "startup.py",
    "crash.py",
    "linux_runtime.py",
    "suite.py",
)
FIGURES = "@figures "


def _run(script: Path, args: Sequence[str]) -> tuple[int, list[dict[str, Any]]]:
    """Run one benchmark, echoing its output; return its exit status and the figures it printed."""
    figures: list[dict[str, Any]] = []
    proc = subprocess.Popen(
        [sys.executable, str(script), *args], cwd=script.parent.parent, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(FIGURES):
            figures.append(json.loads(line[len(FIGURES) :]))
        else:
            print(line, end="", flush=True)
    return proc.wait(), figures


def summary(found: dict[str, dict[str, Any]]) -> list[str]:
    """Return the acceptance lines: each headline figure next to its goal."""
    lines = []
    over = found.get("overhead")
    if over:
        for provider in ("tensorlake", "opensandbox"):
            lines.append(
                f"throughput mock/echo ({provider} GET): {over[f'{provider}_ratio']:.2f} (goal >= 0.85); server CPU "
                f"{over[f'{provider}_mock_us']:.0f} us/request against {over[f'{provider}_echo_us']:.0f} us for the echo"
            )
    listing = found.get("listing")
    if listing:
        large, small = listing["large"], listing["small"]
        for key, value in listing.items():
            if isinstance(value, dict):
                goal = " (goal <= 2)" if key.startswith("opensandbox:page 1 of 20") else ""
                lines.append(
                    f"LIST {key}: {value['ms_large']:.2f} ms at {large:,} / {value['ms_small']:.2f} ms at {small:,} "
                    f"= {value['ratio']:.2f}{goal}"
                )
    crash = found.get("crash")
    if crash:
        lines.append(
            f"crash test: {crash['rounds']} SIGKILLs, {crash['acknowledged']} acknowledged writes: lost {crash['lost']}, "
            f"phantom {crash['phantom']} (goal 0 and 0); stray files: {crash['stray_files'] or 'none'}"
        )
    start = found.get("startup")
    if start:
        lines.append(
            f"start-up (both ports answer): {start['serve_ms']:.0f} ms, {start['serve_cpu_ms']:.0f} ms CPU "
            f"(two bare apps: {start['bare_ms']:.0f} ms, {start['bare_cpu_ms']:.0f} ms CPU; goal <= 300 ms)"
        )
    linux = found.get("linux_runtime")
    if linux and linux.get("skipped"):
        lines.append(f"linux runtime: skipped ({linux['skipped']})")
    elif linux:
        apis = ", ".join(
            f"{p} {linux[f'{p}_linux_p50']:.1f} ms (emulator {linux[f'{p}_emulator_p50']:.1f} ms)"
            for p in ("tensorlake", "opensandbox")
        )
        lines.append(
            f"create -> echo -> delete p50: linux runtime {linux['linux_p50']:.1f} ms, emulator "
            f"{linux['emulator_p50']:.2f} ms (goal linux < 60 ms); through the APIs: {apis}"
        )
    suite = found.get("suite")
    if suite and not suite.get("skipped"):
        lines.append(
            f"contract suite: {suite['seconds']:.1f} s, {suite['examples']:,} examples ({suite['source']}; goal < 90 s)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run each benchmark script in its own process; return non-zero if one failed."""
    args = list(sys.argv[1:] if argv is None else argv)
    here = Path(__file__).resolve().parent
    failed: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    for name in BENCHES:
        script = here / name
        if not script.exists():
            print(f"== {name}: missing, skipped", flush=True)
            continue
        print(f"== {name} {' '.join(args)}", flush=True)
        started = time.monotonic()
        code, figures = _run(script, args)
        print(f"== {name}: exit {code} in {time.monotonic() - started:.1f} s", flush=True)
        for item in figures:
            found[str(item.pop("bench"))] = item
        if code != 0:
            failed.append(name)
    print("== summary" + (" (smoke: small sizes, short runs)" if "--smoke" in args else ""))
    for line in summary(found):
        print(f"   {line}")
    if failed:
        print(f"failed: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
