"""port_proxy: HTTP requests and WebSockets relayed into a sandbox's port, as the providers' ingress uses it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
import websockets.sync.client as ws_client

from mockserver.asgi.server import MockServer
from mockserver.linux import LinuxSandbox
from mockserver.linux.ingress import Scope, port_proxy

from ..linux_programs import WS_ECHO
from .conftest import needs_runtime

pytestmark = needs_runtime
HTTP_ECHO = r"""
import http.server, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self): self.answer(b"")
    def do_POST(self): self.answer(self.rfile.read(int(self.headers["content-length"])))
    def answer(self, body):
        text = f"{self.command} {self.path} host={self.headers['host']} cookie={self.headers.get('cookie')} ".encode() + body
        self.send_response(201); self.send_header("content-length", str(len(text))); self.send_header("x-from", "sandbox")
        self.end_headers(); self.wfile.write(text)
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
"""


def wait_listening(sandbox: LinuxSandbox, port: int) -> None:
    deadline = time.monotonic() + 10
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1).close()"
    while sandbox.run(["python3", "-c", probe]).exit_code != 0:
        assert time.monotonic() < deadline, f"nothing listens on {port}"
        time.sleep(0.05)


@pytest.fixture
def served(sandbox: LinuxSandbox) -> Iterator[str]:
    """Serve port_proxy apps for ports 8000 (HTTP echo), 8001 (WebSocket echo) and 8002 (nothing) of one sandbox."""

    async def sandbox_of(scope: Scope) -> LinuxSandbox:
        return sandbox

    apps = {port: port_proxy(sandbox_of, port) for port in (8000, 8001, 8002)}

    async def app(scope: Scope, receive: object, send: object) -> None:
        port = int(str(scope["path"]).split("/")[1])
        await apps[port]({**scope, "root_path": f"/{port}"}, receive, send)  # type: ignore[arg-type]

    sandbox.start_process(["python3", "-c", HTTP_ECHO, "8000"])
    sandbox.start_process(["python3", "-c", WS_ECHO, "8001"])
    wait_listening(sandbox, 8000)
    wait_listening(sandbox, 8001)
    with MockServer(app) as server:
        yield server.url


def test_http_passes_method_path_headers_and_body_both_ways(served: str) -> None:
    got = httpx.get(f"{served}/8000/a/b?q=1", headers={"cookie": "c=1"})
    assert (got.status_code, got.headers["x-from"]) == (201, "sandbox")
    assert got.text.startswith("GET /a/b?q=1 host=") and "cookie=c=1" in got.text
    posted = httpx.post(f"{served}/8000/submit", content=b"x" * 100_000)
    assert posted.status_code == 201 and posted.text.endswith("x" * 100_000)
    assert httpx.get(f"{served}/8002/").status_code == 502  # nothing listens


def test_websockets_pass_through(served: str) -> None:
    with ws_client.connect(served.replace("http://", "ws://") + "/8001/chat") as ws:
        for word in ("one", "two"):
            ws.send(word)
            assert ws.recv(timeout=10) == f"echo:{word}"
    with pytest.raises(Exception):  # noqa: B017  # the handshake is refused: nothing listens
        ws_client.connect(served.replace("http://", "ws://") + "/8002/chat", open_timeout=5)
