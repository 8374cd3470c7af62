"""Benchmark start-up: how long ``sandproof serve`` takes until both of its ports answer HTTP.

Each run starts a fresh ``sandproof serve`` process and polls both ports every few milliseconds until each
answers a request; the baseline is one process serving two bare Starlette apps on the same uvicorn setup.
Runs alternate between the two, and the medians are reported (goal: serve within 300 ms, and at most 1.2 times
the bare apps' CPU), with the CPU time each process had used by then (what the start-up costs whatever else the
machine is doing).

The in-process constructor is timed too: in a fresh interpreter, with the modules already imported, how long
``TensorLakeMock()`` and its ASGI app take to build (what a test fixture pays before it can serve), next to a
bare Starlette app with one route built the same way (goal: 5 ms).

The project's modules are byte-compiled first (``compileall``), as an installed package is: with
``PYTHONDONTWRITEBYTECODE`` set, a source checkout would otherwise recompile every module on every start.
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys

from support import ROOT, child_env, emit, start_echo, start_serve

GOAL_MS = 300.0
CPU_GOAL = 1.2
CONSTRUCTOR_GOAL_MS = 5.0

#: Run in a fresh interpreter: import, then time the first build of the mock and its app (and of a bare app).
_CONSTRUCT = """
import json, sys, time
kind = sys.argv[1]
if kind == "mock":
    from mockserver.tensorlake import TensorLakeMock
    TensorLakeMock  # the lazy name resolved: the module is imported before the clock starts
    began = time.perf_counter()
    TensorLakeMock().app
else:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def ok(request):
        return PlainTextResponse("ok")

    began = time.perf_counter()
    app = Starlette(routes=[Route("/", ok)])
    app.build_middleware_stack()
print(json.dumps((time.perf_counter() - began) * 1000))
"""


def constructor_ms(kind: str) -> float:
    """Return the milliseconds the first build of a ``kind`` ("mock" or "bare") app took in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _CONSTRUCT, kind], cwd=ROOT, env=child_env(), capture_output=True, text=True, check=True
    )
    return float(json.loads(done.stdout))


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
    built: dict[str, list[float]] = {"mock": [], "bare": []}
    for _ in range(1 if args.smoke else runs):
        for kind, samples in built.items():
            samples.append(constructor_ms(kind))
    serve_median, bare_median = statistics.median(serve_ms), statistics.median(bare_ms)
    cpu_ratio = statistics.median(serve_cpu) / statistics.median(bare_cpu)
    print(
        f"start-up until both ports answer: sandproof serve median {serve_median:.0f} ms "
        f"(min {min(serve_ms):.0f}, max {max(serve_ms):.0f}; {statistics.median(serve_cpu):.0f} ms CPU); "
        f"two bare Starlette apps {bare_median:.0f} ms ({statistics.median(bare_cpu):.0f} ms CPU); "
        f"{runs} runs each (goal: serve <= {GOAL_MS:.0f} ms, CPU ratio {cpu_ratio:.2f} <= {CPU_GOAL})"
    )
    mock_ms, plain_ms = statistics.median(built["mock"]), statistics.median(built["bare"])
    print(
        f"in-process TensorLakeMock() and its app, first build in a fresh process: median {mock_ms:.1f} ms "
        f"(bare Starlette app {plain_ms:.1f} ms; {len(built['mock'])} processes each; goal <= {CONSTRUCTOR_GOAL_MS:.0f} ms)"
    )
    emit(
        "startup",
        {
            "serve_ms": round(serve_median, 1),
            "bare_ms": round(bare_median, 1),
            "serve_cpu_ms": round(statistics.median(serve_cpu), 1),
            "bare_cpu_ms": round(statistics.median(bare_cpu), 1),
            "constructor_ms": round(mock_ms, 2),
            "bare_constructor_ms": round(plain_ms, 2),
            "runs": runs,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
