"""The lifecycle gate: one API-key check per request under the lifecycle prefixes, before routing."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from mockserver.tensorlake import TensorLakeMock
from mockserver.tensorlake.model.auth import is_lifecycle_path, lifecycle_namespace
from mockserver.tensorlake.model.records import owner_id

KEY = "tl-gate-key"


@pytest.mark.parametrize(
    ("path", "namespace"),
    [
        ("/sandboxes", "default"),
        ("/sandboxes/sb1/logs", "default"),
        ("/snapshots/s1", "default"),
        ("/archived-sandboxes", "default"),
        ("/sandbox-pools/p/x", "default"),
        ("/sandboxes/unknown/route", "default"),
        ("/v1/namespaces/team/sandboxes", "team"),
        ("/v1/namespaces/team/snapshots/s1", "team"),
        ("/sandboxesx", None),
        ("/openapi.json", None),
        ("/_mock/clock", None),
        ("/api/v1/processes", None),
        ("/v1/namespaces/team", None),
        ("/v1/namespaces/team/other", None),
    ],
)
def test_the_lifecycle_paths_and_their_namespace(path: str, namespace: str | None) -> None:
    assert lifecycle_namespace(path) == namespace
    assert is_lifecycle_path(path) is (namespace is not None)


def _send(mock: TensorLakeMock, method: str, path: str, key: str | None) -> httpx.Response:
    headers = {} if key is None else {"authorization": f"Bearer {key}"}

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=mock.transport(), base_url="http://localhost") as client:
            return await client.request(method, path, headers=headers)

    return asyncio.run(go())


def test_a_refusal_comes_before_the_route_and_the_body() -> None:
    mock = TensorLakeMock(seed=1, api_keys=[KEY])
    missing = _send(mock, "POST", "/sandboxes", None)
    assert missing.status_code == 401 and missing.json()["code"] == "unauthorized"
    wrong = _send(mock, "GET", "/v1/namespaces/team/sandboxes", "not-a-key")
    assert wrong.status_code == 401 and wrong.json()["code"] == "invalid_api_key"
    # A path under the prefixes no route serves, or a method it does not serve: the key is checked first.
    assert _send(mock, "GET", "/sandboxes/sb1/nowhere", None).status_code == 401
    assert _send(mock, "PUT", "/sandboxes", None).status_code == 401
    assert _send(mock, "GET", "/sandboxes/sb1/nowhere", KEY).status_code == 404
    assert _send(mock, "PUT", "/sandboxes", KEY).status_code == 405
    # Paths that are not the lifecycle API's need no key.
    assert _send(mock, "GET", "/openapi.json", None).status_code == 200
    assert _send(mock, "GET", "/nowhere", None).status_code == 404


def test_the_tenant_reaches_the_operations_and_the_journal() -> None:
    mock = TensorLakeMock(seed=1, api_keys=[KEY])
    created = _send(mock, "POST", "/v1/namespaces/team/sandboxes", KEY)
    assert created.status_code == 200
    sid = created.json()["sandbox_id"]
    record = mock.model.sandboxes[sid]
    assert (record.owner, record.namespace) == (owner_id(KEY), "team")
    assert _send(mock, "GET", f"/sandboxes/{sid}", KEY).status_code == 404  # another namespace
    assert _send(mock, "GET", f"/v1/namespaces/team/sandboxes/{sid}", KEY).status_code == 200
    entries = mock.journal.entries()
    assert [e.tenant for e in entries] == [f"{owner_id(KEY)}/team", f"{owner_id(KEY)}/default", f"{owner_id(KEY)}/team"]
    assert entries[-1].sandbox_id == sid
    _send(mock, "GET", "/sandboxes", None)
    assert mock.journal.entries()[-1].tenant is None
