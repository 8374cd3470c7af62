"""Every route of a multi-tenant OpenSandbox mock refuses a request without a key, with a wrong key, or from
another tenant: the routes are read from the mock's own app (the lifecycle routes, and each sandbox-port
service behind the direct and proxy mounts), not from a list kept here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route

from mockserver.asgi.routing import OnFirstCall
from mockserver.opensandbox import ANY_KEY, OpenSandboxMock
from mockserver.opensandbox.model.auth import ADMIN_PREFIX, EXEMPT_PATHS, KeyOption
from mockserver.opensandbox.routes.ports import PortDispatcher

BODY = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "resourceLimits": {"cpu": "1"},
    "timeout": 600,
    "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
}
#: A body every route's validation accepts, so that only the key or the tenant can refuse the request.
ANY_BODY = {"expiresAt": "2999-01-01T00:00:00Z"}
_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")


@dataclass(frozen=True)
class Leaf:
    """One route and method of the app, with its path template and whether it names tenant A's objects."""

    method: str
    template: str

    @property
    def owned(self) -> bool:
        """Tell whether the path names a sandbox or snapshot (the other tenant must not reach it)."""
        return "{sandbox_id}" in self.template or "{snapshot_id}" in self.template


def _starlette(app: Any) -> Starlette:
    while not isinstance(app, Starlette):
        app = app.app
    return app


def _leaves(routes: list[BaseRoute], prefix: str = "") -> Iterator[Leaf]:
    for route in routes:
        if isinstance(route, Mount) and isinstance(route.app, PortDispatcher):
            for port, service in route.app.ctx.services.items():
                router: Any = service.get() if isinstance(service, OnFirstCall) else service
                mount = prefix + route.path.replace("{port:int}", str(port))
                yield from _leaves(router.routes, mount)
        elif isinstance(route, Route):
            for method in sorted((route.methods or set()) - {"HEAD"}):
                yield Leaf(method, prefix + route.path)


def app_leaves(mock: OpenSandboxMock) -> list[Leaf]:
    """Return every (method, path) of the mock's app but the admin service and the real server's exemptions."""
    found = _leaves(_starlette(mock.app).routes)
    return [leaf for leaf in found if not leaf.template.startswith((ADMIN_PREFIX, *EXEMPT_PATHS))]


@dataclass
class Tenants:
    """A served mock with tenant A's sandbox and snapshot, and the keys of the sweep."""

    mock: OpenSandboxMock
    client: httpx.Client
    key_a: str
    key_b: str
    wrong: str | None
    sandbox_id: str
    snapshot_id: str

    def path(self, leaf: Leaf, *, missing: bool = False) -> str:
        sandbox, snapshot = ("no-such-id", "no-such-id") if missing else (self.sandbox_id, self.snapshot_id)
        values = {"sandbox_id": sandbox, "snapshot_id": snapshot, "port": "44772"}
        return _PARAM.sub(lambda m: values.get(m.group(1), "x"), leaf.template)

    def send(self, leaf: Leaf, key: str | None, *, missing: bool = False) -> httpx.Response:
        headers = {} if key is None else {"OPEN-SANDBOX-API-KEY": key}
        body = None if leaf.method == "GET" else ANY_BODY
        return self.client.request(leaf.method, self.path(leaf, missing=missing), headers=headers, json=body)


@pytest.fixture(params=["pinned", "any-key"])
def tenants(request: pytest.FixtureRequest) -> Iterator[Tenants]:
    option: KeyOption = {"key-a": "a", "key-b": "b"} if request.param == "pinned" else ANY_KEY
    mock = OpenSandboxMock(seed=5, api_key=option)
    wrong = "not-a-key" if request.param == "pinned" else None  # with any key, a wrong key is another tenant
    with mock.server() as server, httpx.Client(base_url=server.url) as client:
        a = {"OPEN-SANDBOX-API-KEY": "key-a"}
        sandbox_id = client.post("/v1/sandboxes", json=BODY, headers=a).json()["id"]
        snapshot_id = client.post(f"/v1/sandboxes/{sandbox_id}/snapshots", json={}, headers=a).json()["id"]
        yield Tenants(mock, client, "key-a", "key-b", wrong, sandbox_id, snapshot_id)


def _refused_for_the_key(response: httpx.Response) -> bool:
    return response.status_code == 401 and response.json().get("code") in ("MISSING_API_KEY", "INVALID_API_KEY")


def _refused_for_the_tenant(leaf: Leaf, response: httpx.Response, t: Tenants) -> bool:
    if not leaf.owned:
        return t.sandbox_id not in response.text and t.snapshot_id not in response.text
    if leaf.template.startswith("/direct/"):
        return response.status_code == 502 and response.text == "Bad Gateway"  # as for no such sandbox
    if response.status_code == 422:  # the body is checked before any lookup: the answer for no such sandbox
        return response.json() == t.send(leaf, t.key_b, missing=True).json()
    return response.status_code == 404 and str(response.json().get("code", "")).endswith("NOT_FOUND")


def test_the_sweep_reads_every_route_of_the_app(tenants: Tenants) -> None:
    leaves = app_leaves(tenants.mock)
    templates = {leaf.template for leaf in leaves}
    assert "/direct/{sandbox_id}/44772/command" in templates
    assert "/v1/sandboxes/{sandbox_id}/proxy/18080/policy" in templates
    assert "/sandboxes/{sandbox_id}/proxy/44772/files/upload" in templates
    assert "/v1/snapshots/{snapshot_id}" in templates
    assert sum(leaf.template.startswith("/direct/") for leaf in leaves) >= 24


def test_no_route_lets_a_request_through_without_a_valid_key_or_from_another_tenant(tenants: Tenants) -> None:
    leaves = app_leaves(tenants.mock)
    through: list[str] = []
    for leaf in leaves:
        for case, key in (("no key", None), ("wrong key", tenants.wrong)):
            if case == "wrong key" and key is None:
                continue
            response = tenants.send(leaf, key)
            if not _refused_for_the_key(response):
                through.append(f"{case}: {leaf.method} {leaf.template} -> {response.status_code}")
        response = tenants.send(leaf, tenants.key_b)
        if not _refused_for_the_tenant(leaf, response, tenants):
            through.append(f"other tenant: {leaf.method} {leaf.template} -> {response.status_code}")
    assert through == [], f"{len(through)} of {len(leaves)} routes let a request through:\n" + "\n".join(through)
    sb = tenants.mock.sandbox(tenants.sandbox_id)
    assert sb.state == "Running" and sb.commands == {} and sb.sessions == {}
    assert [rule.target for rule in (sb.policy.egress if sb.policy else [])] == ["pypi.org"]


def test_the_owner_still_gets_through(tenants: Tenants) -> None:
    a = {"OPEN-SANDBOX-API-KEY": tenants.key_a}
    sid = tenants.sandbox_id
    endpoint = tenants.client.get(f"/v1/sandboxes/{sid}/endpoints/44772", headers=a).json()
    path = "/" + endpoint["endpoint"].split("/", 1)[1]
    assert tenants.client.get(f"{path}/ping", headers=endpoint["headers"]).status_code == 200  # the token alone
    assert tenants.client.get(f"/direct/{sid}/44772/ping", headers=a).status_code == 200
    assert tenants.client.get(f"/v1/sandboxes/{sid}/proxy/18080/policy", headers=a).status_code == 200
