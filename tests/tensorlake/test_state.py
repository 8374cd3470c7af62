"""Mock-level behaviour without the SDK: the virtual clock, state snapshots, admin routes and helpers."""

from __future__ import annotations

import httpx
import pytest

from mockserver.core.clock import VirtualClock
from mockserver.tensorlake import TensorLakeMock


def test_manual_clock_never_blocks_and_admin_advance_settles(mock: TensorLakeMock, http: httpx.Client) -> None:
    mock.clock.set_mode("manual")
    mock.set_timings(startup=10)
    created = http.post("/sandboxes", json={"name": "manual", "timeout_secs": 30})
    assert created.status_code == 200 and created.json()["status"] == "pending"
    assert http.post("/_mock/clock/advance", json={"seconds": 10}).status_code == 200
    assert http.get("/sandboxes/manual").json()["status"] == "running"
    http.post("/_mock/clock/advance", json={"seconds": 30})
    assert mock.snapshot()["state"]["sandboxes"][0]["status"] == "suspended"


def test_admin_advance_terminates_expired_ephemeral_sandboxes(mock: TensorLakeMock, http: httpx.Client) -> None:
    sid = http.post("/sandboxes", json={"timeout_secs": 5}).json()["sandbox_id"]
    http.post("/_mock/clock/advance", json={"seconds": 5})
    state = mock.snapshot()["state"]
    assert state["sandboxes"] == [] and state["archive"][0]["id"] == sid
    assert state["archive"][0]["termination_reason"] == "timeout"


def test_max_pending_secs_fails_a_sandbox_with_no_capacity(mock: TensorLakeMock, http: httpx.Client) -> None:
    mock.set_timings(startup=120)
    sid = http.post("/sandboxes", json={"wait": False, "max_pending_secs": 60, "name": "queued"}).json()["sandbox_id"]
    mock.clock.advance(60)
    info = http.get(f"/sandboxes/{sid}").json()
    assert info["status"] == "failed" and info["termination_reason"] == "no_capacity"
    assert http.post("/sandboxes", json={"name": "queued", "wait": False}).status_code == 202


def test_snapshot_restore_round_trip(mock: TensorLakeMock, http: httpx.Client, anon: httpx.Client) -> None:
    sid = http.post("/sandboxes", json={"name": "kept", "network": {"deny_out": ["evil.example"]}}).json()["sandbox_id"]
    auth = {"host": f"{sid}.local", "authorization": http.headers["authorization"]}
    assert anon.put("/api/v1/files?path=/tmp/f", content=b"data", headers=auth).status_code == 204
    saved = mock.snapshot()
    http.delete("/sandboxes/kept")
    http.post("/sandboxes", json={"name": "other"})
    mock.restore(saved)
    assert mock.snapshot() == saved
    info = http.get("/sandboxes/kept").json()
    assert info["id"] == sid and info["network_policy"]["deny_out"] == ["evil.example"]
    assert http.get("/sandboxes/other").status_code == 404
    assert anon.get("/api/v1/files?path=/tmp/f", headers=auth).content == b"data"
    with pytest.raises(ValueError):
        mock.restore({**saved, "state": {"sandboxes": [{"id": "broken"}]}})
    assert mock.snapshot() == saved


def test_api_keys_restrict_who_may_call(mock: TensorLakeMock, http: httpx.Client) -> None:
    assert http.put("/_mock/tensorlake/api-keys", json={"api_keys": ["only-this"]}).status_code == 200
    try:
        refused = http.get("/sandboxes")
        assert refused.status_code == 401 and refused.json()["code"] == "invalid_api_key"
        assert http.get("/sandboxes", headers={"authorization": "Bearer only-this"}).status_code == 200
    finally:
        http.put("/_mock/tensorlake/api-keys", json={"api_keys": None})
    assert http.get("/sandboxes").status_code == 200


def test_admin_routes_for_timings_sessions_and_outcomes(mock: TensorLakeMock, http: httpx.Client) -> None:
    assert http.post("/_mock/tensorlake/timings", json={"startup": 3}).json()["startup"] == 3
    assert http.post("/_mock/tensorlake/timings", json={"warp": 1}).status_code == 400
    token = http.post("/_mock/tensorlake/sessions", json={"organization_id": "o", "project_id": "p"}).json()["token"]
    assert token in mock.model.sessions
    assert (
        http.post("/_mock/tensorlake/create-outcomes", json={"kind": "failed", "reason": "no_capacity"}).status_code
        == 201
    )
    failed = http.post("/sandboxes", json={})
    assert failed.status_code == 422 and failed.json()["reason"] == "no_capacity"
    assert http.post("/_mock/tensorlake/create-outcomes", json={"kind": "maybe"}).status_code == 400


def test_constructor_options() -> None:
    custom = TensorLakeMock(seed=3, clock=VirtualClock("manual"), ingress_domain="Sbx.Example.Test.")
    assert custom.ingress_domain == "sbx.example.test" and custom.clock.mode == "manual"
    with pytest.raises(ValueError):
        TensorLakeMock(ingress_domain="http://x")
    with pytest.raises(ValueError):
        custom.set_timings(startup=-1)


def test_seeded_ids_repeat(mock: TensorLakeMock, http: httpx.Client) -> None:
    first = [http.post("/sandboxes", json={}).json()["sandbox_id"] for _ in range(3)]
    mock.reset()
    mock.seed(7)
    assert [http.post("/sandboxes", json={}).json()["sandbox_id"] for _ in range(3)] == first
