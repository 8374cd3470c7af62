"""The TensorLake fault catalogue over HTTP: every named fault listed and armed, and the SDK's reactions."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tensorlake.sandbox import Sandbox, SandboxError, SandboxPending

from mockserver.tensorlake import TensorLakeMock

from .conftest import journal

NAMED = {
    "create_fails",
    "create_times_out",
    "release",
    "transition_never_settles",
    "slow_transition",
    "proxy_not_ready",
    "proxy_unreachable",
    "run_stream_cut",
    "api_unavailable",
    "rate_limited",
    "server_error",
    "connection_reset",
    "slow",
}


def _arm(http: httpx.Client, name: str, **params: Any) -> dict[str, Any]:
    resp = http.post(f"/_mock/faults/catalogue/{name}", json=params)
    assert resp.status_code == 201, resp.text
    armed: dict[str, Any] = resp.json()
    return armed


def test_the_catalogue_lists_the_sdks_situations(mock: TensorLakeMock, http: httpx.Client) -> None:
    listed = http.get("/_mock/faults/catalogue").json()["faults"]
    assert {f["name"] for f in listed} == NAMED
    for fault in listed:
        assert fault["description"] and fault["sdk_reaction"].startswith("SDK"), fault["name"]
        assert all(p["description"] for p in fault["params"]), fault["name"]


def test_every_fault_arms_and_a_refused_one_arms_nothing(mock: TensorLakeMock, http: httpx.Client) -> None:
    sid = http.post("/sandboxes", json={}).json()["sandbox_id"]
    for fault in http.get("/_mock/faults/catalogue").json()["faults"]:
        params = {"sandbox": sid} if fault["name"] == "release" else {"seconds": 0.0} if fault["name"] == "slow" else {}
        _arm(http, fault["name"], **params)
        http.delete("/_mock/faults")
    for name, params, code in (
        ("nope", {}, "unknown_fault"),
        ("slow_transition", {"transition": "teleport"}, "invalid_transition"),
        ("slow_transition", {"seconds": -1}, "invalid_timings"),
        ("api_unavailable", {"status": 500}, "invalid_fault_params"),
        ("release", {"sandbox": "nope"}, "sandbox_not_found"),
        ("create_fails", {"status": "422"}, "invalid_fault_params"),
    ):
        before = (mock.model.timings, list(mock.model.outcomes), mock.faults.rules())
        resp = http.post(f"/_mock/faults/catalogue/{name}", json=params)
        assert resp.json()["code"] == code and resp.status_code in (400, 404), name
        assert (mock.model.timings, list(mock.model.outcomes), mock.faults.rules()) == before


def test_a_create_that_fails(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    _arm(http, "create_fails", reason="no_capacity", error_details={"message": "full"})
    with pytest.raises(SandboxError) as failed:
        Sandbox.create(**tl)
    assert failed.value.reason == "no_capacity"


def test_a_create_that_times_out_then_is_released(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    _arm(http, "create_times_out")
    with pytest.raises(SandboxPending) as pending:
        Sandbox.create(**tl, name="late", request_timeout=0.5)
    assert http.get("/sandboxes/late").json()["status"] == "pending"
    _arm(http, "release", sandbox=pending.value.sandbox_id)
    assert Sandbox.connect("late", **tl).run("echo", ["up"]).stdout == "up"


def test_a_startup_that_never_settles(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    _arm(http, "transition_never_settles", transition="startup")
    with pytest.raises(SandboxPending) as pending:
        Sandbox.create(**tl, request_timeout=0.5)
    http.post("/_mock/clock/advance", json={"seconds": 86_400})
    assert http.get(f"/sandboxes/{pending.value.sandbox_id}").json()["status"] == "pending"


@pytest.mark.parametrize(
    ("name", "status", "code"),
    [("proxy_not_ready", 503, "SANDBOX_NOT_READY"), ("proxy_unreachable", 502, "SANDBOX_UNREACHABLE")],
)
def test_the_proxy_answers_its_errors_and_the_sdk_retries(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client, name: str, status: int, code: str
) -> None:
    sandbox = Sandbox.create(**tl)
    sandbox.write_file("/tmp/x", b"here")
    [rule] = _arm(http, name, sandbox_id=sandbox.sandbox_id, times=2)["rules"]
    assert rule["status"] == status and rule["body"]["code"] == code
    assert sandbox.read_file("/tmp/x").value == b"here"  # retried past the two refusals
    reads = journal(mock, 3, method="GET", path="/api/v1/files")
    assert [e.status for e in reads[:3]] == [status, status, 200]
    assert all(code in e.response_body for e in reads[:2])


def test_a_gateway_error_on_a_read_is_retried(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl)
    _arm(http, "api_unavailable", method="GET", status=503, times=2)
    assert Sandbox.connect(sandbox.sandbox_id, **tl).sandbox_id == sandbox.sandbox_id
    assert [e.status for e in journal(mock, 3, method="GET")][:3] == [503, 503, 200]


def test_a_cut_run_stream(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl)
    _arm(http, "run_stream_cut", sandbox_id=sandbox.sandbox_id)
    with pytest.raises(SandboxError, match="EventSource error"):
        sandbox.run("echo", ["lost"])
