"""Benchmark the TensorLake mock against a bare Starlette endpoint on the same stack.

Eight client threads (httpx, loopback) run create -> PATCH network -> GET -> DELETE cycles against a
``TensorLakeMock`` server, and the same threads hit a bare Starlette endpoint served the same way
(uvicorn in a thread) for the same time; the two phases alternate in short rounds so that changing
machine load weighs on both alike. The floor is an echo of the cycle: a bare app that answers the same four
requests with the bodies the mock sent in the same run (a fresh id per create; the GET shows the policy the
PATCH sent), so the clients do the same work on both sides. The score is ``(cycles/s x 4) / floor req/s``:
the share of a do-nothing server's request rate the mock keeps while doing real work (target >= 0.85).
A plain ``GET /`` on the bare app is printed beside it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support import emit

from mockserver.asgi.server import MockServer
from mockserver.tensorlake import TensorLakeMock

TARGET = 0.85
API_KEY = "tl_apiKey_bench"
POLICIES = [
    {"allow_internet_access": True, "allow_out": ["api.example.com", "10.0.0.0/8"], "deny_out": []},
    {"allow_internet_access": False, "allow_out": [], "deny_out": []},
]


def _client(url: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"authorization": f"Bearer {API_KEY}"}, timeout=30, trust_env=False, verify=False
    )


def _drive(url: str, clients: int, seconds: float, work: Callable[[httpx.Client, int], int]) -> tuple[int, float]:
    """Run ``work`` in ``clients`` threads until ``seconds`` pass; return the units done and the time taken."""
    sessions = [_client(url) for _ in range(clients)]
    counts = [0] * clients
    failures: list[BaseException] = []
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def loop(n: int) -> None:
        start.wait()
        try:
            while not stop.is_set():
                counts[n] += work(sessions[n], n)
        except BaseException as exc:  # a failed run must not look like a fast one
            failures.append(exc)

    threads = [threading.Thread(target=loop, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    elapsed = time.perf_counter() - began
    for session in sessions:
        session.close()
    if failures:
        raise RuntimeError(f"benchmark client failed: {failures[0]!r}") from failures[0]
    return sum(counts), elapsed


def _cycle(client: httpx.Client, n: int) -> int:
    """Run one create -> PATCH -> GET -> DELETE cycle; return 1."""
    created = client.post("/sandboxes", json={"resources": {"cpus": 1.0, "memory_mb": 1024}})
    created.raise_for_status()
    sid = created.json()["sandbox_id"]
    policy = POLICIES[n % len(POLICIES)]
    client.patch(f"/sandboxes/{sid}", json={"network": policy}).raise_for_status()
    got = client.get(f"/sandboxes/{sid}")
    got.raise_for_status()
    if got.json()["network_policy"] != policy:
        raise AssertionError("GET did not show the PATCHed policy")
    client.delete(f"/sandboxes/{sid}").raise_for_status()
    return 1


def _hit(client: httpx.Client, n: int) -> int:
    """Make one request to the bare endpoint; return 1."""
    client.get("/").raise_for_status()
    return 1


def _bare_app() -> Starlette:
    async def ok(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/", ok)])


def _recorded_cycle(url: str) -> dict[str, tuple[int, dict[str, Any]]]:
    """Run one cycle against the mock at ``url``; return each step's status and JSON body."""
    with _client(url) as client:
        created = client.post("/sandboxes", json={"resources": {"cpus": 1.0, "memory_mb": 1024}})
        sid = created.json()["sandbox_id"]
        patched = client.patch(f"/sandboxes/{sid}", json={"network": POLICIES[0]})
        got = client.get(f"/sandboxes/{sid}")
        deleted = client.delete(f"/sandboxes/{sid}")
    return {
        name: (answer.status_code, answer.json())
        for name, answer in (("create", created), ("patch", patched), ("get", got), ("delete", deleted))
    }


def _echo_app(recorded: dict[str, tuple[int, dict[str, Any]]]) -> Starlette:
    """Return the floor: the cycle's four requests answered with ``recorded`` bodies, a fresh id per create."""
    policies: dict[str, Any] = {}
    ids = itertools.count()

    def answer(step: str, sid: str, **changes: Any) -> Response:
        status, body = recorded[step]
        return JSONResponse({**body, "sandbox_id": sid, **changes}, status_code=status)

    async def create(request: Request) -> Response:
        await request.body()
        return answer("create", f"echo{next(ids)}")

    async def one(request: Request) -> Response:
        sid = request.path_params["sid"]
        if request.method == "PATCH":
            policies[sid] = json.loads(await request.body())["network"]
            return answer("patch", sid, network_policy=policies[sid])
        if request.method == "GET":
            return answer("get", sid, network_policy=policies.get(sid))
        policies.pop(sid, None)
        return answer("delete", sid)

    return Starlette(
        routes=[
            Route("/sandboxes", create, methods=["POST"]),
            Route("/sandboxes/{sid}", one, methods=["GET", "PATCH", "DELETE"]),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print its figures, and return 0 (1 with ``--strict`` below the target)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="a short run (under 5 s)")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per phase (default 5; smoke 1)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads (default 8)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if the score is below the target")
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (1.0 if args.smoke else 5.0)
    if seconds <= 0 or args.clients < 1:
        parser.error("--seconds must be positive and --clients at least 1")

    rounds = 2 if args.smoke else 5
    mock = TensorLakeMock(seed=0)
    cycles = hits = 0
    cycle_time = hit_time = 0.0
    echoes = echo_time = 0.0
    with MockServer(mock.app, timeout_keep_alive=30) as server, MockServer(_bare_app()) as bare_server:
        recorded = _recorded_cycle(server.url)
        with MockServer(_echo_app(recorded), timeout_keep_alive=30) as echo_server:
            for url, work in ((server.url, _cycle), (echo_server.url, _cycle), (bare_server.url, _hit)):
                _drive(url, args.clients, 0.1, work)
            for _ in range(rounds):
                done, spent = _drive(server.url, args.clients, seconds / rounds, _cycle)
                cycles, cycle_time = cycles + done, cycle_time + spent
                done, spent = _drive(echo_server.url, args.clients, seconds / rounds, _cycle)
                echoes, echo_time = echoes + done, echo_time + spent
                done, spent = _drive(bare_server.url, args.clients, seconds / rounds, _hit)
                hits, hit_time = hits + done, hit_time + spent

    cycles_per_s = cycles / cycle_time
    floor_per_s = echoes * 4 / echo_time
    hits_per_s = hits / hit_time
    score = cycles_per_s * 4 / floor_per_s if floor_per_s else 0.0
    print(
        f"tensorlake mock: {cycles} create->patch->get->delete cycles in {cycle_time:.2f} s = {cycles_per_s:.1f} cycles/s"
    )
    print(f"echo of the cycle: {echoes:.0f} cycles in {echo_time:.2f} s = {floor_per_s:.1f} req/s")
    print(f"bare starlette GET /: {hits} in {hit_time:.2f} s = {hits_per_s:.1f} req/s")
    print(f"score: (cycles/s x 4) / floor req/s = {score:.2f} (target >= {TARGET}, {args.clients} clients)")
    emit(
        "tensorlake",
        {
            "score": round(score, 3),
            "cycles_per_s": round(cycles_per_s, 1),
            "floor_per_s": round(floor_per_s, 1),
            "get_per_s": round(hits_per_s, 1),
        },
    )
    return 1 if args.strict and score < TARGET else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
