"""The server-wide sandbox cap: one Capacity shared by both mocks, each answering with its provider's capacity error."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mockserver.core.capacity import Capacity
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock

KEY = "capacity-key"
OPENSANDBOX_BODY = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["sleep", "600"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "1Gi"},
}


def test_the_limit_counts_every_registered_model_and_the_room() -> None:
    counts = {"a": 1, "b": 1}
    room = {"ok": True}
    capacity = Capacity(3, room=lambda: room["ok"])
    capacity.register(lambda: counts["a"])
    capacity.register(lambda: counts["b"])
    assert capacity.admits() and capacity.live() == 2
    counts["b"] = 2
    assert not capacity.admits() and "maximum of 3" in capacity.describe()
    counts["b"] = 0
    room["ok"] = False
    assert not capacity.admits() and "file descriptors" in capacity.describe()
    assert Capacity().admits()  # no limit, no room hook: everything is admitted
    with pytest.raises(ValueError):
        Capacity(-1)


@pytest.fixture
def clients() -> Iterator[tuple[httpx.Client, httpx.Client]]:
    capacity = Capacity(3)
    tensorlake, opensandbox = TensorLakeMock(capacity=capacity), OpenSandboxMock(api_key=KEY, capacity=capacity)
    with (
        tensorlake.server() as tl,
        opensandbox.server() as osb,
        httpx.Client(base_url=tl.url, headers={"authorization": f"Bearer {KEY}"}) as tl_http,
        httpx.Client(base_url=osb.url, headers={"OPEN-SANDBOX-API-KEY": KEY}) as osb_http,
    ):
        yield tl_http, osb_http


def test_both_providers_refuse_creates_past_the_shared_cap_and_keep_serving(
    clients: tuple[httpx.Client, httpx.Client],
) -> None:
    tl, osb = clients
    first = tl.post("/sandboxes", json={}).json()["sandbox_id"]
    assert tl.post("/sandboxes", json={}).status_code == 200
    assert osb.post("/v1/sandboxes", json=OPENSANDBOX_BODY).status_code == 202

    refused = tl.post("/sandboxes", json={})
    assert refused.status_code == 422
    body = refused.json()
    assert (body["status"], body["termination_reason"], body["reason"]) == ("failed", "no_capacity", "no_capacity")
    assert tl.get(f"/sandboxes/{body['sandbox_id']}").status_code == 404  # never live
    assert tl.get(f"/archived-sandboxes/{body['sandbox_id']}").json()["termination_reason"] == "no_capacity"
    assert len(tl.get("/sandboxes").json()["sandboxes"]) == 2

    too_many = osb.post("/v1/sandboxes", json=OPENSANDBOX_BODY)
    assert too_many.status_code == 429 and too_many.headers["retry-after"] == "1"
    assert too_many.json()["code"] == "KUBERNETES::POOL_CAPACITY_EXHAUSTED"
    assert osb.get("/v1/sandboxes").json()["pagination"]["totalItems"] == 1
    assert tl.get("/_mock/clock").status_code == osb.get("/_mock/clock").status_code == 200

    assert tl.delete(f"/sandboxes/{first}").status_code in (200, 204)  # a place is free again
    assert osb.post("/v1/sandboxes", json=OPENSANDBOX_BODY).status_code == 202
    assert tl.post("/sandboxes", json={}).status_code == 422


def test_an_invalid_create_is_refused_for_what_it_is_not_for_capacity(
    clients: tuple[httpx.Client, httpx.Client],
) -> None:
    tl, osb = clients
    for _ in range(3):
        assert tl.post("/sandboxes", json={}).status_code == 200
    assert tl.post("/sandboxes", json={"timeout_secs": "soon"}).status_code == 400
    assert osb.post("/v1/sandboxes", json={"image": {"uri": "python:3.11"}}).status_code == 422


def test_copies_past_the_cap_are_refused_one_by_one(clients: tuple[httpx.Client, httpx.Client]) -> None:
    tl, _ = clients
    source = tl.post("/sandboxes", json={}).json()["sandbox_id"]
    copied = tl.post(f"/sandboxes/{source}/copy", params={"times": 3}).json()["sandboxes"]
    assert [c["status"] for c in copied] == ["running", "running", "failed"]
    assert copied[2]["reason"] == "no_capacity"
    assert len(tl.get("/sandboxes").json()["sandboxes"]) == 3
