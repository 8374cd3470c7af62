"""Document the real opensandbox-server 1.1.1 (Docker runtime on the fake Engine API): ground truth for diffs."""

from __future__ import annotations

import re
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.differential.fake_docker import ThreadedServer
from harness.differential.real_server import RealOpenSandboxServer, strip_execd_proxy_prefix
from tests.opensandbox.create_cases import (
    ACCEPTED_VOLUMES,
    ECHOED_PLATFORM,
    LIFECYCLE_CASES,
    MODE_CASES,
    NETWORK_POLICY_CASES,
    PLATFORM_CASES,
    SECURE_ACCESS_CASES,
    VOLUME_CASES,
)
from tests.opensandbox.diagnostics_cases import DIAGNOSED_BODY, check_diagnostics, check_refusals
from tests.opensandbox.http_cases import (
    check_allow,
    check_cors,
    check_metrics_sandbox_ids,
    check_network_policy_body_first,
    check_pools_and_templates,
)

pytestmark = pytest.mark.timeout(120)

CREATE_BODY: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "secureAccess": False,
}
MISSING_KEY = {
    "code": "MISSING_API_KEY",
    "message": "Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.",
}
INVALID_KEY = {
    "code": "INVALID_API_KEY",
    "message": "Authentication credentials are invalid. Check your API key and try again.",
}
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
RFC3339_MICRO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


def _ts(value: str) -> datetime:
    """Parse the server's RFC 3339 `Z` timestamps."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _not_found(sid: str) -> dict[str, str]:
    """Return the Docker runtime's 404 body for `sid`."""
    return {"code": "DOCKER::SANDBOX_NOT_FOUND", "message": f"Sandbox {sid} not found."}


@pytest.fixture(scope="module")
def real() -> Iterator[RealOpenSandboxServer]:
    """Start one real server for the module."""
    with RealOpenSandboxServer() as server:
        yield server


@pytest.fixture(scope="module")
def api(real: RealOpenSandboxServer) -> Iterator[httpx.Client]:
    """Return an authenticated client for the real server."""
    with httpx.Client(base_url=f"{real.url}/v1", headers=real.headers, trust_env=False, timeout=30) as client:
        yield client


@pytest.fixture
def anon(real: RealOpenSandboxServer) -> Iterator[httpx.Client]:
    """Return a client that sends no API key."""
    with httpx.Client(base_url=real.url, trust_env=False, timeout=30) as client:
        yield client


def _create(api: httpx.Client, **fields: Any) -> dict[str, Any]:
    """Create a sandbox and return the 202 body."""
    resp = api.post("/sandboxes", json={**CREATE_BODY, **fields})
    assert resp.status_code == 202, resp.text
    body: dict[str, Any] = resp.json()
    return body


def test_startup_time_and_health(real: RealOpenSandboxServer, anon: httpx.Client, record_property: Any) -> None:
    """Start within the budget; `/health` and `/version` are open, their `/v1` twins need the key."""
    record_property("real_opensandbox_startup_seconds", round(real.startup_seconds, 2))
    assert 0 < real.startup_seconds < 30
    health = anon.get("/health")
    assert (health.status_code, health.json()) == (200, {"status": "healthy"})
    assert health.headers["vary"] == "Origin"
    assert re.fullmatch(r"[0-9a-f]{32}", health.headers["x-request-id"])
    version = anon.get("/version")
    assert (version.status_code, version.json()) == (200, {"version": "1.1.1"})
    for path in ("/v1/health", "/v1/version"):
        resp = anon.get(path)
        assert (resp.status_code, resp.json()) == (401, MISSING_KEY)


def test_auth_failures_are_flat_401(anon: httpx.Client) -> None:
    """Answer a missing or wrong key with 401 and the flat `{code, message}` bodies."""
    for method in ("GET", "POST"):
        resp = anon.request(method, "/v1/sandboxes", json=CREATE_BODY if method == "POST" else None)
        assert (resp.status_code, resp.json()) == (401, MISSING_KEY)
        assert resp.headers["content-type"] == "application/json"
    wrong = anon.get("/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "wrong"})
    assert (wrong.status_code, wrong.json()) == (401, INVALID_KEY)


def test_request_id_is_echoed(api: httpx.Client) -> None:
    """Echo a caller's `X-Request-ID`."""
    resp = api.get("/sandboxes", headers={"X-Request-ID": "sandproof-req-1"})
    assert resp.headers["x-request-id"] == "sandproof-req-1"


def test_create_is_202_with_running_state(api: httpx.Client) -> None:
    """Create synchronously: 202, state Running, null fields omitted, no `image` echoed."""
    resp = api.post("/sandboxes", json={**CREATE_BODY, "metadata": {"team": "a", "purpose": "demo"}})
    assert resp.status_code == 202
    body = resp.json()
    assert set(body) == {"id", "status", "metadata", "expiresAt", "createdAt", "entrypoint"}
    assert UUID4.match(body["id"])
    assert body["status"] == {
        "state": "Running",
        "reason": "CONTAINER_RUNNING",
        "message": "Sandbox container started successfully.",
        "lastTransitionAt": body["createdAt"],
    }
    assert body["metadata"] == {"team": "a", "purpose": "demo"}
    assert body["entrypoint"] == ["tail", "-f", "/dev/null"]
    assert RFC3339_MICRO_Z.match(body["createdAt"]) and RFC3339_MICRO_Z.match(body["expiresAt"])
    assert _ts(body["expiresAt"]) - _ts(body["createdAt"]) == timedelta(seconds=600)


def test_create_without_timeout_or_metadata_omits_fields(api: httpx.Client) -> None:
    """Leave out `expiresAt` for `timeout: null` and `metadata` when none was given."""
    body = _create(api, timeout=None)
    assert set(body) == {"id", "status", "createdAt", "entrypoint"}
    got = api.get(f"/sandboxes/{body['id']}").json()
    assert "expiresAt" not in got and "metadata" not in got


def test_get_sandbox_shape(real: RealOpenSandboxServer, api: httpx.Client) -> None:
    """Return the `Sandbox` model; `createdAt` is re-read from the container, not the create reply."""
    created = _create(api, metadata={"team": "get"})
    resp = api.get(f"/sandboxes/{created['id']}")
    assert resp.status_code == 200
    got = resp.json()
    assert set(got) == {"id", "image", "status", "metadata", "entrypoint", "expiresAt", "createdAt"}
    assert got["image"] == {"uri": "python:3.11"}
    assert got["status"] == {
        "state": "Running",
        "reason": "CONTAINER_RUNNING",
        "message": "Sandbox container is running.",
        "lastTransitionAt": got["createdAt"],
    }
    assert got["expiresAt"] == created["expiresAt"]
    assert abs(_ts(got["createdAt"]) - _ts(created["createdAt"])) < timedelta(seconds=5)
    assert api.get(f"{real.url}/sandboxes/{created['id']}").json() == got  # also served without /v1


def test_list_metadata_filter_and_pagination(api: httpx.Client) -> None:
    """Filter with AND over metadata, OR over case-insensitive states; paginate newest first."""
    run = uuid.uuid4().hex[:10]
    first = _create(api, metadata={"run": run, "role": "a"})
    second = _create(api, metadata={"run": run, "role": "b"})
    resp = api.get("/sandboxes", params={"metadata": f"run={run}"})
    assert resp.status_code == 200
    body = resp.json()
    assert set(body) == {"items", "pagination"}
    assert [item["id"] for item in body["items"]] == [second["id"], first["id"]]
    assert body["pagination"] == {"page": 1, "pageSize": 20, "totalItems": 2, "totalPages": 1, "hasNextPage": False}
    assert set(body["items"][0]) == {"id", "image", "status", "metadata", "entrypoint", "expiresAt", "createdAt"}
    only_a = api.get("/sandboxes", params={"metadata": f"run={run}&role=a", "state": "running"}).json()
    assert [item["id"] for item in only_a["items"]] == [first["id"]]
    paged = api.get("/sandboxes", params={"metadata": f"run={run}", "pageSize": 1, "page": 2}).json()
    assert [item["id"] for item in paged["items"]] == [first["id"]]
    assert paged["pagination"] == {"page": 2, "pageSize": 1, "totalItems": 2, "totalPages": 2, "hasNextPage": False}
    none = api.get("/sandboxes", params={"metadata": f"run={run}", "state": ["Paused", "Failed"]}).json()
    assert none == {
        "items": [],
        "pagination": {"page": 1, "pageSize": 20, "totalItems": 0, "totalPages": 0, "hasNextPage": False},
    }


def test_list_bad_query(api: httpx.Client) -> None:
    """Reject a malformed metadata filter with 400 and pageSize > 200 with a FastAPI 422."""
    bad = api.get("/sandboxes", params={"metadata": "=&&"})
    assert (bad.status_code, bad.json()) == (
        400,
        {"code": "INVALID_METADATA_FORMAT", "message": "Invalid metadata format: bad query field: ''"},
    )
    big = api.get("/sandboxes", params={"pageSize": 500})
    assert big.status_code == 422
    assert big.json() == {
        "detail": [
            {
                "type": "less_than_equal",
                "loc": ["query", "pageSize"],
                "msg": "Input should be less than or equal to 200",
                "input": "500",
                "ctx": {"le": 200},
            }
        ]
    }


def test_renew_expiration(api: httpx.Client) -> None:
    """Renew to a future time (200, normalised to `Z`); past is 400, missing field is 422."""
    sid = _create(api)["id"]
    resp = api.post(f"/sandboxes/{sid}/renew-expiration", json={"expiresAt": "2030-01-01T00:00:00+00:00"})
    assert (resp.status_code, resp.json()) == (200, {"expiresAt": "2030-01-01T00:00:00Z"})
    assert api.get(f"/sandboxes/{sid}").json()["expiresAt"] == "2030-01-01T00:00:00Z"
    past = api.post(f"/sandboxes/{sid}/renew-expiration", json={"expiresAt": "2020-01-01T00:00:00+00:00"})
    assert (past.status_code, past.json()) == (
        400,
        {"code": "DOCKER::INVALID_EXPIRATION", "message": "New expiration time must be in the future."},
    )
    missing = api.post(f"/sandboxes/{sid}/renew-expiration", json={})
    assert (missing.status_code, missing.json()) == (
        422,
        {"detail": [{"type": "missing", "loc": ["body", "expiresAt"], "msg": "Field required", "input": {}}]},
    )
    gone = api.post("/sandboxes/no-such-id/renew-expiration", json={"expiresAt": "2030-01-01T00:00:00Z"})
    assert (gone.status_code, gone.json()) == (404, _not_found("no-such-id"))


def test_pause_and_resume(api: httpx.Client) -> None:
    """Pause/resume answer 202 with no body; the state flips at once (Paused, then Running); repeats are 409."""
    sid = _create(api)["id"]
    paused = api.post(f"/sandboxes/{sid}/pause")
    assert (paused.status_code, paused.content) == (202, b"")
    assert "content-type" not in paused.headers
    status = api.get(f"/sandboxes/{sid}").json()["status"]
    assert {k: status[k] for k in ("state", "reason", "message")} == {
        "state": "Paused",
        "reason": "CONTAINER_PAUSED",
        "message": "Sandbox container is paused.",
    }
    again = api.post(f"/sandboxes/{sid}/pause")
    assert (again.status_code, again.json()) == (
        409,
        {"code": "DOCKER::SANDBOX_NOT_RUNNING", "message": "Sandbox is not in a running state."},
    )
    resumed = api.post(f"/sandboxes/{sid}/resume")
    assert (resumed.status_code, resumed.content) == (202, b"")
    assert api.get(f"/sandboxes/{sid}").json()["status"]["state"] == "Running"
    twice = api.post(f"/sandboxes/{sid}/resume")
    assert (twice.status_code, twice.json()) == (
        409,
        {"code": "DOCKER::SANDBOX_NOT_PAUSED", "message": "Sandbox is not in a paused state."},
    )


def test_delete_then_404(api: httpx.Client) -> None:
    """Delete answers 204 with no body; afterwards delete, get and endpoints are 404 `SANDBOX_NOT_FOUND`."""
    sid = _create(api)["id"]
    resp = api.delete(f"/sandboxes/{sid}")
    assert (resp.status_code, resp.content) == (204, b"")
    for method, path in (("DELETE", ""), ("GET", ""), ("GET", "/endpoints/44772"), ("POST", "/pause")):
        again = api.request(method, f"/sandboxes/{sid}{path}")
        assert (again.status_code, again.json()) == (404, _not_found(sid))


def test_invalid_metadata_label_is_400(api: httpx.Client) -> None:
    """Reject non-label metadata and the reserved prefix with 400 `SANDBOX::INVALID_METADATA_LABEL`."""
    resp = api.post("/sandboxes", json={**CREATE_BODY, "metadata": {"team": "x&y=z"}})
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "code": "SANDBOX::INVALID_METADATA_LABEL",
            "message": "Metadata value 'x&y=z' is invalid: must be 63 characters or less, start/end with an "
            "alphanumeric character, and contain only alphanumeric, '-', '_', or '.' characters.",
        },
    )
    reserved = api.post("/sandboxes", json={**CREATE_BODY, "metadata": {"opensandbox.io/x": "y"}})
    assert reserved.status_code == 400
    assert reserved.json()["code"] == "SANDBOX::INVALID_METADATA_LABEL"
    assert "reserved prefix 'opensandbox.io/'" in reserved.json()["message"]


def test_validation_errors_are_fastapi_422(api: httpx.Client) -> None:
    """Send FastAPI's un-normalised `{"detail": [...]}` for request validation failures."""
    short = api.post("/sandboxes", json={**CREATE_BODY, "timeout": 10})
    assert (short.status_code, short.json()) == (
        422,
        {
            "detail": [
                {
                    "type": "greater_than_equal",
                    "loc": ["body", "timeout"],
                    "msg": "Input should be greater than or equal to 60",
                    "input": 10,
                    "ctx": {"ge": 60},
                }
            ]
        },
    )
    no_limits = {k: v for k, v in CREATE_BODY.items() if k != "resourceLimits"}
    resp = api.post("/sandboxes", json=no_limits)
    assert resp.status_code == 422
    [detail] = resp.json()["detail"]
    assert (detail["type"], detail["loc"]) == ("value_error", ["body"])
    assert detail["msg"] == "Value error, resourceLimits is required when poolRef is not provided."
    no_image = api.post("/sandboxes", json={"timeout": 600}).json()["detail"][0]
    assert no_image["msg"] == "Value error, Exactly one of image or snapshotId must be provided."
    not_json = api.post("/sandboxes", content=b"nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 422
    assert not_json.json()["detail"][0]["type"] == "json_invalid"


@pytest.mark.parametrize("case", sorted(VOLUME_CASES))
def test_bad_volumes_are_refused(api: httpx.Client, case: str) -> None:
    """Refuse bad ``volumes``: FastAPI 422s for the body model, 400 ``VOLUME::*`` for the runtime's checks."""
    volumes, (status, body) = VOLUME_CASES[case]
    resp = api.post("/sandboxes", json={**CREATE_BODY, "volumes": volumes})
    assert (resp.status_code, resp.json()) == (status, body)


@pytest.mark.parametrize("case", sorted(PLATFORM_CASES))
def test_bad_platforms_are_refused(api: httpx.Client, case: str) -> None:
    """Refuse an unknown ``platform.os`` / ``arch`` with 400 ``SANDBOX::INVALID_PARAMETER``."""
    platform, (status, body) = PLATFORM_CASES[case]
    resp = api.post("/sandboxes", json={**CREATE_BODY, "platform": platform})
    assert (resp.status_code, resp.json()) == (status, body)


@pytest.mark.parametrize("case", sorted(NETWORK_POLICY_CASES))
def test_network_policies_without_an_egress_image(api: httpx.Client, case: str) -> None:
    """Check a ``networkPolicy``'s shape (422), then refuse any policy: no egress sidecar image is configured."""
    fields, (status, body) = NETWORK_POLICY_CASES[case]
    resp = api.post("/sandboxes", json={**CREATE_BODY, **fields})
    assert (resp.status_code, resp.json()) == (status, body)


@pytest.mark.parametrize("case", sorted(LIFECYCLE_CASES))
def test_lifecycle_hooks(api: httpx.Client, case: str) -> None:
    """Check ``lifecycle`` against the hook models (422), then refuse hooks on Docker (400)."""
    hooks, (status, body) = LIFECYCLE_CASES[case]
    resp = api.post("/sandboxes", json={**CREATE_BODY, "lifecycle": hooks})
    assert (resp.status_code, resp.json()) == (status, body)


@pytest.mark.parametrize("case", sorted(SECURE_ACCESS_CASES))
def test_secure_access_booleans(api: httpx.Client, case: str) -> None:
    """Read ``secureAccess`` as pydantic's lax boolean (null refused), then refuse a true one on Docker (400)."""
    value, status, kind = SECURE_ACCESS_CASES[case]
    resp = api.post("/sandboxes", json={**CREATE_BODY, "secureAccess": value})
    assert resp.status_code == status, resp.text
    if kind is not None:
        assert [(e["type"], e["loc"]) for e in resp.json()["detail"]] == [(kind, ["body", "secureAccess"])]


@pytest.mark.parametrize("case", sorted(MODE_CASES))
def test_template_pool_and_credential_proxy_modes(api: httpx.Client, case: str) -> None:
    """Template mode, pool mode and ``credentialProxy``: the body model's validator in its order, then Docker's checks."""
    body, (status, expected) = MODE_CASES[case]
    resp = api.post("/sandboxes", json=body)
    assert (resp.status_code, resp.json() if resp.status_code != 202 else "<created>") == (status, expected)


def test_no_volumes_and_a_normalised_platform_are_accepted(api: httpx.Client) -> None:
    """Accept empty or null ``volumes``; echo a platform stripped and in lower case."""
    for volumes in ACCEPTED_VOLUMES:
        assert api.post("/sandboxes", json={**CREATE_BODY, "volumes": volumes}).status_code == 202
    sent, echoed = ECHOED_PLATFORM
    created = _create(api, platform=sent)
    assert created["platform"] == echoed
    assert api.get(f"/sandboxes/{created['id']}").json()["platform"] == echoed


def test_snapshot_is_resolved_first_and_restores_with_the_default_entrypoint(api: httpx.Client) -> None:
    """Look up ``snapshotId`` before the label and platform checks; a restore without entrypoint gets one."""
    restore = {"resourceLimits": {"cpu": "1"}, "timeout": 600}
    bad = {**restore, "snapshotId": "nope", "metadata": {"a": "x&y"}, "platform": {"os": "plan9", "arch": "x"}}
    resp = api.post("/sandboxes", json=bad)
    assert (resp.status_code, resp.json()) == (
        404,
        {"code": "SNAPSHOT::NOT_FOUND", "message": "Snapshot nope not found"},
    )
    snapshot = api.post(f"/sandboxes/{_create(api)['id']}/snapshots", json={"name": "s1"}).json()["id"]
    deadline = time.monotonic() + 10
    while api.get(f"/snapshots/{snapshot}").json()["status"]["state"] != "Ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    restored = api.post("/sandboxes", json={**restore, "snapshotId": snapshot})
    assert restored.status_code == 202, restored.text
    assert restored.json()["entrypoint"] == ["tail", "-f", "/dev/null"]


def test_endpoints(real: RealOpenSandboxServer, api: httpx.Client) -> None:
    """Resolve execd via the host-mapped execd port (`/proxy/<port>`), or the server itself in proxy mode."""
    sid = _create(api)["id"]
    execd = api.get(f"/sandboxes/{sid}/endpoints/44772")
    assert execd.status_code == 200
    assert set(execd.json()) == {"endpoint"}
    match = re.fullmatch(r"127\.0\.0\.1:(\d+)/proxy/44772", execd.json()["endpoint"])
    assert match, execd.json()
    egress = api.get(f"/sandboxes/{sid}/endpoints/18080").json()
    assert egress == {"endpoint": f"127.0.0.1:{match.group(1)}/proxy/18080"}
    http = api.get(f"/sandboxes/{sid}/endpoints/8080").json()["endpoint"]
    assert re.fullmatch(r"127\.0\.0\.1:\d+", http) and http != f"127.0.0.1:{match.group(1)}"
    proxied = api.get(f"/sandboxes/{sid}/endpoints/44772", params={"use_server_proxy": "true"})
    assert proxied.json() == {"endpoint": f"127.0.0.1:{real.port}/v1/sandboxes/{sid}/proxy/44772"}
    bad_port = api.get(f"/sandboxes/{sid}/endpoints/0")
    assert (bad_port.status_code, bad_port.json()) == (
        400,
        {"code": "DOCKER::INVALID_PORT", "message": "Port must be between 1 and 65535."},
    )
    signed = api.get(f"/sandboxes/{sid}/endpoints/44772", params={"expires": 2_000_000_000})
    assert signed.status_code == 400
    assert signed.json()["code"] == "SANDBOX::API_NOT_SUPPORTED"
    unknown = api.get("/sandboxes/no-such-id/endpoints/44772")
    assert (unknown.status_code, unknown.json()) == (404, _not_found("no-such-id"))


def test_proxy_needs_no_key_and_502s_without_execd(api: httpx.Client, anon: httpx.Client) -> None:
    """Proxy routes skip auth; with nothing on 127.0.0.1:44772 the proxy answers 502 `BACKEND_CONNECTION_FAILED`."""
    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", 44772)) == 0:
            pytest.skip("something listens on 127.0.0.1:44772")
    sid = _create(api)["id"]
    resp = anon.get(f"/v1/sandboxes/{sid}/proxy/44772/ping")
    assert resp.status_code == 502
    assert resp.json()["code"] == "BACKEND_CONNECTION_FAILED"
    assert resp.json()["message"].startswith("Could not connect to the backend sandbox 127.0.0.1:44772: ")


@pytest.fixture
def root(real: RealOpenSandboxServer) -> Iterator[httpx.Client]:
    """Return an authenticated client on the server root (``/health`` and ``/v1/...`` alike)."""
    with httpx.Client(base_url=real.url, headers=real.headers, trust_env=False, timeout=30) as client:
        yield client


def test_405s_carry_allow_and_head_is_not_served(api: httpx.Client, root: httpx.Client) -> None:
    """Answer HEAD and every other unserved method with 405 and the path's first route's method in ``Allow``."""
    check_allow(root, _create(api)["id"])


def test_diagnostics(api: httpx.Client, root: httpx.Client) -> None:
    """Serve inspect and summary as text, logs and events as deprecated text or (with a scope) a JSON descriptor."""
    resp = api.post("/sandboxes", json=DIAGNOSED_BODY)
    assert resp.status_code == 202, resp.text
    check_diagnostics(root, resp.json()["id"])
    check_refusals(root)


def test_cors(api: httpx.Client, root: httpx.Client, anon: httpx.Client) -> None:
    """Answer preflights before auth; echo the origin with credentials on every answer to a request with one."""
    check_cors(root, anon, _create(api)["id"])


def test_pools_and_templates_are_501_after_body_validation(root: httpx.Client) -> None:
    """Refuse pools (``KUBERNETES::POOL_NOT_SUPPORTED``) and templates (``FSB::API_NOT_SUPPORTED``) on Docker."""
    check_pools_and_templates(root)


def test_metrics_event_sandbox_id(root: httpx.Client) -> None:
    """Refuse a metrics event whose ``sandboxId`` is not a string or null with 422."""
    check_metrics_sandbox_ids(root)


def test_network_policy_checks_the_body_first(root: httpx.Client) -> None:
    """Answer a bad ``/networkpolicy`` body with 422 even for an unknown sandbox."""
    check_network_policy_body_first(root)


def test_fake_docker_saw_only_known_calls(real: RealOpenSandboxServer) -> None:
    """Serve every Docker call the server made in this module."""
    assert real.fake_docker.unhandled == []


def test_execd_hook_routes_proxy_and_direct_traffic() -> None:
    """Reach an execd look-alike through the server proxy and through the direct endpoint."""
    seen: list[str] = []

    async def echo(request: Request) -> Response:
        seen.append(f"{request.method} {request.url.path}?{request.url.query}")
        return JSONResponse({"path": request.url.path})

    app = Starlette(routes=[Route("/{rest:path}", echo, methods=["GET", "POST"])])
    execd = ThreadedServer(strip_execd_proxy_prefix(app)).start()
    try:
        with (
            RealOpenSandboxServer(execd_port=execd.port) as server,
            httpx.Client(base_url=server.url, headers=server.headers, trust_env=False) as client,
        ):
            sid = client.post("/v1/sandboxes", json=CREATE_BODY).json()["id"]
            via_proxy = client.get(f"/v1/sandboxes/{sid}/proxy/44772/command/status/x", params={"a": "1"})
            assert (via_proxy.status_code, via_proxy.json()) == (200, {"path": "/command/status/x"})
            endpoint = client.get(f"/v1/sandboxes/{sid}/endpoints/44772").json()["endpoint"]
            direct = httpx.get(f"http://{endpoint}/ping", trust_env=False)
            assert (direct.status_code, direct.json()) == (200, {"path": "/ping"})
            assert client.delete(f"/v1/sandboxes/{sid}").status_code == 204
            assert server.fake_docker.unhandled == []
    finally:
        execd.stop()
    assert seen == ["GET /command/status/x?a=1", "GET /ping?"]
