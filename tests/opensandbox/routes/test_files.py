"""execd's file routes at the edge of the sandbox's file quota."""

from __future__ import annotations

import json

import httpx

from mockserver.opensandbox import OpenSandboxMock

from ..create_cases import BODY

HALF = b"a" * (10 * 1024 * 1024)


def _upload(client: httpx.Client, sid: str, path: str, data: bytes) -> httpx.Response:
    files = [("metadata", ("metadata", json.dumps({"path": path}), "application/json")), ("file", ("f", data))]
    return client.post(f"/direct/{sid}/44772/files/upload", files=files)


def test_an_upload_beyond_the_quota_answers_execd_runtime_error_and_writes_nothing() -> None:
    """ENOSPC reaches the client as execd reports a failed write: 500 ``RUNTIME_ERROR`` naming the path."""
    mock = OpenSandboxMock()
    with mock.server() as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        assert _upload(client, sid, "/tmp/first", HALF).status_code == 200
        refused = _upload(client, sid, "/tmp/second", HALF)
        assert refused.status_code == 500, refused.text
        body = refused.json()
        assert body["code"] == "RUNTIME_ERROR" and body["message"] == "/tmp/second: no space left on device"
        missing = client.get(f"/direct/{sid}/44772/files/download", params={"path": "/tmp/second"})
        assert missing.status_code == 404
        kept = client.get(f"/direct/{sid}/44772/files/download", params={"path": "/tmp/first"})
        assert kept.content == HALF
        assert _upload(client, sid, "/tmp/second", b"fits").status_code == 200
