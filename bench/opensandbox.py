"""Benchmark the OpenSandbox mock through the real SDK over loopback.

Reports p50/p95 of ``commands.run("echo hi")`` and lifecycle ``GET /v1/sandboxes/{id}`` requests per
second next to a bare Starlette endpoint served the same way, in the same run.

The exec path is compared with its floor: a bare Starlette app that answers ``POST /command`` with the very
bytes the mock's execd sent for ``echo hi`` (recorded in the same run, streamed as Server-Sent Events one frame
a chunk, as execd writes them), and the
three requests ``Sandbox.connect`` makes (both endpoints, execd's ping) as plainly as it can. Two ratios, goal
<= 1.2 each: the mock's ``POST /command`` p50 over loopback HTTP ÷ the same request to the floor, and the SDK's
``commands.run("echo hi")`` p50 against the mock ÷ the same SDK call against the floor (the SDK's own cost is
on both sides). The SDK against the mock ÷ a bare HTTP POST to the floor is printed too: that gap is the SDK's.
Both servers run at once, and the mock's and the floor's samples are taken in alternating rounds, so that a
change in the machine's speed during the run weighs on both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from support import emit

from mockserver.asgi.server import MockServer
from mockserver.opensandbox import OpenSandboxMock

API_KEY = "bench-key"
EXECD_PORT = 44772
GOAL = 1.2
#: The recorded execd answer the bare floor replays (base64 of the SSE body), passed to its process.
FLOOR_BODY_ENV = "SANDPROOF_BENCH_SSE_BODY"


def percentile(samples: list[float], q: float) -> float:
    """Return the ``q`` quantile (0-1) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def command_latencies(url: str, runs: int, sandbox_id: str) -> list[float]:
    """Return per-call seconds of ``commands.run("echo hi")`` through the SDK, connected to ``sandbox_id``."""
    sandbox_cls = importlib.import_module("opensandbox").Sandbox
    config_cls = importlib.import_module("opensandbox.config").ConnectionConfig
    config = config_cls(domain=url.removeprefix("http://"), api_key=API_KEY, protocol="http")
    sandbox = await sandbox_cls.connect(sandbox_id, connection_config=config)
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
    """Return the baseline: a Starlette app answering the few requests the benchmark sends, as plainly as it can."""

    async def sandbox(request: Request) -> JSONResponse:
        return JSONResponse({"id": request.path_params["sid"], "status": {"state": "Running"}})

    async def endpoint(request: Request) -> JSONResponse:
        sid, port = request.path_params["sid"], request.path_params["port"]
        return JSONResponse({"endpoint": f"{request.headers['host']}/direct/{sid}/{port}"})

    async def ping(request: Request) -> Response:
        return Response(status_code=200)

    recorded = base64.b64decode(os.environ.get(FLOOR_BODY_ENV, ""))

    # One chunk per SSE frame, as execd writes them (a single chunk would spare the floor two writes).
    frames = [frame + b"\n\n" for frame in recorded.split(b"\n\n") if frame]

    async def command(request: Request) -> Response:
        await request.body()

        async def events() -> AsyncIterator[bytes]:
            for frame in frames:
                yield frame

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/v1/sandboxes/{sid}", sandbox),
            Route("/v1/sandboxes/{sid}/endpoints/{port}", endpoint),
            Route("/direct/{sid}/{port}/ping", ping),
            Route("/direct/{sid}/{port}/command", command, methods=["POST"]),
        ]
    )


def command_samples(url: str, sandbox_id: str, runs: int) -> tuple[list[float], bytes]:
    """Return the seconds of ``runs`` ``POST /command {"command": "echo hi"}`` over loopback HTTP, and the last body."""
    path = f"/direct/{sandbox_id}/{EXECD_PORT}/command"
    samples, body = [], b""
    with httpx.Client(base_url=url, headers={"OPEN-SANDBOX-API-KEY": API_KEY}, trust_env=False) as client:
        for n in range(runs + 5):
            began = time.perf_counter()
            response = client.post(path, json={"command": "echo hi"})
            body = response.content
            if n >= 5:
                samples.append(time.perf_counter() - began)
            if response.status_code != 200 or b"hi" not in body:
                raise RuntimeError(f"POST /command answered {response.status_code}: {body[:200]!r}")
    return samples, body


@contextlib.contextmanager
def served(kind: str, body: bytes = b"") -> Iterator[str]:
    """Serve the mock (``kind="mock"``) or the bare app in a child process; yield its URL.

    A separate process keeps the SDK's event loop and the server from sharing one interpreter lock,
    which is how a deployed mock runs.
    """
    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve", kind],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
        env={**os.environ, FLOOR_BODY_ENV: base64.b64encode(body).decode()},
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
    runs, gets, rounds = (40, 300, 2) if args.smoke else (300, 3000, 6)
    os.environ["OPENSANDBOX_DISABLE_METRICS"] = "1"
    samples: list[float] = []
    sdk_floor_samples: list[float] = []
    mock_commands: list[float] = []
    floor_commands: list[float] = []
    with served("mock") as url:
        sandbox_id = create_sandbox(url)
        mock_rps = requests_per_second(url, f"/v1/sandboxes/{sandbox_id}", gets, {"OPEN-SANDBOX-API-KEY": API_KEY})
        _, recorded = command_samples(url, sandbox_id, 1)
        with served("bare", recorded) as bare_url:
            bare_rps = requests_per_second(bare_url, f"/v1/sandboxes/{sandbox_id}", gets, {})
            for _ in range(rounds):  # alternating, so a slower or faster spell of the machine hits both sides
                mock_commands += command_samples(url, sandbox_id, runs // rounds)[0]
                floor_commands += command_samples(bare_url, sandbox_id, runs // rounds)[0]
                samples += asyncio.run(command_latencies(url, runs // rounds, sandbox_id))
                sdk_floor_samples += asyncio.run(command_latencies(bare_url, runs // rounds, sandbox_id))
    mock_command, floor = percentile(mock_commands, 0.5), percentile(floor_commands, 0.5)
    sdk_floor = percentile(sdk_floor_samples, 0.5)
    p50, p95 = percentile(samples, 0.5) * 1000, percentile(samples, 0.95) * 1000
    print(
        f"opensandbox commands.run('echo hi') via SDK over loopback: n={len(samples)} "
        f"p50={p50:.2f} ms p95={p95:.2f} ms mean={statistics.fmean(samples) * 1000:.2f} ms"
    )
    print(
        f"lifecycle GET /v1/sandboxes/{{id}}: {mock_rps:.0f} req/s (bare Starlette: {bare_rps:.0f} req/s, "
        f"ratio {mock_rps / bare_rps:.2f})"
    )
    asgi_ratio, sdk_ratio = mock_command / floor, percentile(samples, 0.5) / sdk_floor
    sdk_over_http = percentile(samples, 0.5) / floor
    print(
        f"exec path p50: mock POST /command {mock_command * 1000:.2f} ms vs floor {floor * 1000:.2f} ms (ratio "
        f"{asgi_ratio:.2f}); SDK commands.run {p50:.2f} ms vs the SDK on the floor {sdk_floor * 1000:.2f} ms (ratio "
        f"{sdk_ratio:.2f}); goal <= {GOAL} each. The SDK on the mock ÷ a bare POST to the floor: {sdk_over_http:.2f}"
    )
    emit(
        "opensandbox",
        {
            "asgi_ratio": round(asgi_ratio, 3),
            "sdk_ratio": round(sdk_ratio, 3),
            "sdk_over_http": round(sdk_over_http, 3),
            "floor_ms": round(floor * 1000, 3),
            "sdk_floor_ms": round(sdk_floor * 1000, 3),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
