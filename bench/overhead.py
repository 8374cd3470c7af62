"""Benchmark per-request overhead: the mocks served by ``sandproof serve`` against a bare Starlette echo.

Both servers run in their own process on the same uvicorn setup; one keep-alive ``httpx`` client sends
sequential ``GET`` requests for one sandbox (TensorLake ``GET /sandboxes/{id}``, OpenSandbox
``GET /v1/sandboxes/{id}``) or for the echo's ``/sandboxes/{id}``. Phases alternate in short rounds so that
changing machine load weighs on both alike. Reported per provider: requests per second of each and their
ratio (goal >= 0.85), and the server's CPU time per request read from ``/proc`` (the cost the mock adds).
"""

from __future__ import annotations

import argparse
import sys
import time

import httpx
from support import API_KEY, Served, cpu_seconds, emit, start_echo, start_serve

GOAL = 0.85


def _phase(client: httpx.Client, path: str, seconds: float, pid: int) -> tuple[int, float, float]:
    """Send GETs for ``seconds``; return the count, the wall time and the server's CPU seconds."""
    cpu0, began, count = cpu_seconds(pid), time.perf_counter(), 0
    deadline = began + seconds
    while time.perf_counter() < deadline:
        for _ in range(20):
            client.get(path).raise_for_status()
        count += 20
    return count, time.perf_counter() - began, cpu_seconds(pid) - cpu0


def _create(served: Served) -> dict[str, tuple[str, dict[str, str]]]:
    """Create one sandbox on each mock; return per provider its GET path and headers."""
    tl_headers = {"authorization": f"Bearer {API_KEY}"}
    created = httpx.post(served.url("tensorlake") + "/sandboxes", json={}, headers=tl_headers)
    created.raise_for_status()
    osb_headers = {"OPEN-SANDBOX-API-KEY": API_KEY}
    body = {"image": {"uri": "bench"}, "entrypoint": ["sh"], "resourceLimits": {}}
    made = httpx.post(served.url("opensandbox") + "/v1/sandboxes", json=body, headers=osb_headers)
    made.raise_for_status()
    return {
        "tensorlake": (f"/sandboxes/{created.json()['sandbox_id']}", tl_headers),
        "opensandbox": (f"/v1/sandboxes/{made.json()['id']}", osb_headers),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(prog="bench/overhead.py")
    parser.add_argument("--smoke", action="store_true", help="a short run")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per server and provider (default 6)")
    args = parser.parse_args(argv)
    seconds = args.seconds or (0.6 if args.smoke else 6.0)
    rounds = 2 if args.smoke else 6
    figures: dict[str, float] = {}
    with start_serve() as served, start_echo() as echo:
        targets = _create(served)
        for provider, (path, headers) in targets.items():
            totals = {"mock": [0, 0.0, 0.0], "echo": [0, 0.0, 0.0]}
            with (
                httpx.Client(base_url=served.url(provider), headers=headers, trust_env=False) as mock_client,
                httpx.Client(base_url=echo.url("echo"), trust_env=False) as echo_client,
            ):
                for client, p in ((mock_client, path), (echo_client, path.removeprefix("/v1"))):
                    for _ in range(50):
                        client.get(p).raise_for_status()
                for _ in range(rounds):
                    for kind, client, p, pid in (
                        ("mock", mock_client, path, served.proc.pid),
                        ("echo", echo_client, path.removeprefix("/v1"), echo.proc.pid),
                    ):
                        count, wall, cpu = _phase(client, p, seconds / rounds, pid)
                        totals[kind][0] += count
                        totals[kind][1] += wall
                        totals[kind][2] += cpu
            mock_rps = totals["mock"][0] / totals["mock"][1]
            echo_rps = totals["echo"][0] / totals["echo"][1]
            mock_us = totals["mock"][2] / totals["mock"][0] * 1e6
            echo_us = totals["echo"][2] / totals["echo"][0] * 1e6
            print(
                f"{provider:<11} GET one sandbox: mock {mock_rps:.0f} req/s, {mock_us:.0f} us server CPU/request; "
                f"bare Starlette echo {echo_rps:.0f} req/s, {echo_us:.0f} us/request; "
                f"throughput ratio {mock_rps / echo_rps:.2f} (goal >= {GOAL})"
            )
            figures[f"{provider}_ratio"] = round(mock_rps / echo_rps, 3)
            figures[f"{provider}_mock_us"] = round(mock_us, 1)
            figures[f"{provider}_echo_us"] = round(echo_us, 1)
    emit("overhead", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
