"""Benchmark the OpenSandbox mock through the real SDK over loopback.

Reports p50/p95 of ``commands.run("echo hi")`` and lifecycle ``GET /v1/sandboxes/{id}`` requests per
second next to a bare Starlette endpoint served the same way, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mockserver.asgi.server import MockServer
from mockserver.opensandbox import OpenSandboxMock

API_KEY = "bench-key"


def percentile(samples: list[float], q: float) -> float:
    """Return the ``q`` quantile (0-1) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def command_latencies(url: str, runs: int) -> list[float]:
    """Return per-call seconds of ``commands.run("echo hi")`` through the SDK."""
    sandbox_cls = importlib.import_module("opensandbox").Sandbox
    config_cls = importlib.import_module("opensandbox.config").ConnectionConfig
    config = config_cls(domain=url.removeprefix("http://"), api_key=API_KEY, protocol="http")
    sandbox = await sandbox_cls.create("python:3.11", connection_config=config)
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


@contextlib.contextmanager
def served(kind: str) -> Iterator[str]:
    """Serve the mock (``kind="mock"``) or the bare app in a child process; yield its URL.

    A separate process keeps the SDK's event loop and the server from sharing one interpreter lock,
    which is how a deployed mock runs.
    """
    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve", kind],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the {kind} server did not start")
        yield url
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)


def serve_forever(kind: str) -> int:
    """Serve ``kind`` on a free loopback port, print the URL, and stop when stdin closes."""
    app = OpenSandboxMock(seed=1, api_key=API_KEY).app if kind == "mock" else bare_app()
    with MockServer(app, timeout_keep_alive=30.0) as server:
        print(server.url, flush=True)
        sys.stdin.read()
    return 0


def create_sandbox(url: str) -> str:
    """Create a sandbox over HTTP and return its id."""
    body = {"image": {"uri": "bench"}, "entrypoint": ["sh"], "resourceLimits": {}}
    response = httpx.post(f"{url}/v1/sandboxes", json=body, headers={"OPEN-SANDBOX-API-KEY": API_KEY})
    response.raise_for_status()
    return str(response.json()["id"])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(prog="bench/opensandbox.py")
    parser.add_argument("--smoke", action="store_true", help="a short run (under 5 s)")
    parser.add_argument("--serve", choices=["mock", "bare"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # Run as a script, this file's folder leads sys.path and its name would shadow the SDK package.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    if args.serve:
        return serve_forever(args.serve)
    runs, gets = (40, 300) if args.smoke else (300, 3000)
    os.environ["OPENSANDBOX_DISABLE_METRICS"] = "1"
    with served("mock") as url:
        samples = asyncio.run(command_latencies(url, runs))
        sandbox_id = create_sandbox(url)
        mock_rps = requests_per_second(url, f"/v1/sandboxes/{sandbox_id}", gets, {"OPEN-SANDBOX-API-KEY": API_KEY})
    with served("bare") as url:
        bare_rps = requests_per_second(url, f"/v1/sandboxes/{sandbox_id}", gets, {})
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
