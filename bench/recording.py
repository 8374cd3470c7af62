"""Benchmark the recording proxy: what ``sandproof record`` adds to each request.

The OpenSandbox mock and the recorder each run in their own process (as ``sandproof serve`` and
``sandproof record`` would); this process sends sequential keep-alive ``GET /v1/sandboxes/{id}`` requests
to the mock directly and through the recorder, in the same run, and prints both p50s and the difference.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
API_KEY = "bench-key"


def percentile(samples: list[float], q: float) -> float:
    """Return the ``q`` quantile (0-1) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@contextlib.contextmanager
def child(argv: list[str], ready: str) -> Iterator[str]:
    """Run a child process until the block ends; yield the first output line that contains ``ready``."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True, env=env, cwd=HERE.parent)
    try:
        assert proc.stdout is not None
        line = ""
        while ready not in line:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{argv} stopped before printing {ready!r}")
        yield line.strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def latencies(url: str, path: str, count: int) -> list[float]:
    """Return per-request seconds of sequential keep-alive GETs."""
    with httpx.Client(base_url=url, headers={"OPEN-SANDBOX-API-KEY": API_KEY}, trust_env=False) as client:
        for _ in range(20):
            client.get(path).raise_for_status()
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            client.get(path).raise_for_status()
            samples.append(time.perf_counter() - start)
        return samples


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(prog="bench/recording.py")
    parser.add_argument("--smoke", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    count = 200 if args.smoke else 2000
    with (
        child([sys.executable, str(HERE / "opensandbox.py"), "--serve", "mock"], "http://") as mock_url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        body = {"image": {"uri": "bench"}, "entrypoint": ["sh"], "resourceLimits": {}}
        made = httpx.post(f"{mock_url}/v1/sandboxes", json=body, headers={"OPEN-SANDBOX-API-KEY": API_KEY})
        path = f"/v1/sandboxes/{made.json()['id']}"
        port = _free_port()
        record = [sys.executable, "-m", "sandproof.cli", "record", "--upstream", mock_url, "--provider", "opensandbox"]
        record += ["--port", str(port), "--out", str(Path(tmp) / "bench.jsonl")]
        with child(record, "sandproof record:"):
            direct = latencies(mock_url, path, count)
            proxied = latencies(f"http://127.0.0.1:{port}", path, count)
            direct_again = latencies(mock_url, path, count)
        recorded = sum(1 for _ in (Path(tmp) / "bench.jsonl").open()) - 1
    base = percentile(direct + direct_again, 0.5) * 1000
    through = percentile(proxied, 0.5) * 1000
    print(
        f"recording proxy, GET /v1/sandboxes/{{id}} x{count}: direct p50={base:.2f} ms, through the recorder "
        f"p50={through:.2f} ms (p95 {percentile(proxied, 0.95) * 1000:.2f} ms): +{through - base:.2f} ms per request; "
        f"{recorded} exchanges written"
    )
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


if __name__ == "__main__":
    raise SystemExit(main())
