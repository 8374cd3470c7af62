"""``GET /_mock/sandboxes`` on the OpenSandbox mock: what the dashboard shows of each sandbox."""

from __future__ import annotations

import httpx

from mockserver.opensandbox import OpenSandboxMock

from .conftest import API_KEY

CREATE = {
    "image": {"uri": "python:3.11", "auth": {"username": "u", "password": "registry-secret"}},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "metadata": {"team": "a"},
}


def test_summaries_show_state_policy_ports_and_metadata() -> None:
    mock = OpenSandboxMock(seed=5, api_key=API_KEY)
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers={"OPEN-SANDBOX-API-KEY": API_KEY}) as http:
        plain = http.post("/v1/sandboxes", json=CREATE).json()["id"]
        policy = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
        guarded = http.post("/v1/sandboxes", json={**CREATE, "networkPolicy": policy}).json()["id"]
        http.post(f"/v1/sandboxes/{plain}/pause")
        found = {s["id"]: s for s in http.get("/_mock/sandboxes").json()["sandboxes"]}
    assert found[plain]["state"] == "Paused" and found[guarded]["state"] == "Running"
    assert found[plain]["policy"] is None and found[guarded]["policy"] == policy
    assert found[plain]["ports"] == [44772] and found[guarded]["ports"] == [44772, 18080]
    assert found[plain]["metadata"] == {"team": "a"} and found[plain]["image"] == "python:3.11"
    assert found[plain]["expires_at"] == found[plain]["created_at"] + 600
    assert "registry-secret" not in str(found)


def test_deleted_sandboxes_leave_the_summary() -> None:
    mock = OpenSandboxMock(seed=5, api_key=API_KEY)
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers={"OPEN-SANDBOX-API-KEY": API_KEY}) as http:
        sid = http.post("/v1/sandboxes", json=CREATE).json()["id"]
        assert [s["id"] for s in mock.sandbox_summaries()] == [sid]
        http.delete(f"/v1/sandboxes/{sid}")
    assert mock.sandbox_summaries() == []
