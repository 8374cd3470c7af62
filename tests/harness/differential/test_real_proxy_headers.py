"""The proxy-header rule, observed on the real opensandbox-server 1.1.1: what a sandbox's app receives through its
server proxy is what ``mockserver.opensandbox.model.forwarding.proxy_headers`` computes.

The sandbox's app is sandproof's echo app, served as the real server's execd look-alike (the fake Docker engine
publishes execd's port to it), so the real proxy's own header handling is seen on port 44772, both proxy paths
and a WebSocket; the judgement is the contract's (``forwarding_problems``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from websockets.sync.client import connect

from harness.differential.fake_docker import ThreadedServer
from harness.differential.real_server import RealOpenSandboxServer
from harness.machines.opensandbox.proxy_rules import HANDSHAKE, REQUEST_MESSAGE, forwarding_problems, spoofed_headers
from mockserver.opensandbox.routes.echo import sandbox_echo

pytestmark = pytest.mark.timeout(120)
BODY = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep", "infinity"], "resourceLimits": {"cpu": "1"}}


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    """The echo app, answering uvicorn's lifespan messages too."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await sandbox_echo(scope, receive, send)


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[RealOpenSandboxServer, httpx.Client, str]]:
    app = ThreadedServer(_app).start()
    try:
        with (
            RealOpenSandboxServer(execd_port=app.port) as server,
            httpx.Client(base_url=server.url, headers=server.headers, trust_env=False, timeout=30) as client,
        ):
            sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
            yield server, client, sid
    finally:
        app.stop()


@pytest.mark.parametrize("prefix", ["/v1", ""], ids=["v1", "bare"])
def test_the_real_proxy_forwards_what_the_model_says(
    proxied: tuple[RealOpenSandboxServer, httpx.Client, str], prefix: str
) -> None:
    _, client, sid = proxied
    headers = {**spoofed_headers("t1"), "Connection": "keep-alive, X-Sandproof-Hop", "X-Sandproof-Hop": "t1"}
    response = client.get(f"{prefix}/sandboxes/{sid}/proxy/44772/echo?x=1", headers=headers)
    assert response.status_code == 200, response.text
    seen = response.json()["headers"]
    sent = {k.lower(): v for k, v in response.request.headers.items()}
    assert forwarding_problems(sent, seen) == []
    assert "authorization" not in seen and "open-sandbox-api-key" not in seen and seen["x-sandproof-probe"] == "t1"
    assert seen["x-forwarded-for"] == "198.51.100.8"  # uvicorn trusts a loopback peer's list, keeps its last address


def test_the_real_proxy_forwards_a_websocket_handshake_as_the_model_says(
    proxied: tuple[RealOpenSandboxServer, httpx.Client, str],
) -> None:
    server, _, sid = proxied
    url = server.url.replace("http://", "ws://") + f"/v1/sandboxes/{sid}/proxy/44772/socket"
    with connect(url, additional_headers={**server.headers, **spoofed_headers("t2")}, open_timeout=10) as ws:
        sent = {k.lower(): v for k, v in ws.request.headers.raw_items()} if ws.request else {}
        ws.send(REQUEST_MESSAGE)
        seen = json.loads(ws.recv(timeout=10))["headers"]
    assert forwarding_problems(sent, seen, HANDSHAKE) == []
    assert "cookie" not in seen and seen["x-sandproof-probe"] == "t2"
