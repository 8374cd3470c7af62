"""Benchmark the OpenSandbox mock through the real SDK over loopback.

Reports p50/p95 of ``commands.run("echo hi")`` and lifecycle ``GET /v1/sandboxes/{id}`` requests per
second next to a bare Starlette endpoint served the same way, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import statistics
import sys
import time

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mockserver.core import MockServer
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.models import parse_create

API_KEY = "bench-key"


def percentile(samples: list[float], q: float) -> float:
    """Return the ``q`` quantile (0-1) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def command_latencies(url: str, mock: OpenSandboxMock, runs: int) -> list[float]:
    """Return per-call seconds of ``commands.run("echo hi")`` through the SDK."""
    sandbox_cls = importlib.import_module("opensandbox").Sandbox
    sandbox = await sandbox_cls.create("python:3.11", connection_config=mock.connection_config(url))
    try:
        for _ in range(5):
            await sandbox.commands.run("echo hi")
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            execution = await sandbox.commands.run("echo hi")
            samples.append(time.perf_counter() - start)
            if execution.exit_code != 0:
                raise RuntimeError(f"echo hi exited {execution.exit_code}")
        return samples
    finally:
        await sandbox.kill()
        await sandbox.close()


def requests_per_second(url: str, path: str, count: int, headers: dict[str, str]) -> float:
    """Return sequential keep-alive GETs per second against ``url + path``."""
    with httpx.Client(base_url=url, headers=headers) as client:
        for _ in range(10):
            client.get(path).raise_for_status()
        start = time.perf_counter()
        for _ in range(count):
            client.get(path).raise_for_status()
        return count / (time.perf_counter() - start)


def bare_app() -> Starlette:
    """Return a Starlette app with one JSON endpoint, the baseline."""

    async def sandbox(request: Request) -> JSONResponse:
        return JSONResponse({"id": request.path_params["sid"], "status": {"state": "Running"}})

    return Starlette(routes=[Route("/v1/sandboxes/{sid}", sandbox)])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(prog="bench/opensandbox.py")
    parser.add_argument("--smoke", action="store_true", help="a short run (under 5 s)")
    args = parser.parse_args(argv)
    # Run as a script, this file's folder leads sys.path and its name would shadow the SDK package.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    runs, gets = (40, 300) if args.smoke else (300, 3000)
    os.environ["OPENSANDBOX_DISABLE_METRICS"] = "1"
    mock = OpenSandboxMock(seed=1, api_key=API_KEY)
    with mock.server(timeout_keep_alive=30.0) as srv:
        samples = asyncio.run(command_latencies(srv.url, mock, runs))
        spec = parse_create({"image": {"uri": "bench"}, "entrypoint": ["sh"], "resourceLimits": {}})
        sandbox_id = mock.state.create("default", spec).id
        mock_rps = requests_per_second(srv.url, f"/v1/sandboxes/{sandbox_id}", gets, {"OPEN-SANDBOX-API-KEY": API_KEY})
    with MockServer(bare_app(), timeout_keep_alive=30.0) as bare:
        bare_rps = requests_per_second(bare.url, f"/v1/sandboxes/{sandbox_id}", gets, {})
    p50, p95 = percentile(samples, 0.5) * 1000, percentile(samples, 0.95) * 1000
    print(
        f"opensandbox commands.run('echo hi') via SDK over loopback: n={len(samples)} "
        f"p50={p50:.2f} ms p95={p95:.2f} ms mean={statistics.fmean(samples) * 1000:.2f} ms"
    )
    print(
        f"lifecycle GET /v1/sandboxes/{{id}}: {mock_rps:.0f} req/s (bare Starlette: {bare_rps:.0f} req/s, "
        f"ratio {mock_rps / bare_rps:.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
