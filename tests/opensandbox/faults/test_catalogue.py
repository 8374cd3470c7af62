"""The OpenSandbox fault catalogue over HTTP: listed in full, armed by name, refused without arming anything."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock

from ..create_cases import BODY

KEY = {"OPEN-SANDBOX-API-KEY": "k"}
NEW_FAULTS = {
    "fail_next_transition",
    "stall_next_transition",
    "command_running_for_polls",
    "recover",
    "oom_on_next_exec",
    "oom_kill",
    "renew_fails",
    "empty_endpoint",
}


@pytest.fixture(params=["docker", "kubernetes"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[OpenSandboxMock, httpx.Client]]:
    timings = {"pending_seconds": 0.0} if request.param == "kubernetes" else {}
    mock = OpenSandboxMock(seed=3, api_key="k", profile=request.param, **timings)
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers=KEY, timeout=10) as client:
        yield mock, client


def _sandbox(client: httpx.Client) -> str:
    return str(client.post("/v1/sandboxes", json=BODY).json()["id"])


def _arm(client: httpx.Client, name: str, **params: Any) -> httpx.Response:
    return client.post(f"/_mock/faults/catalogue/{name}", json=params)


def test_the_catalogue_lists_every_fault_with_its_parameters(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    mock, client = served
    listed = client.get("/_mock/faults/catalogue").json()["faults"]
    names = [f["name"] for f in listed]
    assert names == sorted(mock.catalogue.named()) and set(names) >= NEW_FAULTS and len(names) >= 35
    for fault in listed:
        assert fault["description"] and fault["sdk_reaction"], fault["name"]
        for param in fault["params"]:
            assert set(param) == {"name", "type", "default", "description", "required", "nullable"}
            assert param["type"] in {"string", "integer", "number", "boolean", "object"} and param["description"]


def test_every_fault_arms_with_its_defaults(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    mock, client = served
    for fault in client.get("/_mock/faults/catalogue").json()["faults"]:
        params = {p["name"]: _sandbox(client) for p in fault["params"] if p["required"] and p["name"] == "sandbox_id"}
        params |= {p["name"]: 1.0 for p in fault["params"] if p["required"] and p["type"] == "number"}
        if fault["name"] == "recover":
            mock.oom_kill(params["sandbox_id"])
        armed = _arm(client, fault["name"], **params)
        assert armed.status_code == 201, (fault["name"], armed.text)
        assert armed.json()["armed"] == fault["name"] and isinstance(armed.json()["rules"], list)
        client.delete("/_mock/faults")


def test_a_rule_fault_returns_its_rule_and_fires(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    _, client = served
    sid = _sandbox(client)
    armed = _arm(client, "pending_pod", sandbox_id=sid, times=2).json()
    assert armed["params"] == {"sandbox_id": sid, "times": 2}
    [rule] = armed["rules"]
    assert client.get("/_mock/faults").json() == [rule]
    codes = [client.get(f"/v1/sandboxes/{sid}/endpoints/44772").json().get("code") for _ in range(3)]
    assert codes == ["KUBERNETES::POD_IP_NOT_AVAILABLE"] * 2 + [None]


@pytest.mark.parametrize(
    ("name", "params", "status", "code"),
    [
        ("no_such_fault", {}, 400, "unknown_fault"),
        ("pending_pod", {"times": "3"}, 400, "invalid_fault_params"),
        ("pending_pod", {"colour": "red"}, 400, "invalid_fault_params"),
        ("oom_on_next_exec", {}, 400, "invalid_fault_params"),
        ("oom_on_next_exec", {"sandbox_id": "SB", "wording": "docker-2.0"}, 400, "invalid_wording"),
        ("oom_on_next_exec", {"sandbox_id": "nope"}, 404, "sandbox_not_found"),
        ("fail_next_transition", {"sandbox_id": "SB", "operation": "delete"}, 400, "invalid_operation"),
        ("stall_next_transition", {"sandbox_id": "SB", "operation": "delete"}, 400, "invalid_operation"),
        ("stall_next_transition", {"sandbox_id": "SB", "seconds": -1}, 400, "invalid_seconds"),
        ("stall_next_transition", {"sandbox_id": "nope"}, 404, "sandbox_not_found"),
        ("command_running_for_polls", {"polls": 0}, 400, "invalid_polls"),
        ("recover", {"sandbox_id": "SB"}, 409, "sandbox_not_failed"),
        ("conflict", {"operation": "explode"}, 400, "invalid_fault_params"),
    ],
)
def test_a_refused_fault_arms_nothing(
    served: tuple[OpenSandboxMock, httpx.Client], name: str, params: dict[str, Any], status: int, code: str
) -> None:
    mock, client = served
    sid = _sandbox(client)
    before = mock.state.dump()
    resp = _arm(client, name, **{k: sid if v == "SB" else v for k, v in params.items()})
    assert (resp.status_code, resp.json()["code"]) == (status, code)
    assert client.get("/_mock/faults").json() == [] and mock.state.dump() == before


def test_the_next_pause_ends_in_failed(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    mock, client = served
    sid = _sandbox(client)
    assert _arm(client, "fail_next_transition", sandbox_id=sid).status_code == 201
    assert client.post(f"/v1/sandboxes/{sid}/pause").status_code == 202
    mock.clock.advance(5)
    status = client.get(f"/v1/sandboxes/{sid}").json()["status"]
    assert status["state"] == "Failed" and status["reason"] in ("CONTAINER_EXITED_ERROR", "FAILED")
    assert _arm(client, "recover", sandbox_id=sid).status_code == 201
    assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Running"
    assert client.post(f"/v1/sandboxes/{sid}/pause").status_code == 202  # armed once only
    mock.clock.advance(5)
    assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Paused"


def test_the_next_pause_stalls_then_settles_or_stays(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    mock, client = served
    sid, forever = _sandbox(client), _sandbox(client)
    assert _arm(client, "stall_next_transition", sandbox_id=sid, seconds=30).status_code == 201
    assert _arm(client, "stall_next_transition", sandbox_id=forever).status_code == 201
    for one in (sid, forever):
        assert client.post(f"/v1/sandboxes/{one}/pause").status_code == 202
    mock.clock.advance(29)
    assert {client.get(f"/v1/sandboxes/{one}").json()["status"]["state"] for one in (sid, forever)} == {"Pausing"}
    mock.clock.advance(2)
    assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Paused"
    mock.clock.advance(500)  # within the sandbox's 600 s timeout
    assert client.get(f"/v1/sandboxes/{forever}").json()["status"]["state"] == "Pausing"
    assert client.delete(f"/v1/sandboxes/{forever}").status_code == 204


def test_the_next_resume_ends_in_failed_with_the_given_status(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    mock, client = served
    sid = _sandbox(client)
    client.post(f"/v1/sandboxes/{sid}/pause")
    mock.clock.advance(5)
    _arm(client, "fail_next_transition", sandbox_id=sid, operation="resume", reason="NODE_LOST", message="gone")
    assert client.post(f"/v1/sandboxes/{sid}/resume").status_code == 202
    mock.clock.advance(5)
    status = client.get(f"/v1/sandboxes/{sid}").json()["status"]
    assert (status["state"], status["reason"], status["message"]) == ("Failed", "NODE_LOST", "gone")


def test_a_command_stays_running_for_n_polls(served: tuple[OpenSandboxMock, httpx.Client]) -> None:
    _, client = served
    sid = _sandbox(client)
    assert _arm(client, "command_running_for_polls", polls=3).json()["params"] == {"sandbox_id": None, "polls": 3}
    started = client.post(f"/direct/{sid}/44772/command", json={"command": "echo hi", "background": True})
    command_id = started.text.split('"text":"')[1].split('"')[0]
    polls = [client.get(f"/direct/{sid}/44772/command/status/{command_id}").json() for _ in range(4)]
    assert [p["running"] for p in polls] == [True, True, True, False]
    assert polls[0]["exit_code"] is None and polls[3]["exit_code"] == 0
    again = client.post(f"/direct/{sid}/44772/command", json={"command": "echo hi", "background": True})
    second = again.text.split('"text":"')[1].split('"')[0]
    assert client.get(f"/direct/{sid}/44772/command/status/{second}").json()["running"] is False


@pytest.mark.parametrize(
    ("wording", "message"),
    [
        (None, None),
        ("docker-1.1.1", "Sandbox container exited with code 137."),
        ("docker-oomkilled-flag", "Sandbox container exited with code 137 (OOMKilled)."),
    ],
)
def test_oom_on_the_next_exec_in_each_wording(
    served: tuple[OpenSandboxMock, httpx.Client], wording: str | None, message: str | None
) -> None:
    mock, client = served
    sid = _sandbox(client)
    _arm(client, "oom_on_next_exec", sandbox_id=sid, wording=wording)
    assert client.post(f"/direct/{sid}/44772/command", json={"command": "echo"}).status_code == 502
    status = client.get(f"/v1/sandboxes/{sid}").json()["status"]
    assert status["state"] == "Failed"
    expected = message or mock.profile.oom_status()[1]
    assert status["message"] == expected and "137" in expected
