"""The served OpenAPI document matches the routes and describes the responses the mock really gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from starlette.routing import Route

from mockserver.tensorlake import TensorLakeMock

DOC_PATH = Path(__file__).parents[2] / "mockserver" / "tensorlake" / "openapi.json"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    """Return the OpenAPI document kept in the package."""
    loaded: dict[str, Any] = json.loads(DOC_PATH.read_text())
    return loaded


def test_the_document_is_served(anon: httpx.Client, doc: dict[str, Any]) -> None:
    response = anon.get("/openapi.json")
    assert response.status_code == 200 and response.json() == doc


def test_every_route_is_documented_and_nothing_else(mock: TensorLakeMock, doc: dict[str, Any]) -> None:
    served: set[tuple[str, str]] = set()
    for route in mock.routes():
        assert isinstance(route, Route)
        if route.path == "/openapi.json" or "sandbox-pools" in route.path:
            continue
        path = re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", route.path)
        served |= {(path, m.lower()) for m in route.methods or () if m != "HEAD"}
    documented = {(path, method) for path, item in doc["paths"].items() for method in item}
    assert served == documented


def test_responses_conform_to_the_document(
    mock: TensorLakeMock, http: httpx.Client, anon: httpx.Client, doc: dict[str, Any]
) -> None:
    schema = schemathesis.openapi.from_dict(doc)
    checked: list[str] = []

    def check(template: str, response: httpx.Response) -> httpx.Response:
        schema[template][response.request.method].validate_response(response)
        checked.append(f"{response.request.method} {template} {response.status_code}")
        return response

    created = check(
        "/sandboxes", http.post("/sandboxes", json={"name": "doc", "network": {"allow_out": ["a.example"]}})
    )
    sid = created.json()["sandbox_id"]
    check("/sandboxes", http.post("/sandboxes", json={"wait": False}))
    check("/sandboxes", http.post("/sandboxes", json={"name": "doc"}))
    check("/sandboxes", http.post("/sandboxes", content=b"{", headers={"content-type": "application/json"}))
    check("/sandboxes", anon.get("/sandboxes"))
    mock.fail_next_create("ConfigurationError")
    check("/sandboxes", http.post("/sandboxes", json={}))
    mock.time_out_next_create()
    check("/sandboxes", http.post("/sandboxes", json={}))
    check("/sandboxes", http.get("/sandboxes"))
    check("/v1/namespaces/{ns}/sandboxes", http.get("/v1/namespaces/default/sandboxes"))
    check("/sandboxes/{sid}", http.get(f"/sandboxes/{sid}"))
    check("/sandboxes/{sid}", http.get("/sandboxes/missing"))
    check("/sandboxes/{sid}", http.patch(f"/sandboxes/{sid}", json={"network": None, "exposed_ports": [80]}))
    check("/sandboxes/{sid}", http.patch(f"/sandboxes/{sid}", json={"resources": {"cpus": 2}}))
    check("/sandboxes/{sid}", http.patch(f"/sandboxes/{sid}", json={"network": {"allow_out": ["x.invalid"]}}))
    check(
        "/sandboxes/{sid}/file_systems",
        http.post(f"/sandboxes/{sid}/file_systems", json={"file_system_id": "f", "mount_path": "/m"}),
    )
    check(
        "/sandboxes/{sid}/file_systems",
        http.request("DELETE", f"/sandboxes/{sid}/file_systems", json={"mount_path": "/m"}),
    )
    snap = check("/sandboxes/{sid}/snapshot", http.post(f"/sandboxes/{sid}/snapshot")).json()["snapshot_id"]
    check("/sandboxes/{sid}/snapshots", http.get(f"/sandboxes/{sid}/snapshots"))
    check("/snapshots", http.get("/snapshots"))
    check("/snapshots/{snap}", http.get(f"/snapshots/{snap}"))
    check("/sandboxes/{sid}/copy", http.post(f"/sandboxes/{sid}/copy?times=2"))
    check("/sandboxes/{sid}/logs", http.get(f"/sandboxes/{sid}/logs?level=3&tail=5"))
    check("/sandboxes/{sid}/processes", http.get(f"/sandboxes/{sid}/processes"))
    check("/sandboxes/{sid}/suspend", http.post(f"/sandboxes/{sid}/suspend?wait_ms=100"))
    check("/sandboxes/{sid}/resume", http.post(f"/sandboxes/{sid}/resume?wait_ms=100"))
    check("/sandboxes/{sid}", http.delete(f"/sandboxes/{sid}"))
    check("/sandboxes/{sid}/suspend", http.post(f"/sandboxes/{sid}/suspend"))
    check("/archived-sandboxes", http.get("/archived-sandboxes?limit=1&direction=backward"))
    check("/archived-sandboxes/{sid}", http.get(f"/archived-sandboxes/{sid}"))
    check("/snapshots/{snap}", http.delete(f"/snapshots/{snap}"))
    statuses = {line.rsplit(" ", 1)[1] for line in checked}
    assert statuses >= {"200", "202", "204", "400", "401", "404", "409", "422", "504"}
