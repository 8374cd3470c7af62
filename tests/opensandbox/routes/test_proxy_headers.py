"""What a sandbox's app receives through the server proxy, on every proxy path and over WebSocket: no
credentials, forwarding headers rebuilt from the connection; a direct request keeps every header."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.sync.client import connect

from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.routes.echo import REQUEST_MESSAGE

BODY = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep"], "resourceLimits": {"cpu": "1"}}
KEY = "tenant-key"
SPOOFED = {
    "authorization": "Bearer secret",
    "cookie": "session=1",
    "opensandbox-secure-access": "tok",
    "x-forwarded-for": "6.6.6.6, 7.7.7.7",
    "x-forwarded-host": "evil.test",
    "x-forwarded-port": "1",
    "forwarded": "for=6.6.6.6",
    "x-real-ip": "6.6.6.6",
    "x-app": "kept",
}
CREDENTIALS = ("authorization", "cookie", "open-sandbox-api-key", "opensandbox-secure-access")


@pytest.fixture(scope="module")
def served() -> object:
    mock = OpenSandboxMock(api_key=KEY)
    with mock.server() as server, httpx.Client(base_url=server.url, headers={"OPEN-SANDBOX-API-KEY": KEY}) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        yield server.url, client, sid


def _check_proxied(seen: dict[str, str], host: str) -> None:
    assert not [name for name in CREDENTIALS if name in seen], seen
    assert seen["x-app"] == "kept"
    assert (seen["x-forwarded-proto"], seen["x-forwarded-host"]) == ("http", host)
    # uvicorn (the real server's and the mock's, default settings) trusts a loopback peer's X-Forwarded-For and
    # takes its last address as the client; the proxy then writes that one address, never the list as sent
    assert seen["x-forwarded-for"] == "7.7.7.7"
    assert not {"forwarded", "x-real-ip", "x-forwarded-port"} & set(seen)


@pytest.mark.parametrize("prefix", ["/v1", ""])
def test_the_app_behind_the_proxy_gets_no_credentials(served: tuple[str, httpx.Client, str], prefix: str) -> None:
    url, client, sid = served
    response = client.get(f"{prefix}/sandboxes/{sid}/proxy/8080/app?x=1", headers=SPOOFED)
    assert response.status_code == 200, response.text
    data = response.json()
    assert (data["sandbox_id"], data["path"], data["query"]) == (sid, "/app", "x=1")
    _check_proxied(data["headers"], httpx.URL(url).netloc.decode())


def test_a_websocket_through_the_proxy_gets_no_credentials(served: tuple[str, httpx.Client, str]) -> None:
    url, _, sid = served
    ws_url = url.replace("http://", "ws://") + f"/v1/sandboxes/{sid}/proxy/8080/socket"
    with connect(ws_url, additional_headers={**SPOOFED, "OPEN-SANDBOX-API-KEY": KEY}, open_timeout=5) as ws:
        ws.send(REQUEST_MESSAGE)
        seen = json.loads(ws.recv(timeout=5))["headers"]
        ws.send("hello")
        assert ws.recv(timeout=5) == "hello"
    _check_proxied(seen, httpx.URL(url).netloc.decode())


def test_a_direct_request_keeps_every_header(served: tuple[str, httpx.Client, str]) -> None:
    _, client, sid = served
    seen = client.get(f"/direct/{sid}/8080/", headers=SPOOFED).json()["headers"]
    assert {k: seen.get(k) for k in SPOOFED} == SPOOFED
    assert seen["open-sandbox-api-key"] == KEY
