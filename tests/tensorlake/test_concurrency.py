"""Concurrent PATCH and GET on one sandbox: every read shows one complete policy, never a mix."""

from __future__ import annotations

import random
import threading
from typing import Any

import httpx

from mockserver.tensorlake import TensorLakeMock

from .conftest import API_KEY

THREADS = 32
OPS = 12


def policy(i: int) -> dict[str, Any] | None:
    """Return the ``i``-th policy; each field names ``i``, so a torn read cannot match any of them."""
    if i == 0:
        return None
    return {
        "allow_internet_access": i % 2 == 0,
        "allow_out": [f"h{i}.example.com", f"10.{i}.0.0/16"],
        "deny_out": [f"d{i}.example.com", f"192.0.2.{i}"],
    }


def test_every_read_sees_one_whole_policy(mock: TensorLakeMock, server_url: str, http: httpx.Client) -> None:
    sid = http.post("/sandboxes", json={"name": "shared", "network": policy(1)}).json()["sandbox_id"]
    choices = [policy(i) for i in range(9)]
    seen: list[Any] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(
            base_url=server_url,
            headers={"authorization": f"Bearer {API_KEY}"},
            timeout=30,
            trust_env=False,
            verify=False,
        ) as client:
            start.wait()
            for _ in range(OPS):
                if rng.random() < 0.5:
                    response = client.patch(f"/sandboxes/{sid}", json={"network": rng.choice(choices)})
                else:
                    response = client.get(f"/sandboxes/{sid}")
                if response.status_code != 200:
                    with lock:
                        errors.append(response.text)
                    continue
                with lock:
                    seen.append(response.json()["network_policy"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert len(seen) == THREADS * OPS
    torn = [p for p in seen if p not in choices]
    assert not torn, torn[:3]
    assert len({repr(p) for p in seen}) > 1
    final = http.get(f"/sandboxes/{sid}").json()["network_policy"]
    assert final in choices
