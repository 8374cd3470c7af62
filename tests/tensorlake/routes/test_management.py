"""The management API's event streams: a client that goes away ends its run, and only stops following."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from mockserver.core import VirtualClock
from mockserver.tensorlake import TensorLakeMock

KEY = {"authorization": "Bearer tl-key"}
DROPPED = 50


def _wait(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the mock never noticed the clients were gone"
        time.sleep(0.02)


def test_dropped_run_streams_leave_no_running_process() -> None:
    mock = TensorLakeMock(seed=1, clock=VirtualClock("manual"))  # sleep 3600 never ends by itself
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers=KEY, timeout=10) as client:
        sid = client.post("/sandboxes", json={}).json()["sandbox_id"]
        daemon = {"host": f"{sid}.local", "accept": "text/event-stream"}
        for _ in range(DROPPED):
            body = {"command": "sleep", "args": ["3600"]}
            with client.stream("POST", "/api/v1/processes/run", json=body, headers=daemon) as resp:
                assert resp.status_code == 200 and b'"pid"' in next(resp.iter_raw())
        _wait(lambda: mock.runtime.live() == 0 and mock.runtime.followers() == 0)
        listed = client.get("/api/v1/processes", headers={"host": f"{sid}.local"}).json()["processes"]
        assert len(listed) == DROPPED and {p["status"] for p in listed} == {"signaled"}


def test_a_dropped_follower_leaves_the_process_running() -> None:
    mock = TensorLakeMock(seed=1, clock=VirtualClock("manual"))
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers=KEY, timeout=10) as client:
        sid = client.post("/sandboxes", json={}).json()["sandbox_id"]
        daemon = {"host": f"{sid}.local"}
        started = client.post("/api/v1/processes", json={"command": "sleep", "args": ["3600"]}, headers=daemon)
        pid = started.json()["pid"]
        for _ in range(DROPPED):
            with client.stream("GET", f"/api/v1/processes/{pid}/output/follow", headers=daemon) as resp:
                assert resp.status_code == 200
        _wait(lambda: mock.runtime.followers() == 0)
        assert mock.runtime.live() == 1
        assert client.get(f"/api/v1/processes/{pid}", headers=daemon).json()["status"] == "running"


def test_a_file_beyond_the_quota_is_refused_and_changes_nothing() -> None:
    """A PUT that would pass the sandbox's file quota answers 507 ``no_space``; the files stay as they were."""
    mock = TensorLakeMock(seed=1)
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers=KEY, timeout=30) as client:
        sid = client.post("/sandboxes", json={}).json()["sandbox_id"]
        daemon = {"host": f"{sid}.local"}
        half = b"a" * (10 * 1024 * 1024)
        assert client.put("/api/v1/files?path=/tmp/first", content=half, headers=daemon).status_code == 204
        refused = client.put("/api/v1/files?path=/tmp/second", content=half, headers=daemon)
        assert refused.status_code == 507 and refused.json()["code"] == "no_space", refused.text
        assert refused.json()["message"] == "no space left on device: /tmp/second"
        assert client.get("/api/v1/files?path=/tmp/second", headers=daemon).status_code == 404
        assert client.get("/api/v1/files?path=/tmp/first", headers=daemon).content == half
        small = client.put("/api/v1/files?path=/tmp/second", content=b"fits", headers=daemon)
        assert small.status_code == 204  # the refusal left the quota as it was
