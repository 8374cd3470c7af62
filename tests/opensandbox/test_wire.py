"""Wire-level behaviour: bad input (status, shape, state unchanged), auth, state machine, execd details."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock

from .conftest import API_KEY

KEY = {"OPEN-SANDBOX-API-KEY": API_KEY}
GOOD = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}


@contextlib.contextmanager
def serve(mock: OpenSandboxMock) -> Iterator[httpx.Client]:
    """Serve ``mock`` on a loopback socket and yield a client for it."""
    with mock.server() as srv, httpx.Client(base_url=srv.url) as c:
        yield c


@pytest.fixture
def client(mock: OpenSandboxMock) -> Iterator[httpx.Client]:
    with serve(mock) as c:
        yield c


def create(client: httpx.Client, **extra: Any) -> dict[str, Any]:
    resp = client.post("/v1/sandboxes", json={**GOOD, **extra}, headers=KEY)
    assert resp.status_code == 202, resp.text
    body: dict[str, Any] = resp.json()
    return body


BAD_CREATES: dict[str, tuple[bytes | None, int, str]] = {
    "malformed-json": (b'{"image": ', 422, "json_invalid"),
    "not-an-object": (b"[1, 2]", 422, "model_attributes_type"),
    "empty-body": (b"", 422, "missing"),
    "timeout-too-small": (json.dumps({**GOOD, "timeout": 10}).encode(), 422, "greater_than_equal"),
    "timeout-not-int": (json.dumps({**GOOD, "timeout": "soon"}).encode(), 422, "int_parsing"),
    "env-not-strings": (json.dumps({**GOOD, "env": {"A": 1}}).encode(), 422, "string_type"),
    "entrypoint-empty": (json.dumps({**GOOD, "entrypoint": []}).encode(), 422, "too_short"),
    "no-image-no-snapshot": (json.dumps({"entrypoint": ["sh"]}).encode(), 422, "value_error"),
    "empty-policy-target": (
        json.dumps({**GOOD, "networkPolicy": {"egress": [{"action": "allow", "target": ""}]}}).encode(),
        422,
        "string_too_short",
    ),
    "label-value-with-ampersand": (
        json.dumps({**GOOD, "metadata": {"purpose": "x&y=z"}}).encode(),
        400,
        "SANDBOX::INVALID_METADATA_LABEL",
    ),
    "label-reserved-prefix": (
        json.dumps({**GOOD, "metadata": {"opensandbox.io/id": "x"}}).encode(),
        400,
        "SANDBOX::INVALID_METADATA_LABEL",
    ),
    "label-key-too-long": (
        json.dumps({**GOOD, "metadata": {"k" * 64: "v"}}).encode(),
        400,
        "SANDBOX::INVALID_METADATA_LABEL",
    ),
    "policy-empty-target": (
        json.dumps({**GOOD, "networkPolicy": {"egress": [{"action": "allow", "target": ""}]}}).encode(),
        422,
        "string_too_short",
    ),
    "over-1-mib": (json.dumps({**GOOD, "env": {"BIG": "x" * (1024 * 1024)}}).encode(), 413, "payload_too_large"),
}


@pytest.mark.parametrize("name", sorted(BAD_CREATES))
def test_bad_create_keeps_state(mock: OpenSandboxMock, client: httpx.Client, name: str) -> None:
    create(client)
    before = mock.snapshot()
    raw, status, kind = BAD_CREATES[name]
    resp = client.post("/v1/sandboxes", content=raw, headers={**KEY, "content-type": "application/json"})
    assert resp.status_code == status, resp.text
    body = resp.json()
    if status == 422:
        assert set(body) == {"detail"} and body["detail"][0]["type"] == kind
        assert body["detail"][0]["loc"][0] == "body"
    else:
        assert set(body) == {"code", "message"} and body["code"] == kind
    assert resp.headers["x-request-id"]
    assert mock.snapshot() == before


def test_unknown_sandbox_and_bad_queries(mock: OpenSandboxMock, client: httpx.Client) -> None:
    before = mock.snapshot()
    for method, path in [
        ("GET", "/v1/sandboxes/nope"),
        ("DELETE", "/v1/sandboxes/nope"),
        ("POST", "/v1/sandboxes/nope/pause"),
        ("GET", "/sandboxes/nope/endpoints/44772"),
    ]:
        resp = client.request(method, path, headers=KEY)
        assert resp.status_code == 404 and resp.json() == {
            "code": "DOCKER::SANDBOX_NOT_FOUND",
            "message": "Sandbox nope not found.",
        }
    resp = client.get("/v1/sandboxes", params={"pageSize": 201}, headers=KEY)
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["query", "pageSize"]
    resp = client.get("/v1/sandboxes", params={"metadata": "a=1&broken"}, headers=KEY)
    assert resp.status_code == 400 and resp.json()["code"] == "INVALID_METADATA_FORMAT"
    resp = client.post("/v1/sandboxes/nope/renew-expiration", json={}, headers=KEY)
    assert resp.status_code == 422 and resp.json()["detail"][0]["type"] == "missing"
    assert mock.snapshot() == before


def test_auth_bodies_and_exemptions(client: httpx.Client) -> None:
    missing = client.get("/v1/sandboxes")
    assert missing.status_code == 401 and missing.json()["code"] == "MISSING_API_KEY"
    wrong = client.get("/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "nope"})
    assert wrong.status_code == 401 and wrong.json()["code"] == "INVALID_API_KEY"
    assert wrong.headers["x-request-id"]
    assert client.get("/health").json() == {"status": "healthy"}
    assert client.get("/version").json() == {"version": "1.1.1"}
    sid = create(client)["id"]
    assert client.get(f"/v1/sandboxes/{sid}/proxy/44772/ping").status_code == 200
    echoed = client.get("/v1/sandboxes", headers={**KEY, "X-Request-ID": "abc"})
    assert echoed.headers["x-request-id"] == "abc"


def test_multi_tenant_isolation() -> None:
    mock = OpenSandboxMock(seed=1, api_key={"ka": "team-a", "kb": "team-b"})
    with serve(mock) as client:
        sid = client.post("/v1/sandboxes", json=GOOD, headers={"OPEN-SANDBOX-API-KEY": "ka"}).json()["id"]
        assert client.get(f"/v1/sandboxes/{sid}", headers={"OPEN-SANDBOX-API-KEY": "kb"}).status_code == 404
        listed = client.get("/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "kb"}).json()
        assert listed["items"] == [] and listed["pagination"]["totalPages"] == 0
        assert client.get(f"/v1/sandboxes/{sid}/proxy/44772/ping").status_code == 401


def test_registry_credentials_are_never_returned(client: httpx.Client) -> None:
    image = {"uri": "registry.example/app:1", "auth": {"username": "bot", "password": "hunter2"}}
    created = client.post("/v1/sandboxes", json={**GOOD, "image": image}, headers=KEY)
    assert created.status_code == 202 and "hunter2" not in created.text
    got = client.get(f"/v1/sandboxes/{created.json()['id']}", headers=KEY)
    assert got.json()["image"] == {"uri": "registry.example/app:1"}
    listed = client.get("/v1/sandboxes", headers=KEY)
    assert "hunter2" not in listed.text and "auth" not in listed.json()["items"][0]["image"]


def test_create_shape_list_order_and_pagination(mock: OpenSandboxMock, client: httpx.Client) -> None:
    first = create(client, metadata={"team": "a"})
    mock.advance(1)
    second = create(client, metadata={"team": "a"}, timeout=None)
    assert set(first) == {"id", "status", "metadata", "expiresAt", "createdAt", "entrypoint"}
    assert "expiresAt" not in second and first["status"]["state"] == "Running"
    page = client.get("/v1/sandboxes", params={"metadata": "team=a", "pageSize": 1}, headers=KEY).json()
    assert [i["id"] for i in page["items"]] == [second["id"]]
    assert page["pagination"] == {"page": 1, "pageSize": 1, "totalItems": 2, "totalPages": 2, "hasNextPage": True}
    renew = client.post(
        f"/v1/sandboxes/{second['id']}/renew-expiration", json={"expiresAt": "2030-01-01T00:00:00Z"}, headers=KEY
    )
    assert renew.status_code == 409 and renew.json()["code"] == "DOCKER::INVALID_EXPIRATION"
    past = client.post(
        f"/v1/sandboxes/{first['id']}/renew-expiration", json={"expiresAt": "2020-01-01T00:00:00Z"}, headers=KEY
    )
    assert past.status_code == 400 and past.json()["message"] == "New expiration time must be in the future."


def test_state_machine_docker(mock: OpenSandboxMock, client: httpx.Client) -> None:
    sid = create(client)["id"]
    assert client.post(f"/v1/sandboxes/{sid}/resume", headers=KEY).json()["code"] == "DOCKER::SANDBOX_NOT_PAUSED"
    assert client.post(f"/v1/sandboxes/{sid}/pause", headers=KEY).status_code == 202
    again = client.post(f"/v1/sandboxes/{sid}/pause", headers=KEY)
    assert again.status_code == 409 and again.json()["code"] == "DOCKER::SANDBOX_NOT_RUNNING"
    direct = client.get(f"/direct/{sid}/44772/ping")
    assert direct.status_code == 502 and direct.text == "Bad Gateway"
    proxied = client.get(f"/v1/sandboxes/{sid}/proxy/44772/ping", headers=KEY)
    assert proxied.status_code == 502 and proxied.json()["code"] == "BACKEND_CONNECTION_FAILED"
    mock.advance(601)
    assert client.get(f"/v1/sandboxes/{sid}", headers=KEY).status_code == 404


def test_kubernetes_profile_transitions() -> None:
    mock = OpenSandboxMock(seed=2, profile="kubernetes", clock=VirtualClock("manual"), stop_seconds=2)
    with serve(mock) as client:
        sid = client.post("/v1/sandboxes", json=GOOD).json()["id"]
        assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Pending"
        ep = client.get(f"/v1/sandboxes/{sid}/endpoints/44772")
        assert ep.status_code == 404 and ep.json()["code"] == "KUBERNETES::POD_IP_NOT_AVAILABLE"
        mock.advance(3)
        assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Running"
        endpoint = client.get(f"/v1/sandboxes/{sid}/endpoints/44772", params={"use_server_proxy": "true"}).json()
        assert endpoint["endpoint"] == f"{client.base_url.netloc.decode()}/v1/sandboxes/{sid}/proxy/44772"
        client.post(f"/v1/sandboxes/{sid}/pause")
        assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Pausing"
        assert client.post(f"/v1/sandboxes/{sid}/resume").json()["code"] == "KUBERNETES::INVALID_STATE"
        mock.advance(1)
        assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Paused"
        assert client.delete(f"/v1/sandboxes/{sid}").status_code == 204
        assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["state"] == "Stopping"
        mock.advance(2)
        assert client.get(f"/v1/sandboxes/{sid}").status_code == 404


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(chunk) for chunk in text.split("\n\n") if chunk.strip()]


def test_execd_sse_framing_status_and_timeout(mock: OpenSandboxMock, client: httpx.Client) -> None:
    sid = create(client)["id"]
    base = f"/direct/{sid}/44772"
    resp = client.post(f"{base}/command", json={"command": "echo hi; exit 4"})
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = sse_events(resp.text)
    assert [e["type"] for e in events] == ["init", "stdout", "error"]
    assert all(isinstance(e["timestamp"], int) for e in events)
    assert events[-1]["error"] == {"ename": "CommandExecError", "evalue": "4", "traceback": ["exit status 4"]}
    status = client.get(f"{base}/command/status/{events[0]['text']}").json()
    assert status["exit_code"] == 4 and status["error"] == "exit status 4" and status["running"] is False
    missing = client.get(f"{base}/command/status/nope")
    assert missing.status_code == 404 and missing.json() == {
        "code": "INVALID_REQUEST_BODY",
        "message": "command not found: nope",
    }
    assert client.get(f"{base}/command/{events[0]['text']}/logs").status_code == 400
    before = mock.clock.now()
    killed = sse_events(client.post(f"{base}/command", json={"command": "sleep 10; echo late", "timeout": 2000}).text)
    assert killed[-1]["type"] == "error" and killed[-1]["error"]["evalue"] == "-1"
    assert mock.clock.now() - before == pytest.approx(2.0)
    pinged = sse_events(client.post(f"{base}/command", json={"command": "sleep 7"}).text)
    assert [e["type"] for e in pinged] == ["init", "ping", "ping", "execution_complete"]
    bg = sse_events(client.post(f"{base}/command", json={"command": "echo a", "background": True}).text)
    assert [e["type"] for e in bg] == ["init", "execution_complete"]


def test_missing_working_directory_is_a_400_before_streaming(mock: OpenSandboxMock, client: httpx.Client) -> None:
    """Issue 12.11: real execd 1.0.11+ answers 400 ``INVALID_REQUEST_BODY`` (NeMo Gym does not retry it), not 500."""
    sid = create(client)["id"]
    resp = client.post(f"/direct/{sid}/44772/command", json={"command": "echo hi", "cwd": "/home/user"})
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "code": "INVALID_REQUEST_BODY",
            "message": "invalid request, validation error working directory does not exist: /home/user",
        },
    )
    assert mock.sandbox(sid).commands == {}


def test_pty_routes_answer_execds_error_shapes(client: httpx.Client) -> None:
    """Issue 12.12: a PTY session lookup is execd's 404 ``CONTEXT_NOT_FOUND`` (NeMo Gym keys on the code)."""
    sid = create(client)["id"]
    for base in (f"/direct/{sid}/44772", f"/v1/sandboxes/{sid}/proxy/44772"):
        for method in ("GET", "DELETE"):
            resp = client.request(method, f"{base}/pty/nope")
            assert (resp.status_code, resp.json()) == (
                404,
                {"code": "CONTEXT_NOT_FOUND", "message": "pty session nope not found"},
            ), (base, method)
        made = client.post(f"{base}/pty", json={"cwd": "/tmp"})
        assert (made.status_code, made.json()["code"]) == (501, "NOT_SUPPORTED")


def test_egress_sidecar_errors_are_plain_text(mock: OpenSandboxMock, client: httpx.Client) -> None:
    sid = create(client, networkPolicy={"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.com"}]})[
        "id"
    ]
    before = mock.snapshot()
    bad = client.patch(f"/direct/{sid}/18080/policy", json=[{"action": "allow", "target": "1.2.3.0/24"}])
    assert bad.status_code == 400 and bad.headers["content-type"].startswith("text/plain")
    empty = client.patch(f"/direct/{sid}/18080/policy", json=[])
    assert empty.status_code == 400
    assert mock.snapshot() == before
    ok = client.request("DELETE", f"/direct/{sid}/18080/policy", json=["a.com", "unknown.org"])
    assert ok.json() == {"status": "ok", "mode": "deny_all", "enforcementMode": "dns"}
    plain = create(client)["id"]
    assert client.get(f"/direct/{plain}/18080/policy").status_code == 502
    via_server = client.get(f"/v1/sandboxes/{sid}/networkpolicy", headers=KEY).json()
    assert via_server["policy"] == {"defaultAction": "deny", "egress": []}


def test_snapshot_restore_round_trip(mock: OpenSandboxMock, client: httpx.Client) -> None:
    sid = create(client, metadata={"k": "v"})["id"]
    client.post(f"/direct/{sid}/44772/command", json={"command": "echo data > /tmp/f"})
    snap = client.post(f"/v1/sandboxes/{sid}/snapshots", json={"name": "s1"}, headers=KEY)
    assert snap.status_code == 202 and snap.headers["location"] == f"/v1/snapshots/{snap.json()['id']}"
    restored = create(client, image=None, snapshotId=snap.json()["id"])
    assert mock.sandbox(restored["id"]).fs.read("/tmp/f") == b"data\n"
    saved = mock.snapshot()
    client.delete(f"/v1/sandboxes/{sid}", headers=KEY)
    mock.restore(saved)
    assert mock.sandbox(sid).spec.metadata == {"k": "v"}
    assert mock.sandbox(sid).fs.read("/tmp/f") == b"data\n"


@pytest.mark.parametrize(
    "rule",
    [
        {"action": "allow", "target": "*"},
        {"action": "allow", "target": "10.0.0.0/8"},
        {"action": "maybe", "target": "a.com"},
        {"action": "allow", "target": "a.com", "comment": "an extra key the body model ignores"},
    ],
    ids=["star", "cidr", "bad-action", "extra-key"],
)
def test_create_takes_any_policy_its_body_model_takes(mock: OpenSandboxMock, client: httpx.Client, rule: Any) -> None:
    """The server checks a policy's shape only (202, as opensandbox-server 1.1.1 answers); the sidecar judges it."""
    from mockserver.opensandbox.model.egress import effective_policy, egress_allowed

    body = {**GOOD, "networkPolicy": {"defaultAction": "deny", "egress": [rule]}}
    resp = client.post("/v1/sandboxes", json=body, headers=KEY)
    assert resp.status_code == 202, resp.text
    sandbox_id = resp.json()["id"]
    sb = mock.sandbox(sandbox_id)
    sidecar = client.get(f"/v1/sandboxes/{sandbox_id}/proxy/18080/policy", headers=KEY)
    if rule.get("comment"):  # the sidecar gets the body model's dump: the extra key is gone, the rule runs
        assert sb.spec.sidecar_refusal is None and sidecar.status_code == 200
        assert egress_allowed(effective_policy(sb), "a.com") and not egress_allowed(effective_policy(sb), "b.com")
        return
    assert sb.spec.sidecar_refusal is not None and not sb.has_sidecar
    assert sidecar.status_code == 502 and sidecar.json()["code"] == "BACKEND_CONNECTION_FAILED"
    assert not egress_allowed(effective_policy(sb), "a.com")  # no sidecar, no network: nothing gets out
