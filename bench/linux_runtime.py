"""Benchmark sandbox create -> ``echo hi`` -> delete on the linux runtime next to the emulator, in one run.

Two levels, each on both runtimes:

* the runtime itself: the emulator cycle is what a mock sandbox costs (an in-memory file system and a
  command emulator); the linux cycle makes a network namespace with its veth link and firewall, a cgroup, a
  state folder and a bubblewrap sandbox whose init runs ``echo hi``, then tears it all down, with the
  runtime's default warm pool (one sandbox started ahead, refilled while the loop runs) and without it;
* the provider APIs over loopback HTTP: TensorLake ``POST /sandboxes``, ``POST /api/v1/processes/run``
  ``{"command": "echo", "args": ["hi"]}`` (SSE, through the ingress) and ``DELETE``; OpenSandbox
  ``POST /v1/sandboxes``, execd's ``POST /command {"command": "echo hi"}`` (SSE, direct endpoint) and
  ``DELETE``, each on a mock built with ``runtime="emulator"`` and ``runtime="linux"``.

* the runtime as sandboxes accumulate: the same linux cycle while 1, 10 and 50 sandboxes are live (the
  cycling one and 0, 9 or 49 others held open); the goal is flat, the slowest p50 within 1.5 times the fastest
  (``--smoke``: 1 and 10 only).

Prints p50/p95 in milliseconds and the ratios; the target for linux is a p50 under 60 ms. On a machine
where the linux runtime cannot run it prints the reason and the emulator figures only. No figure is
asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from support import emit

from mockserver.asgi.server import MockServer
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.requirements import check_requirements
from mockserver.opensandbox import OpenSandboxMock
from mockserver.sandbox import CommandEmulator, FileSystem
from mockserver.service import HttpMock
from mockserver.tensorlake import TensorLakeMock

TARGET_MS = 60.0
LIVE_COUNTS = (1, 10, 50)
FLAT_GOAL = 1.5


def percentile(samples: list[float], q: float) -> float:
    """Return the ``q`` quantile (0-1) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def cycles(run_once: Callable[[], None], runs: int, warmup: int = 3) -> list[float]:
    """Return the seconds each of ``runs`` calls of ``run_once`` took (after ``warmup`` untimed ones)."""
    for _ in range(warmup):
        run_once()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run_once()
        samples.append(time.perf_counter() - start)
    return samples


def emulator_cycle() -> None:
    """Create an emulated sandbox, run ``echo hi``, drop it."""
    result = CommandEmulator(FileSystem()).run_to_completion("echo hi")
    if result.stdout != b"hi\n":
        raise RuntimeError(f"emulator echo printed {result.stdout!r}")


def linux_cycle(runtime: LinuxRuntime) -> Callable[[], None]:
    """Return the create -> echo -> delete cycle on ``runtime``."""

    def once() -> None:
        sandbox = runtime.create_sandbox()
        try:
            result = sandbox.run(["echo", "hi"])
            if result.stdout != b"hi\n":
                raise RuntimeError(f"linux echo printed {result.stdout!r}")
        finally:
            sandbox.destroy()

    return once


OPENSANDBOX_BODY = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}


def tensorlake_cycle(http: httpx.Client) -> Callable[[], None]:
    """Return create -> run ``echo hi`` -> delete through the TensorLake lifecycle and management APIs."""

    def once() -> None:
        ident = http.post("/sandboxes", json={}).json()["sandbox_id"]
        run = http.post(
            "/api/v1/processes/run",
            json={"command": "echo", "args": ["hi"]},
            headers={"host": f"{ident}.sandbox.localhost", "accept": "text/event-stream"},
        )
        if '"line": "hi"' not in run.text or '"exit_code": 0' not in run.text:
            raise RuntimeError(f"tensorlake echo answered {run.text!r}")
        http.delete(f"/sandboxes/{ident}").raise_for_status()

    return once


def opensandbox_cycle(http: httpx.Client) -> Callable[[], None]:
    """Return create -> ``echo hi`` -> delete through the OpenSandbox lifecycle API and execd."""

    def once() -> None:
        ident = http.post("/v1/sandboxes", json=OPENSANDBOX_BODY).json()["id"]
        run = http.post(f"/direct/{ident}/44772/command", json={"command": "echo hi"})
        if '"text":"hi\\n"' not in run.text or "execution_complete" not in run.text:
            raise RuntimeError(f"opensandbox echo answered {run.text!r}")
        http.delete(f"/v1/sandboxes/{ident}").raise_for_status()

    return once


def provider_cycles(mock: HttpMock, runs: int) -> list[float]:
    """Serve ``mock`` on loopback and time its provider's create -> echo -> delete cycle."""
    with (
        MockServer(mock.app) as server,
        httpx.Client(
            base_url=server.url, headers={"authorization": "Bearer bench-key"}, timeout=30, trust_env=False
        ) as http,
    ):
        cycle = tensorlake_cycle(http) if mock.provider == "tensorlake" else opensandbox_cycle(http)
        return cycles(cycle, runs)


def live_cycles(runtime: LinuxRuntime, runs: int, counts: tuple[int, ...] = LIVE_COUNTS) -> dict[int, float]:
    """Return the linux cycle's p50 (ms) while each of ``counts`` sandboxes is live."""
    held: list[LinuxSandbox] = []
    found: dict[int, float] = {}
    try:
        for live in counts:
            while len(held) < live - 1:
                held.append(runtime.create_sandbox())
            found[live] = report(f"linux, {live} live", cycles(linux_cycle(runtime), runs))
    finally:
        for sandbox in held:
            sandbox.destroy()
    return found


def report(name: str, samples: list[float]) -> float:
    """Print p50/p95 of ``samples`` in milliseconds; return the p50."""
    p50, p95 = percentile(samples, 0.5) * 1000, percentile(samples, 0.95) * 1000
    print(f"{name:<22} create->echo->delete  p50 {p50:8.2f} ms   p95 {p95:8.2f} ms   ({len(samples)} runs)")
    return p50


def main(argv: list[str] | None = None) -> int:
    """Run both cycles and print the figures."""
    parser = argparse.ArgumentParser(prog="bench/linux_runtime.py")
    parser.add_argument("--smoke", action="store_true", help="a short run (a few seconds)")
    args = parser.parse_args(argv)
    runs = 15 if args.smoke else 100
    emulator_p50 = report("emulator", cycles(emulator_cycle, runs * 10))
    requirements = check_requirements()
    if not requirements.ok:
        print(f"linux     skipped: {requirements.message()}")
        emit("linux_runtime", {"skipped": requirements.message(), "emulator_p50": emulator_p50})
        return 0
    started = time.perf_counter()
    with LinuxRuntime() as runtime:
        runtime_ms = (time.perf_counter() - started) * 1000
        linux_p50 = report("linux", cycles(linux_cycle(runtime), runs))
        print(f"linux     runtime start (world, user namespace, launcher): {runtime_ms:.1f} ms, once per runtime")
        print(f"linux     cgroups: {runtime.cgroups.describe()}")
        by_live = live_cycles(runtime, 5, LIVE_COUNTS[:2]) if args.smoke else live_cycles(runtime, runs)
    flat = max(by_live.values()) / min(by_live.values())
    print(
        "linux     as sandboxes accumulate: "
        + ", ".join(f"{live} live {ms:.1f} ms" for live, ms in by_live.items())
        + f"; slowest / fastest p50 = {flat:.2f} (goal <= {FLAT_GOAL})"
    )
    with LinuxRuntime(warm=0) as cold:
        report("linux-0", cycles(linux_cycle(cold), runs))
        print("linux-0   (the same without the warm pool: every sandbox started on demand)")
    verdict = "under" if linux_p50 < TARGET_MS else "over"
    print(
        f"ratio     linux / emulator p50 = {linux_p50 / emulator_p50:.0f}x; linux p50 {verdict} the {TARGET_MS:.0f} ms target"
    )
    print("through the provider APIs (loopback HTTP, SSE):")
    makers: dict[str, Callable[[Literal["emulator", "linux"]], HttpMock]] = {
        "tensorlake": lambda name: TensorLakeMock(runtime=name),
        "opensandbox": lambda name: OpenSandboxMock(runtime=name),
    }
    headline: dict[str, float] = {"emulator_p50": emulator_p50, "linux_p50": linux_p50, "live_flat": round(flat, 3)}
    headline.update({f"live_{live}_p50": ms for live, ms in by_live.items()})
    for provider, make in makers.items():
        figures: dict[str, float] = {}
        for name in ("emulator", "linux"):
            mock = make(name)
            try:
                figures[name] = report(f"{provider}/{name}", provider_cycles(mock, runs))
            finally:
                mock.close()
        verdict = "under" if figures["linux"] < TARGET_MS else "over"
        print(
            f"ratio     {provider}: linux - emulator p50 = {figures['linux'] - figures['emulator']:.1f} ms; "
            f"linux p50 {verdict} the {TARGET_MS:.0f} ms target"
        )
        headline.update({f"{provider}_{name}_p50": value for name, value in figures.items()})
    emit("linux_runtime", headline)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
