"""Benchmark what durability costs: creates per second with ``--state-file`` against in memory, the fsyncs per
acknowledged write, and which share of a request's CPU the commit, the journal, the fault middleware and the
wire cache take.

* **creates/s**: two ``sandproof serve`` processes, one in memory and one with ``--state-file``; one keep-alive
  client sends TensorLake ``POST /sandboxes`` to each in alternating short rounds (so the machine's load weighs
  on both alike). Goal: durable ÷ in-memory >= 0.7. Every acknowledged create is committed before its response.
* **fsyncs per acknowledged write**: ``strace`` counts the durable server's ``fsync``/``fdatasync`` calls during
  a burst of creates (skipped, with the reason, where ``strace`` cannot attach).
* **CPU breakdown**: in one process, the TensorLake create -> PATCH -> GET -> DELETE cycle is sent straight to the
  ASGI app (no socket) in four builds: the durable app as served, then without the commit, without the journal,
  without the fault middleware; each part's share is the time it adds per request, measured in alternating
  rounds. The wire cache's share is the time spent in :mod:`mockserver.core.wire` (encoding bodies, splicing
  cached ones), read with ``cProfile``.

Nothing is asserted; ratios are measured within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from support import API_KEY, cpu_seconds, emit, start_serve

from mockserver.asgi.commit import CommitBeforeSend
from mockserver.asgi.middleware import FaultMiddleware, JournalMiddleware
from mockserver.state_db import StateStore
from mockserver.tensorlake import TensorLakeMock

GOAL = 0.7
HEADERS = {"authorization": f"Bearer {API_KEY}"}
POLICY = {"allow_internet_access": False, "allow_out": ["api.example.com"], "deny_out": []}


def _creates(client: httpx.Client, seconds: float, pid: int) -> tuple[int, float, float]:
    """Send creates for ``seconds``; return the count, the wall time and the server's CPU seconds."""
    cpu0, began, count = cpu_seconds(pid), time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        for _ in range(10):
            client.post("/sandboxes", json={}).raise_for_status()
        count += 10
    return count, time.perf_counter() - began, cpu_seconds(pid) - cpu0


def fsyncs_per_write(url: str, pid: int, writes: int, settle: float = 0.5) -> tuple[float | None, str]:
    """Count the server's fsync/fdatasync calls over ``writes`` creates with strace; (None, reason) if it cannot."""
    strace = shutil.which("strace")
    if strace is None:
        return None, "strace is not installed"
    with tempfile.TemporaryDirectory(prefix="sandproof-fsync-") as tmp:
        out = Path(tmp) / "trace"
        tids = [arg for tid in sorted(Path(f"/proc/{pid}/task").iterdir()) for arg in ("-p", tid.name)]
        tracer = subprocess.Popen(
            [strace, "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(out), *tids],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(settle)  # let strace attach to every thread
        if tracer.poll() is not None:
            assert tracer.stderr is not None
            return None, f"strace could not attach: {tracer.stderr.read().strip()[:200]}"
        with httpx.Client(base_url=url, headers=HEADERS, trust_env=False) as client:
            for _ in range(writes):
                client.post("/sandboxes", json={}).raise_for_status()
        tracer.terminate()
        tracer.wait(timeout=10)
        calls = sum(1 for line in out.read_text().splitlines() if "fsync(" in line or "fdatasync(" in line)
    return calls / writes, f"{calls} calls over {writes} acknowledged creates"


# --- the CPU breakdown, in process --------------------------------------------------------------------------


async def _call(app: Any, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    """Send one request straight to an ASGI app; return the status and the body."""
    payload = b"" if body is None else json.dumps(body).encode()
    headers = [(b"authorization", f"Bearer {API_KEY}".encode()), (b"host", b"127.0.0.1")]
    if body is not None:
        headers.append((b"content-type", b"application/json"))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8911),
    }
    sent = False
    status, chunks = 0, []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": payload, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


async def _cycles(app: Any, count: int) -> None:
    """Run ``count`` create -> PATCH -> GET -> DELETE cycles on ``app``."""
    for _ in range(count):
        status, body = await _call(app, "POST", "/sandboxes", {})
        if status != 200:
            raise RuntimeError(f"create answered {status}: {body[:200]!r}")
        sid = json.loads(body)["sandbox_id"]
        for method, path, payload in (
            ("PATCH", f"/sandboxes/{sid}", {"network": POLICY}),
            ("GET", f"/sandboxes/{sid}", None),
            ("DELETE", f"/sandboxes/{sid}", None),
        ):
            status, body = await _call(app, method, path, payload)
            if status >= 300:
                raise RuntimeError(f"{method} {path} answered {status}: {body[:200]!r}")


def _builds(mock: TensorLakeMock, store: StateStore) -> dict[str, Any]:
    """Return the app as served with a state file, and the same without each part."""
    mock.wrap = lambda app: app  # type: ignore[method-assign]  # the app as the mock builds it, unwrapped
    try:
        inner = mock.build_app()
    finally:
        del mock.wrap

    def journal(app: Any) -> Any:
        return JournalMiddleware(app, mock.journal, mock.clock, mock.provider)

    def durable(app: Any) -> Any:
        return CommitBeforeSend(app, store.commit, mock.touched_by_request)

    faulted = FaultMiddleware(inner, mock.faults)
    return {
        "served": durable(journal(mock.gate(faulted))),
        "no commit": journal(mock.gate(faulted)),
        "no journal": durable(mock.gate(faulted)),
        "no faults": durable(journal(mock.gate(inner))),
    }


def breakdown(cycles: int, rounds: int) -> tuple[dict[str, float], float, float]:
    """Return µs per request each part adds, the served app's µs per request, and the wire cache's µs."""
    with tempfile.TemporaryDirectory(prefix="sandproof-breakdown-") as tmp:
        mock = TensorLakeMock(seed=1, api_keys=[API_KEY])
        store = StateStore(Path(tmp) / "state.db", {"tensorlake": mock})
        store.open()
        try:
            builds = _builds(mock, store)
            loop = asyncio.new_event_loop()
            for app in builds.values():
                loop.run_until_complete(_cycles(app, 20))
            spent: dict[str, list[float]] = {name: [] for name in builds}
            for _ in range(rounds):
                for name, app in builds.items():
                    began = time.process_time()
                    loop.run_until_complete(_cycles(app, cycles))
                    spent[name].append((time.process_time() - began) / (cycles * 4) * 1e6)
            profile = cProfile.Profile()
            profile.enable()
            loop.run_until_complete(_cycles(builds["served"], cycles))
            profile.disable()
            loop.close()
        finally:
            store.close()
    per_request = {name: statistics.median(values) for name, values in spent.items()}
    served = per_request.pop("served")
    parts = {f"the {name.removeprefix('no ')}": max(0.0, served - value) for name, value in per_request.items()}
    stats = pstats.Stats(profile)
    total = wire = 0.0
    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        if function == "_cycles":
            total = max(total, row[3])
        if filename.endswith("mockserver/core/wire.py") and function in ("encode_json", "to_bytes"):
            wire += row[3]
    wire_us = served * wire / total if total else 0.0
    return parts, served, wire_us


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser(prog="bench/durability.py")
    parser.add_argument("--smoke", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    seconds, rounds = (0.3, 2) if args.smoke else (6.0, 6)
    with tempfile.TemporaryDirectory(prefix="sandproof-durable-") as tmp:
        state = str(Path(tmp) / "state.db")
        with start_serve() as memory, start_serve(["--state-file", state]) as durable:
            totals = {"memory": [0, 0.0, 0.0], "durable": [0, 0.0, 0.0]}
            servers = {"memory": memory, "durable": durable}
            clients = {
                name: httpx.Client(base_url=s.url("tensorlake"), headers=HEADERS, trust_env=False)
                for name, s in servers.items()
            }
            try:
                for client in clients.values():
                    for _ in range(30):
                        client.post("/sandboxes", json={}).raise_for_status()
                for _ in range(rounds):
                    for name, client in clients.items():
                        count, wall, cpu = _creates(client, seconds / rounds, servers[name].proc.pid)
                        for index, value in enumerate((count, wall, cpu)):
                            totals[name][index] += value
            finally:
                for client in clients.values():
                    client.close()
            per_fsync, how = fsyncs_per_write(
                durable.url("tensorlake"), durable.proc.pid, 20 if args.smoke else 300, 0.2 if args.smoke else 0.5
            )
    rates = {name: count / wall for name, (count, wall, _) in totals.items()}
    cpu_us = {name: cpu / count * 1e6 for name, (count, _, cpu) in totals.items()}
    ratio = rates["durable"] / rates["memory"]
    print(
        f"creates/s: --state-file {rates['durable']:.0f} ({cpu_us['durable']:.0f} us server CPU each), in memory "
        f"{rates['memory']:.0f} ({cpu_us['memory']:.0f} us); ratio {ratio:.2f} (goal >= {GOAL})"
    )
    fsync_text = f"{per_fsync:.2f} ({how})" if per_fsync is not None else f"not measured: {how}"
    print(f"fsyncs per acknowledged write: {fsync_text}; SQLite WAL, synchronous=NORMAL, committed before the answer")
    parts, served, wire_us = breakdown(20 if args.smoke else 300, 2 if args.smoke else 7)
    shares = "; ".join(f"{name} {us:.0f} us ({us / served:.0%})" for name, us in parts.items())
    print(
        f"CPU per request, TensorLake create/PATCH/GET/DELETE sent straight to the durable app: {served:.0f} us; "
        f"{shares}; the wire cache {wire_us:.0f} us ({wire_us / served:.0%}, cProfile share)"
    )
    emit(
        "durability",
        {
            "ratio": round(ratio, 3),
            "durable_per_s": round(rates["durable"], 1),
            "memory_per_s": round(rates["memory"], 1),
            "fsyncs_per_write": None if per_fsync is None else round(per_fsync, 3),
            "fsync_note": how,
            "request_us": round(served, 1),
            "parts_us": {name: round(us, 1) for name, us in {**parts, "the wire cache": wire_us}.items()},
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
