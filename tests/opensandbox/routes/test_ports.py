"""The sandbox-port dispatcher with WebSockets: refused before the handshake by the gate, or closed 4404
when no service serves the path; never a 500.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from mockserver.opensandbox import OpenSandboxMock

BODY = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep"], "resourceLimits": {"cpu": "1"}}
PTY = "44772/pty/x/ws"


def _websocket(app: Any, path: str, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Open a WebSocket on ``app`` in process; return what the app sent before it finished."""
    scope = {
        "type": "websocket",
        "asgi": {"version": "3.0"},
        "scheme": "ws",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "server": ("mock.test", 80),
        "client": ("127.0.0.1", 1),
        "subprotocols": [],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _create(mock: OpenSandboxMock, key: str | None = None) -> str:
    with mock.server() as server:
        headers = {"OPEN-SANDBOX-API-KEY": key} if key else {}
        return str(httpx.post(f"{server.url}/v1/sandboxes", json=BODY, headers=headers).json()["id"])


def test_a_websocket_to_a_running_sandbox_port_is_closed_4404_over_a_real_socket() -> None:
    mock = OpenSandboxMock()
    with mock.server() as server:
        sid = httpx.post(f"{server.url}/v1/sandboxes", json=BODY).json()["id"]
        url = server.url.replace("http://", "ws://")
        for path in (f"/direct/{sid}/{PTY}", f"/v1/sandboxes/{sid}/proxy/{PTY}"):
            with pytest.raises(InvalidStatus) as caught, connect(url + path, open_timeout=5):
                pass
            # a close before accept refuses the handshake (uvicorn answers 403), where it used to be a 500
            assert caught.value.response.status_code == 403, path
        assert httpx.get(f"{server.url}/direct/{sid}/44772/ping").status_code == 200  # the server lives on


def test_the_close_codes() -> None:
    mock = OpenSandboxMock()
    sid = _create(mock)
    assert _websocket(mock.app, f"/direct/{sid}/{PTY}") == [
        {"type": "websocket.close", "code": 4404, "reason": "not found"}
    ]
    assert _websocket(mock.app, f"/direct/nope/{PTY}")[0]["code"] == 4502  # no such sandbox: Bad Gateway
    assert _websocket(mock.app, f"/v1/sandboxes/nope/proxy/{PTY}")[0]["code"] == 4404


def test_multi_tenant_websockets_are_refused_before_the_handshake() -> None:
    mock = OpenSandboxMock(api_key={"ka": "a", "kb": "b"})
    sid = _create(mock, "ka")
    proxy, direct = f"/v1/sandboxes/{sid}/proxy/{PTY}", f"/direct/{sid}/{PTY}"
    assert _websocket(mock.app, proxy)[0] == {"type": "websocket.close", "code": 4401, "reason": "MISSING_API_KEY"}
    assert _websocket(mock.app, proxy, {"OPEN-SANDBOX-API-KEY": "nope"})[0]["code"] == 4401
    assert _websocket(mock.app, proxy, {"OPEN-SANDBOX-API-KEY": "kb"})[0]["code"] == 4404  # another tenant
    assert _websocket(mock.app, direct)[0]["code"] == 4401
    assert _websocket(mock.app, direct, {"OPEN-SANDBOX-API-KEY": "kb"})[0]["code"] == 4502
    assert _websocket(mock.app, proxy, {"OPEN-SANDBOX-API-KEY": "ka"})[0]["code"] == 4404  # the owner: no PTY here
    assert _websocket(mock.app, direct, {"OPEN-SANDBOX-API-KEY": "ka"})[0]["code"] == 4404
