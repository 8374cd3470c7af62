"""The sandbox proxy with plain httpx: Host-header routing, the auth table, cookies, auto-resume, WebSockets."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from mockserver.tensorlake import TensorLakeMock

from .conftest import API_KEY, OTHER_KEY, free_socket

DOMAIN = "sandbox.localhost"
ORG, PROJECT = "org_1", "proj_1"


def make(http: httpx.Client, **body: Any) -> str:
    """Create a sandbox through the lifecycle API and return its id."""
    response = http.post("/sandboxes", json=body)
    assert response.status_code == 200, response.text
    sid: str = response.json()["sandbox_id"]
    return sid


def host(label: str, port: int | None = None) -> str:
    """Return the ingress Host header for a sandbox label and (user) port."""
    return f"{label}.{DOMAIN}" if port is None else f"{port}-{label}.{DOMAIN}"


@pytest.fixture
def session(mock: TensorLakeMock) -> str:
    """Return a browser session token for the test key's project."""
    return mock.create_session(API_KEY, ORG, PROJECT)


CREDENTIALS: dict[str, Any] = {
    "none": {},
    "owner key": {"headers": {"authorization": f"Bearer {API_KEY}"}},
    "other key": {"headers": {"authorization": f"Bearer {OTHER_KEY}"}},
    "cookie+scope": {"cookie": "tl.session_token", "params": {"organizationId": ORG, "projectId": PROJECT}},
    "legacy cookie+scope": {"cookie": "tl-session", "params": {"organizationId": ORG, "projectId": PROJECT}},
    "cookie, no scope": {"cookie": "tl.session_token", "params": {}},
    "cookie, other project": {"cookie": "tl.session_token", "params": {"organizationId": ORG, "projectId": "p2"}},
    "unknown cookie": {
        "raw_cookie": "tl.session_token=forged",
        "params": {"organizationId": ORG, "projectId": PROJECT},
    },
}

AUTH_TABLE = [
    # (port, allow_unauthenticated_access, credentials, status)
    (9501, False, "none", 401),
    (9501, False, "owner key", 200),
    (9501, False, "other key", 403),
    (9501, False, "cookie+scope", 200),
    (9501, False, "legacy cookie+scope", 200),
    (9501, False, "cookie, no scope", 401),
    (9501, False, "cookie, other project", 403),
    (9501, False, "unknown cookie", 401),
    (9501, True, "none", 401),
    (8080, False, "none", 401),
    (8080, False, "owner key", 200),
    (8080, False, "other key", 403),
    (8080, False, "cookie+scope", 200),
    (8080, False, "cookie, no scope", 401),
    (8080, True, "none", 200),
    (8081, False, "owner key", 403),
    (8081, True, "none", 403),
]


@pytest.mark.parametrize(("port", "public", "who", "status"), AUTH_TABLE)
def test_auth_table(
    http: httpx.Client, anon: httpx.Client, session: str, port: int, public: bool, who: str, status: int
) -> None:
    sid = make(http, exposed_ports=[8080], allow_unauthenticated_access=public)
    cred = CREDENTIALS[who]
    headers = {"host": host(sid, None if port == 9501 else port), **cred.get("headers", {})}
    if "cookie" in cred:
        headers["cookie"] = f"{cred['cookie']}={session}"
    if "raw_cookie" in cred:
        headers["cookie"] = cred["raw_cookie"]
    path = "/api/v1/health" if port == 9501 else "/hello"
    response = anon.get(path, headers=headers, params=cred.get("params", {}))
    assert response.status_code == status, response.text
    if status >= 400:
        assert response.json()["code"] and response.json()["message"]
    elif port == 9501:
        assert response.json() == {"healthy": True}
    else:
        assert response.json()["path"] == "/hello" and response.json()["port"] == port


def test_session_cookie_is_stripped_and_the_rest_passes(http: httpx.Client, anon: httpx.Client, session: str) -> None:
    sid = make(http, exposed_ports=[8080])
    response = anon.post(
        "/echo/path",
        params={"organizationId": ORG, "projectId": PROJECT, "q": "1"},
        headers={
            "host": host(sid, 8080),
            "cookie": f"theme=dark; tl.session_token={session}; tl-session={session}; lang=en",
            "x-custom": "kept",
        },
        content=b"payload",
    )
    assert response.status_code == 200, response.text
    echoed = response.json()
    assert echoed["cookies"] == {"theme": "dark", "lang": "en"}
    assert session not in json.dumps(echoed)
    assert echoed["method"] == "POST" and echoed["path"] == "/echo/path" and echoed["body"] == "payload"
    assert echoed["query"] == f"organizationId={ORG}&projectId={PROJECT}&q=1"
    assert echoed["headers"]["x-custom"] == "kept" and echoed["sandbox_id"] == sid


@pytest.mark.parametrize("public", [False, True])
def test_the_project_key_never_reaches_the_sandbox(http: httpx.Client, anon: httpx.Client, public: bool) -> None:
    sid = make(http, exposed_ports=[8080], allow_unauthenticated_access=public)
    for key in (API_KEY, OTHER_KEY):
        headers = {"host": host(sid, 8080), "authorization": f"Bearer {key}", "x-custom": "kept"}
        response = anon.get("/echo", headers=headers)
        if not public and key == OTHER_KEY:
            assert response.status_code == 403, response.text
            continue
        assert response.status_code == 200, response.text
        echoed = response.json()
        assert "authorization" not in echoed["headers"], echoed["headers"]
        assert key not in json.dumps(echoed)
        assert echoed["headers"]["x-custom"] == "kept"


def test_a_bearer_token_that_is_not_a_project_key_passes_to_a_public_port(
    mock: TensorLakeMock, http: httpx.Client, anon: httpx.Client
) -> None:
    sid = make(http, exposed_ports=[8080], allow_unauthenticated_access=True)
    mock.api_keys = [API_KEY]
    try:
        owned = anon.get("/echo", headers={"host": host(sid, 8080), "authorization": f"Bearer {API_KEY}"})
        app_token = anon.get("/echo", headers={"host": host(sid, 8080), "authorization": "Bearer app-token"})
        basic = anon.get("/echo", headers={"host": host(sid, 8080), "authorization": "Basic dTpw"})
    finally:
        mock.api_keys = None
    assert "authorization" not in owned.json()["headers"]
    assert app_token.json()["headers"]["authorization"] == "Bearer app-token"
    assert basic.json()["headers"]["authorization"] == "Basic dTpw"


def test_names_local_hosts_and_the_sandbox_id_header_route(http: httpx.Client, anon: httpx.Client) -> None:
    sid = make(http, name="my-env", exposed_ports=[3000], allow_unauthenticated_access=True)
    assert anon.get("/x", headers={"host": host("my-env", 3000)}).json()["sandbox_id"] == sid
    assert anon.get("/x", headers={"host": f"3000-{sid}.local"}).json()["port"] == 3000
    auth = {"authorization": f"Bearer {API_KEY}"}
    for headers in ({"host": f"{sid}.local"}, {"host": host("my-env")}, {"x-tensorlake-sandbox-id": sid}):
        response = anon.get("/api/v1/info", headers={**auth, **headers})
        assert response.status_code == 200 and response.json()["version"], headers
    missing = anon.get("/x", headers={"host": host("nobody", 3000)})
    assert missing.status_code == 404 and missing.json()["code"] == "SANDBOX_NOT_FOUND"


def test_exposed_port_wakes_a_suspended_named_sandbox(
    mock: TensorLakeMock, http: httpx.Client, anon: httpx.Client
) -> None:
    sid = make(http, name="dozy", exposed_ports=[8080], allow_unauthenticated_access=True)
    mock.set_timings(resume=20)
    assert http.post("/sandboxes/dozy/suspend?wait_ms=1000").status_code == 200
    assert http.get("/sandboxes/dozy").json()["status"] == "suspended"
    response = anon.get("/", headers={"host": host("dozy", 8080)})
    assert response.status_code == 200 and response.json()["sandbox_id"] == sid
    assert http.get("/sandboxes/dozy").json()["status"] == "running"
    http.patch("/sandboxes/dozy", json={"auto_resume": False})
    assert http.post("/sandboxes/dozy/suspend?wait_ms=1000").status_code == 200
    refused = anon.get("/", headers={"host": host("dozy", 8080)})
    assert refused.status_code == 503 and refused.json()["code"] == "SANDBOX_NOT_READY"
    assert http.get("/sandboxes/dozy").json()["status"] == "suspended"


def test_registered_port_app_serves_the_port(mock: TensorLakeMock, http: httpx.Client, anon: httpx.Client) -> None:
    sid = make(http, exposed_ports=[5000])

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"hi {request.query_params['who']} via {request.headers['host']}")

    mock.register_port_app(sid, 5000, Starlette(routes=[Route("/hi", hello)]))
    response = anon.get("/hi?who=me", headers={"host": host(sid, 5000), "authorization": f"Bearer {API_KEY}"})
    assert response.text == f"hi me via {host(sid, 5000)}"


def test_websocket_upgrades_pass_through(http: httpx.Client, server_url: str) -> None:
    sid = make(http, exposed_ports=[7000])
    auth = {"Authorization": f"Bearer {API_KEY}"}
    uri = f"ws://{host(sid, 7000)}/socket"
    with connect(uri, sock=free_socket(server_url), additional_headers=auth) as ws:
        ws.send("ping")
        assert ws.recv(timeout=5) == "ping"
    with pytest.raises(Exception, match="403"), connect(uri, sock=free_socket(server_url)):
        pass


@pytest.mark.parametrize("path", ["/api/v1/tunnels/tcp?port=8765", "/api/v1/pty/nope/ws?token=t"])
def test_a_websocket_the_emulator_cannot_serve_answers_501(http: httpx.Client, server_url: str, path: str) -> None:
    """A tunnel or PTY WebSocket on the emulator is refused with the daemon's 501, not the proxy's 403."""
    sid = make(http)
    auth = {"Authorization": f"Bearer {API_KEY}"}
    with (
        pytest.raises(InvalidStatus) as refused,
        connect(f"ws://{sid}.local{path}", sock=free_socket(server_url), additional_headers=auth),
    ):
        pass
    response = refused.value.response
    assert response.status_code == 501, response
    assert json.loads(response.body or b"{}")["code"] == "not_supported"


def test_run_streams_server_sent_events_ending_in_exit(http: httpx.Client, anon: httpx.Client) -> None:
    sid = make(http)
    headers = {"host": f"{sid}.local", "authorization": f"Bearer {API_KEY}", "accept": "text/event-stream"}
    body = {"command": "sh", "args": ["-c", "echo one; echo two >&2; exit 4"]}
    with anon.stream("POST", "/api/v1/processes/run", json=body, headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = response.read().decode()
    frames = [f for f in raw.split("\n\n") if f]
    assert all(f.startswith("data: ") and "\n" not in f for f in frames), raw
    events = [json.loads(f[len("data: ") :]) for f in frames]
    assert set(events[0]) == {"pid", "started_at"}
    assert [(e["stream"], e["line"]) for e in events[1:-1]] == [("stdout", "one"), ("stderr", "two")]
    assert events[-1] == {"exit_code": 4, "reason": "exited"}
