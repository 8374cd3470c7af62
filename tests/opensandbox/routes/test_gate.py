"""The outer layers: CORS as the real 1.1.1 server answers it, before authentication; none on /direct and /_mock."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock

from ..create_cases import BODY
from ..http_cases import ORIGIN, PREFLIGHT_REQUEST, check_cors

KEY = "sandproof-real-key"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with OpenSandboxMock(api_key=KEY).server() as srv:
        yield srv.url


def test_cors_is_the_real_servers(served: str) -> None:
    with (
        httpx.Client(base_url=served, headers={"OPEN-SANDBOX-API-KEY": KEY}) as client,
        httpx.Client(base_url=served) as anon,
    ):
        check_cors(client, anon, client.post("/v1/sandboxes", json=BODY).json()["id"])


def test_sandbox_ports_and_the_admin_api_get_no_cors(served: str) -> None:
    with httpx.Client(base_url=served, headers={"OPEN-SANDBOX-API-KEY": KEY}) as client:
        sandbox_id = client.post("/v1/sandboxes", json=BODY).json()["id"]
        for path in (f"/direct/{sandbox_id}/44772/ping", "/_mock/clock"):
            resp = client.get(path, headers={"Origin": ORIGIN})
            assert resp.status_code == 200, path
            assert "access-control-allow-origin" not in resp.headers and "vary" not in resp.headers, path
            preflight = client.options(path, headers=PREFLIGHT_REQUEST)
            assert "access-control-allow-methods" not in preflight.headers, path
