"""Bad input gets a clear 4xx with ``code`` and ``message``, and leaves the state exactly as it was."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mockserver.tensorlake import TensorLakeMock

from .conftest import journal

BIG = json.dumps({"name": "x", "entrypoint": ["a" * (1024 * 1024)]}).encode()
CASES: list[tuple[str, str, Any, int, str]] = [
    # (method, path, body (bytes are sent raw), status, code)
    ("POST", "/sandboxes", b'{"name": ', 400, "invalid_json"),
    ("POST", "/sandboxes", b"[1, 2]", 400, "invalid_type"),
    ("POST", "/sandboxes", {"name": 5}, 400, "invalid_type"),
    ("POST", "/sandboxes", {"name": "Bad_Name"}, 400, "invalid_name"),
    ("POST", "/sandboxes", {"name": "abcdefghijklmnopqrstu"}, 400, "invalid_name"),
    ("POST", "/sandboxes", {"name": "target"}, 409, "name_conflict"),
    ("POST", "/sandboxes", {"resources": {"cpus": "two"}}, 400, "invalid_type"),
    ("POST", "/sandboxes", {"resources": {"memory_mb": -1}}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"timeout_secs": True}, 400, "invalid_type"),
    ("POST", "/sandboxes", {"exposed_ports": [9501]}, 400, "invalid_port"),
    ("POST", "/sandboxes", {"exposed_ports": [70000]}, 400, "invalid_port"),
    ("POST", "/sandboxes", {"network": {"allow_out": ["*.*.bad"]}}, 400, "invalid_wildcard"),
    ("POST", "/sandboxes", {"network": {"deny_out": ["*.example.com"]}}, 400, "wildcard_in_deny"),
    ("POST", "/sandboxes", {"network": {"allow_out": "example.com"}}, 400, "invalid_type"),
    ("POST", "/sandboxes", {"network": {"allow_out": ["10.0.0.1/8"]}}, 400, "invalid_cidr"),
    ("POST", "/sandboxes", {"network": {"allow_out": ["2001:db8::1"]}}, 400, "ipv6_not_supported"),
    ("POST", "/sandboxes", {"network": {"bogus": 1}}, 400, "unknown_key"),
    ("POST", "/sandboxes", {"network": {"allow_out": ["gone.invalid"]}}, 400, "unresolvable_host"),
    ("POST", "/sandboxes", {"auto_resume": False}, 400, "invalid_auto_resume"),
    ("POST", "/sandboxes", {"snapshot_id": "nosuchsnapshot"}, 404, "snapshot_not_found"),
    ("POST", "/sandboxes", BIG, 413, "payload_too_large"),
    ("PATCH", "/sandboxes/target", b"not json", 400, "invalid_json"),
    ("PATCH", "/sandboxes/target", {}, 400, "empty_update"),
    ("PATCH", "/sandboxes/target", {"network": {"allow_internet_access": "no"}}, 400, "invalid_type"),
    (
        "PATCH",
        "/sandboxes/target",
        {"network": {"allow_out": ["ok.example.com", "gone.invalid"]}},
        400,
        "unresolvable_host",
    ),
    ("PATCH", "/sandboxes/target", {"exposed_ports": [8080, "x"]}, 400, "invalid_port"),
    ("PATCH", "/sandboxes/target", {"exposed_ports": [8080], "network": {"allow_out": [" "]}}, 400, "empty_entry"),
    ("PATCH", "/sandboxes/target", {"name": "eph-taken", "network": {"deny_out": [7]}}, 400, "non_string_entry"),
    ("PATCH", "/sandboxes/target", {"name": "UPPER"}, 400, "invalid_name"),
    ("PATCH", "/sandboxes/target", {"name": "other"}, 409, "name_conflict"),
    ("PATCH", "/sandboxes/target", {"resources": {"cpus": 2}, "name": "x"}, 400, "invalid_update"),
    ("PATCH", "/sandboxes/target", {"resources": {"disk_mb": 1}}, 409, "invalid_resize"),
    ("PATCH", "/sandboxes/target", {"resources": {"cpus": None}}, 400, "invalid_type"),
    ("POST", "/sandboxes", b"null", 400, "invalid_type"),
    ("GET", "/sandboxes/target/logs?level=\u00b2", None, 400, "invalid_query"),
    ("PATCH", "/sandboxes/target", BIG, 413, "payload_too_large"),
    ("PATCH", "/sandboxes/nobody", {"name": "x"}, 404, "sandbox_not_found"),
    ("GET", "/sandboxes/nobody", None, 404, "sandbox_not_found"),
    ("DELETE", "/sandboxes/nobody", None, 404, "sandbox_not_found"),
    ("POST", "/sandboxes/nobody/suspend", None, 404, "sandbox_not_found"),
    ("POST", "/sandboxes/target/suspend?wait_ms=soon", None, 400, "invalid_query"),
    ("POST", "/sandboxes/target/snapshot", {"snapshot_type": "disk"}, 400, "invalid_snapshot_type"),
    ("POST", "/sandboxes", b'{"timeout_secs": 1e30}', 400, "invalid_type"),
    ("POST", "/sandboxes", {"timeout_secs": 10**30}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"timeout_secs": 30 * 86_400 + 1}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"max_pending_secs": 10**20}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"resources": {"cpus": 1e300}}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"resources": {"memory_mb": 10**24}}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"resources": {"disk_mb": 10**12}}, 400, "invalid_value"),
    ("POST", "/sandboxes", {"resources": {"gpus": [{"count": 10**9}]}}, 400, "invalid_value"),
    ("PATCH", "/sandboxes/target", {"resources": {"memory_mb": 10**24}}, 400, "invalid_value"),
    ("POST", "/sandboxes/target/suspend?wait_ms=" + "9" * 5000, None, 400, "invalid_query"),
    ("POST", "/sandboxes/target/suspend?wait_ms=86400000", None, 400, "invalid_query"),
    ("POST", "/sandboxes/target/copy?times=33", None, 400, "invalid_query"),
    ("GET", "/sandboxes/target/logs?tail=" + "9" * 5000, None, 400, "invalid_query"),
    ("GET", "/snapshots/nosuchsnapshot", None, 404, "snapshot_not_found"),
    ("POST", "/v1/namespaces/other/sandboxes/target/resume", None, 404, "sandbox_not_found"),
]


@pytest.fixture
def sandboxes(http: httpx.Client) -> dict[str, str]:
    """Create a named sandbox with a policy, a second named one and an ephemeral one."""
    ids = {}
    for body in (
        {"name": "target", "network": {"allow_out": ["api.example.com"]}, "exposed_ports": [3000]},
        {"name": "other"},
        {},
    ):
        response = http.post("/sandboxes", json=body)
        assert response.status_code == 200, response.text
        ids[str(body.get("name", "ephemeral"))] = response.json()["sandbox_id"]
    return ids


def send(http: httpx.Client, method: str, path: str, body: Any) -> httpx.Response:
    """Send ``body`` raw (bytes) or as JSON."""
    if isinstance(body, bytes):
        return http.request(method, path, content=body, headers={"content-type": "application/json"})
    return http.request(method, path, json=body) if body is not None else http.request(method, path)


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), CASES)
def test_bad_input_is_refused_without_a_trace(
    mock: TensorLakeMock,
    http: httpx.Client,
    sandboxes: dict[str, str],
    method: str,
    path: str,
    body: Any,
    status: int,
    code: str,
) -> None:
    before = mock.snapshot()
    response = send(http, method, path, body)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["code"] == code and isinstance(error["message"], str) and error["message"]
    assert mock.snapshot() == before


def test_ephemeral_rules_and_missing_auth(
    mock: TensorLakeMock, http: httpx.Client, anon: httpx.Client, sandboxes: dict[str, str]
) -> None:
    before = mock.snapshot()
    eph = sandboxes["ephemeral"]
    refusals = [
        (http.post(f"/sandboxes/{eph}/suspend"), 400, "ephemeral_sandbox"),
        (http.patch(f"/sandboxes/{eph}", json={"auto_resume": False}), 409, "invalid_auto_resume"),
        (http.post(f"/sandboxes/{eph}/resume"), 200, None),
        (anon.get("/sandboxes"), 401, "unauthorized"),
        (anon.post("/sandboxes", json={}), 401, "unauthorized"),
    ]
    for response, status, code in refusals:
        assert response.status_code == status, response.text
        if code is not None:
            assert response.json()["code"] == code and response.json()["message"]
    assert mock.snapshot() == before


def test_a_valid_patch_after_a_rejected_one_applies_whole(http: httpx.Client, sandboxes: dict[str, str]) -> None:
    bad = http.patch("/sandboxes/target", json={"exposed_ports": [8080], "network": {"allow_out": ["x.invalid"]}})
    assert bad.status_code == 400
    assert http.get("/sandboxes/target").json()["exposed_ports"] == [3000]
    good = http.patch("/sandboxes/target", json={"exposed_ports": [8080], "network": {"allow_out": ["x.example"]}})
    assert good.status_code == 200
    info = http.get("/sandboxes/target").json()
    assert info["exposed_ports"] == [8080] and info["network_policy"]["allow_out"] == ["x.example"]


def test_unknown_request_fields_are_journalled(mock: TensorLakeMock, http: httpx.Client) -> None:
    response = http.post("/sandboxes", json={"name": "fresh", "shiny_new_flag": True})
    assert response.status_code == 200
    assert journal(mock, 1, method="POST", path="/sandboxes")[0].unknown_fields == ("shiny_new_flag",)
    assert mock.journal.unknown_fields() == {"POST /sandboxes": ["shiny_new_flag"]}
