"""Every route of both mocks answers deeply nested JSON without a 5xx: a JSON 4xx where it reads a body.

The routes are read from the mocks' own apps (TensorLake: lifecycle, admin and the in-sandbox management API
behind the proxy; OpenSandbox: lifecycle, admin, and each sandbox-port service behind the direct mount), not
from a list kept here.
"""

from __future__ import annotations

import httpx

from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock

from .route_tables import fill as _fill
from .route_tables import leaves, starlettes

DEEP = b"[" * 100_000 + b"]" * 100_000
WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _assert_json_4xx(response: httpx.Response, what: str, *, text_errors: bool = False) -> bool:
    """Fail on a 5xx or an error in the wrong shape; return whether the body was refused (a 4xx), not ignored.

    ``text_errors``: the service answers its errors as text/plain (OpenSandbox's egress sidecar does).
    """
    unimplemented = response.status_code == 501  # a documented route the mock does not serve, said as JSON
    assert response.status_code < 500 or unimplemented, f"{what} -> {response.status_code}: {response.text[:200]!r}"
    if response.status_code == 204 or not response.content:
        return False
    shape = "text/plain" if text_errors and response.status_code >= 400 else "application/json"
    assert response.headers.get("content-type", "").startswith(shape), f"{what}: {response.headers}"
    return response.status_code >= 400


def test_every_tensorlake_route_answers_deep_json_without_a_5xx() -> None:
    mock = TensorLakeMock()
    headers = {"authorization": "Bearer sandproof-key"}
    with mock.server() as server, httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        sid = client.post("/sandboxes", json={"name": "deep"}).json()["sandbox_id"]
        apps = list(starlettes(mock.app))
        assert len(apps) == 2, "the lifecycle/admin app and the management app"
        lifecycle, management = apps if any(r.path == "/sandboxes" for r in apps[0].routes) else apps[::-1]
        values = {
            "sid": sid,
            "ns": "default",
            "snap": "nope",
            "rest": "x",
            "ref": "1",
            "stream": "stdout",
            "rule_id": "1",
        }
        checked = 0
        for method, template in leaves(lifecycle.routes, WITH_BODY):
            checked += _assert_json_4xx(
                client.request(method, _fill(template, values), content=DEEP), f"{method} {template}"
            )
        for method, template in leaves(management.routes, WITH_BODY):
            response = client.request(
                method, _fill(template, values), content=DEEP, headers={"host": f"{sid}.sandbox.localhost"}
            )
            checked += _assert_json_4xx(response, f"{method} {template} (management)")
    assert checked >= 20


def test_every_opensandbox_route_answers_deep_json_without_a_5xx() -> None:
    mock = OpenSandboxMock()
    with mock.server() as server, httpx.Client(base_url=server.url, timeout=30) as client:
        body = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep", "infinity"], "resourceLimits": {}}
        body["networkPolicy"] = {"defaultAction": "deny", "egress": []}
        checked = 0
        for app in starlettes(mock.app):
            for method, template in leaves(app.routes, WITH_BODY):
                created = client.post("/v1/sandboxes", json=body)  # a fresh one: a pause or delete ends the last
                assert created.status_code == 202, created.text
                values = {
                    "sandbox_id": created.json()["id"],
                    "snapshot_id": "nope",
                    "name": "x",
                    "sid": "nope",
                    "rule_id": "1",
                }
                path = _fill(template, values)
                response = client.request(method, path, content=DEEP, headers={"content-type": "application/json"})
                sidecar = "/18080/" in template
                checked += _assert_json_4xx(response, f"{method} {template}", text_errors=sidecar)
    assert checked >= 20
