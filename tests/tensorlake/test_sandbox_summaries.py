"""``GET /_mock/sandboxes`` on the TensorLake mock: what the dashboard shows of each sandbox."""

from __future__ import annotations

import httpx

from mockserver.tensorlake import TensorLakeMock

from .conftest import API_KEY


def test_summaries_show_status_policy_ports_and_name() -> None:
    mock = TensorLakeMock(seed=3)
    auth = {"Authorization": f"Bearer {API_KEY}"}
    with mock.server() as srv, httpx.Client(base_url=srv.url, headers=auth) as http:
        made = http.post(
            "/sandboxes",
            json={
                "image": "python:3.12",
                "name": "worker",
                "exposed_ports": [8000],
                "network": {"allow_internet_access": False, "allow_out": ["10.0.0.0/8"]},
            },
        )
        sid = made.json()["sandbox_id"]
        (summary,) = http.get("/_mock/sandboxes").json()["sandboxes"]
        http.delete(f"/sandboxes/{sid}")
        assert http.get("/_mock/sandboxes").json() == {"provider": "tensorlake", "sandboxes": []}
    assert (summary["id"], summary["state"], summary["image"]) == (sid, "running", "python:3.12")
    assert summary["ports"] == [8000] and summary["metadata"] == {"name": "worker"}
    assert summary["policy"]["allow_internet_access"] is False and summary["policy"]["allow_out"] == ["10.0.0.0/8"]
