"""Benchmark LIST latency against the population: 100 sandboxes next to 10,000, for each provider.

Each population is served by a child process (the mock populated through its model, then served on the
same uvicorn setup ``sandproof serve`` uses); one keep-alive ``httpx`` client times sequential LISTs and the
child's CPU time per LIST is read from ``/proc``. Reported per provider and query: the median latency at each
size and their ratio (goal <= 2 for OpenSandbox's page of 20). TensorLake's list has no paging (the SDK
expects the whole list), so its cost grows with the tenant's sandboxes; it is reported as measured.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from support import API_KEY, ROOT, child_env, cpu_seconds, emit, free_port, wait_answering

GOAL = 2.0
TEAMS = 10
QUERIES: dict[str, list[tuple[str, dict[str, str]]]] = {
    "opensandbox": [
        ("page 1 of 20", {}),
        ("page 1 of 20, state=Running", {"state": "Running"}),
        ("page 1 of 20, metadata team=t3", {"metadata": "team=t3"}),
        ("page 3 of 20", {"page": "3"}),
    ],
    "tensorlake": [("whole list (unpaged)", {})],
}


def populate(provider: str, count: int) -> Any:
    """Return a mock of ``provider`` holding ``count`` sandboxes of the bench key's tenant."""
    if provider == "tensorlake":
        from mockserver.tensorlake import TensorLakeMock
        from mockserver.tensorlake.model import lifecycle as tl_lifecycle
        from mockserver.tensorlake.model.auth import tenant_of

        tl = TensorLakeMock(seed=1, api_keys=None)
        call = tl_lifecycle.Call(tenant_of(f"Bearer {API_KEY}", "default", tl.model.keys))
        for i in range(count):
            tl_lifecycle.create(tl.model, call, {"name": f"sb{i}", "wait": False})
        return tl
    from mockserver.opensandbox import OpenSandboxMock
    from mockserver.opensandbox.model import lifecycle
    from mockserver.opensandbox.model.auth import ANY_KEY

    osb = OpenSandboxMock(seed=1, api_key=ANY_KEY)
    tenant = osb.config.access.tenant_of(API_KEY)
    for i in range(count):
        body = {
            "image": {"uri": "bench"},
            "entrypoint": ["sh"],
            "resourceLimits": {},
            "metadata": {"team": f"t{i % TEAMS}"},
        }
        lifecycle.create_sandbox(osb.state, tenant, body)
    return osb


def serve_population(provider: str, count: int, port: int) -> int:
    """Populate a mock and serve it on ``port`` until stdin closes."""
    from mockserver.asgi.server import MockServer

    mock = populate(provider, count)
    with MockServer(mock.app, port=port, timeout_keep_alive=60.0):
        print("ready", flush=True)
        sys.stdin.read()
    return 0


def _headers(provider: str) -> dict[str, str]:
    if provider == "tensorlake":
        return {"authorization": f"Bearer {API_KEY}"}
    return {"OPEN-SANDBOX-API-KEY": API_KEY}


def measure(provider: str, count: int, repeats: int) -> dict[str, tuple[float, float, int]]:
    """Serve ``count`` sandboxes; return per query the median latency (ms), CPU per LIST (ms) and items seen."""
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", provider, str(count), str(port)],
        cwd=ROOT,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {provider} population of {count} did not start")
        wait_answering([port], child, time.monotonic() + 30)
        path = "/sandboxes" if provider == "tensorlake" else "/v1/sandboxes"
        out: dict[str, tuple[float, float, int]] = {}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=_headers(provider), timeout=120) as client:
            for label, params in QUERIES[provider]:
                for _ in range(3):
                    client.get(path, params=params).raise_for_status()
                samples: list[float] = []
                cpu0 = cpu_seconds(child.pid)
                items = 0
                for _ in range(repeats):
                    began = time.perf_counter()
                    got = client.get(path, params=params)
                    got.raise_for_status()
                    samples.append(time.perf_counter() - began)
                    body = got.json()
                    items = len(body["sandboxes"] if provider == "tensorlake" else body["items"])
                cpu = (cpu_seconds(child.pid) - cpu0) / repeats
                out[label] = (statistics.median(samples) * 1000, cpu * 1000, items)
        return out
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(prog="bench/listing.py")
    parser.add_argument("--smoke", action="store_true", help="a short run (1,000 against 100)")
    parser.add_argument("--large", type=int, default=None, help="the large population (default 10,000)")
    parser.add_argument("--serve", nargs=3, metavar=("PROVIDER", "COUNT", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve_population(args.serve[0], int(args.serve[1]), int(args.serve[2]))
    small, large = 100, args.large or (1_000 if args.smoke else 10_000)
    figures: dict[str, Any] = {"small": small, "large": large}
    for provider in ("opensandbox", "tensorlake"):
        repeats_small = 10 if args.smoke else 60
        at_small = measure(provider, small, repeats_small)
        at_large = measure(provider, large, max(3, repeats_small // (10 if provider == "tensorlake" else 1)))
        for label, (ms_small, cpu_small, n_small) in at_small.items():
            ms_large, cpu_large, n_large = at_large[label]
            ratio = ms_large / ms_small
            goal = f" (goal <= {GOAL})" if provider == "opensandbox" else ""
            print(
                f"{provider:<11} LIST {label}: {ms_small:.2f} ms at {small} ({n_small} items), {ms_large:.2f} ms at "
                f"{large} ({n_large} items): ratio {ratio:.2f}{goal}; server CPU per LIST "
                f"{cpu_small:.2f} ms / {cpu_large:.2f} ms"
            )
            figures[f"{provider}:{label}"] = {
                "ms_small": round(ms_small, 3),
                "ms_large": round(ms_large, 3),
                "ratio": round(ratio, 2),
                "cpu_ms_small": round(cpu_small, 3),
                "cpu_ms_large": round(cpu_large, 3),
            }
    emit("listing", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
