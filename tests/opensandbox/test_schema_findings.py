"""The mock fixes the Schemathesis contracts led to: each answer is the real server's (or real execd's)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock

API_KEY = "findings-key"
KEY = {"OPEN-SANDBOX-API-KEY": API_KEY}
GOOD = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}
#: A valid RFC 3339 time that pydantic accepts but whose conversion to UTC overflows.
OVERFLOWING = "0001-01-01T00:01:00+00:07"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """Serve a fresh mock on a loopback socket and return a client for it."""
    with OpenSandboxMock(seed=7, api_key=API_KEY).server() as srv, httpx.Client(base_url=srv.url) as c:
        yield c


@pytest.fixture
def sandbox_id(client: httpx.Client) -> str:
    """Create a sandbox and return its id."""
    resp = client.post("/v1/sandboxes", json=GOOD, headers=KEY)
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


@pytest.fixture
def execd(client: httpx.Client, sandbox_id: str) -> str:
    """Return the path prefix of the sandbox's execd."""
    return f"/direct/{sandbox_id}/44772"


def test_renew_with_an_overflowing_time_looks_up_the_sandbox_first(client: httpx.Client) -> None:
    resp = client.post("/v1/sandboxes/nope/renew-expiration", json={"expiresAt": OVERFLOWING}, headers=KEY)
    assert resp.status_code == 404 and resp.json()["code"] == "DOCKER::SANDBOX_NOT_FOUND"


def test_renew_with_an_overflowing_time_is_the_servers_plain_500(client: httpx.Client, sandbox_id: str) -> None:
    for when in (OVERFLOWING, "9999-12-31T23:59:00-01:00"):
        resp = client.post(f"/v1/sandboxes/{sandbox_id}/renew-expiration", json={"expiresAt": when}, headers=KEY)
        assert resp.status_code == 500 and resp.text == "Internal Server Error"
        assert resp.headers["content-type"].startswith("text/plain")
    ok = client.post(f"/v1/sandboxes/{sandbox_id}/renew-expiration", json={"expiresAt": "2999-01-01T00:00:00+02:00"})
    assert ok.status_code == 401  # no key: the fix did not bypass auth
    ok = client.post(
        f"/v1/sandboxes/{sandbox_id}/renew-expiration", json={"expiresAt": "2999-01-01T00:00:00+02:00"}, headers=KEY
    )
    assert ok.status_code == 200 and ok.json()["expiresAt"].startswith("2998-12-31T22:00:00")


def test_run_in_an_unknown_session_is_a_runtime_error_after_body_validation(client: httpx.Client, execd: str) -> None:
    bad = client.post(f"{execd}/session/nope/run", json={"command": ""})
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_REQUEST_BODY"
    resp = client.post(f"{execd}/session/nope/run", json={"command": "echo hi"})
    assert resp.status_code == 500
    assert resp.json() == {"code": "RUNTIME_ERROR", "message": "error running in session. context not found"}


def test_file_info_without_paths_is_an_empty_map(client: httpx.Client, execd: str) -> None:
    resp = client.get(f"{execd}/files/info")
    assert resp.status_code == 200 and resp.json() == {}
    empty = client.get(f"{execd}/files/info", params={"path": ""})
    assert empty.status_code == 200 and empty.json()[""]["type"] == "directory"  # the working directory


def test_deletes_without_paths_succeed(client: httpx.Client, execd: str) -> None:
    assert client.delete(f"{execd}/files").status_code == 200
    assert client.delete(f"{execd}/directories").status_code == 200
    assert client.delete(f"{execd}/directories", params={"path": ""}).status_code == 200
    resp = client.delete(f"{execd}/files", params={"path": ""})  # the working directory is no file
    assert resp.status_code == 500 and resp.json()["code"] == "RUNTIME_ERROR"


def test_chmod_of_a_missing_file_is_a_runtime_error(client: httpx.Client, execd: str) -> None:
    resp = client.post(f"{execd}/files/permissions", json={"/no/such/file": {"mode": 644}})
    assert resp.status_code == 500 and resp.json()["code"] == "RUNTIME_ERROR"


def test_a_path_with_a_nul_byte_is_a_runtime_error(client: httpx.Client, execd: str) -> None:
    for method, route in (("GET", "/files/info"), ("DELETE", "/files"), ("GET", "/files/search")):
        resp = client.request(method, f"{execd}{route}", params={"path": "/tmp/a\x00b"})
        assert resp.status_code == 500 and resp.json()["code"] == "RUNTIME_ERROR", route


def test_a_newline_in_an_execd_path_reaches_execd(client: httpx.Client, execd: str) -> None:
    resp = client.delete(f"{execd}/session/a%0Ab")
    assert resp.status_code == 404 and resp.json()["code"] == "CONTEXT_NOT_FOUND"
    status = client.get(f"{execd}/command/status/x%0Ay")
    assert status.status_code == 404 and set(status.json()) == {"code", "message"}
