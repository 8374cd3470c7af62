"""Benchmark start-up: how long ``sandproof serve`` takes until both of its ports answer HTTP.

Each run starts a fresh ``sandproof serve`` process and polls both ports every few milliseconds until each
answers a request; the baseline is one process serving two bare Starlette apps on the same uvicorn setup.
Runs alternate between the two, and the medians are reported (goal: serve within 300 ms), with the CPU
time each process had used by then (what the start-up costs whatever else the machine is doing).

The project's modules are byte-compiled first (``compileall``), as an installed package is: with
``PYTHONDONTWRITEBYTECODE`` set, a source checkout would otherwise recompile every module on every start.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import sys

from support import ROOT, emit, start_echo, start_serve

GOAL_MS = 300.0


def main(argv: list[str] | None = None) -> int:
    """Time ``runs`` start-ups of each and print the medians."""
    parser = argparse.ArgumentParser(prog="bench/startup.py")
    parser.add_argument("--smoke", action="store_true", help="a short run")
    parser.add_argument("--runs", type=int, default=None, help="start-ups of each (default 9; smoke 3)")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.smoke else 9)
    for package in ("mockserver", "sandproof", "contracts"):
        compileall.compile_dir(ROOT / package, quiet=1)
    serve_ms: list[float] = []
    bare_ms: list[float] = []
    serve_cpu: list[float] = []
    bare_cpu: list[float] = []
    for _ in range(runs):
        with start_serve() as served:
            serve_ms.append((served.answering - served.started) * 1000)
            serve_cpu.append(served.cpu_at_answer * 1000)
        with start_echo(("a", "b")) as bare:
            bare_ms.append((bare.answering - bare.started) * 1000)
            bare_cpu.append(bare.cpu_at_answer * 1000)
    serve_median, bare_median = statistics.median(serve_ms), statistics.median(bare_ms)
    print(
        f"start-up until both ports answer: sandproof serve median {serve_median:.0f} ms "
        f"(min {min(serve_ms):.0f}, max {max(serve_ms):.0f}; {statistics.median(serve_cpu):.0f} ms CPU); "
        f"two bare Starlette apps {bare_median:.0f} ms ({statistics.median(bare_cpu):.0f} ms CPU); "
        f"{runs} runs each (goal: serve <= {GOAL_MS:.0f} ms)"
    )
    emit(
        "startup",
        {
            "serve_ms": round(serve_median, 1),
            "bare_ms": round(bare_median, 1),
            "serve_cpu_ms": round(statistics.median(serve_cpu), 1),
            "bare_cpu_ms": round(statistics.median(bare_cpu), 1),
            "runs": runs,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
