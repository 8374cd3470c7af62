"""The served OpenAPI document matches the routes and describes the responses the mock really gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import given
from hypothesis import strategies as st
from starlette.routing import Route

from contracts.tensorlake import NetworkConfig, PolicyError
from mockserver.tensorlake import TensorLakeMock
from mockserver.tensorlake.model.validation import LIMITS

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


DATA_CHECKED = (
    "POST /sandboxes",
    "PATCH /sandboxes/{sid}",
    "POST /sandboxes/{sid}/suspend",
    "POST /sandboxes/{sid}/copy",
    "GET /sandboxes/{sid}/logs",
    "GET /archived-sandboxes",
)


@pytest.mark.parametrize("mode", ["positive", "negative"])
@pytest.mark.parametrize("label", DATA_CHECKED)
def test_schemathesis_data_checks_agree_with_the_mock(
    mock: TensorLakeMock, http: httpx.Client, server_url: str, doc: dict[str, Any], label: str, mode: str
) -> None:
    """Valid data per the document is never refused with 400/422, and invalid data always is."""
    from hypothesis import HealthCheck, given, settings
    from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

    sid = http.post("/sandboxes", json={"name": "target"}).json()["sandbox_id"]
    config = schemathesis.Config.from_dict(
        {
            "base-url": server_url,
            "headers": {"authorization": http.headers["authorization"]},
            "generation": {"mode": mode, "database": "none"},
        }
    )
    schema = schemathesis.openapi.from_dict(doc, config=config)
    method, _, path = label.partition(" ")
    check = positive_data_acceptance if mode == "positive" else negative_data_rejection

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=schema[path][method].as_strategy())
    def fuzz(case: Any) -> None:
        if "sid" in (case.path_parameters or {}):
            case.path_parameters = {**case.path_parameters, "sid": sid}
        case.call_and_validate(checks=[check])

    fuzz()


def test_the_document_states_the_model_s_bounds(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    create, resources = schemas["CreateSandboxRequest"]["properties"], schemas["CreateResources"]["properties"]
    resize = schemas["ResizeResources"]["properties"]
    stated = {
        "timeout_secs": create["timeout_secs"]["maximum"],
        "max_pending_secs": create["max_pending_secs"]["maximum"],
        "cpus": resources["cpus"]["maximum"],
        "memory_mb": resources["memory_mb"]["maximum"],
        "disk_mb": resources["disk_mb"]["maximum"],
        "gpu_count": schemas["GpuRequest"]["properties"]["count"]["maximum"],
    }
    assert resize["cpus"]["maximum"] == LIMITS["cpus"] and resize["memory_mb"]["maximum"] == LIMITS["memory_mb"]
    assert resources["ephemeral_disk_mb"]["maximum"] == resize["disk_mb"]["maximum"] == LIMITS["disk_mb"]
    for path, item in doc["paths"].items():
        for op in item.values():
            for param in op.get("parameters", []):
                if param["in"] == "query" and param["name"] in LIMITS:
                    assert param["schema"]["maximum"] == LIMITS[param["name"]], (path, param["name"])
                    stated[param["name"]] = param["schema"]["maximum"]
    assert stated == LIMITS


def test_suspend_states_that_only_named_sandboxes_suspend(doc: dict[str, Any]) -> None:
    for path in ("/sandboxes/{sid}/suspend", "/v1/namespaces/{ns}/sandboxes/{sid}/suspend"):
        op = doc["paths"][path]["post"]
        assert "ephemeral" in op["description"] and "ephemeral" in op["responses"]["400"]["description"]


def _accepted(entry: str, where: str) -> bool:
    try:
        NetworkConfig.from_json({"allow_internet_access": True, where: [entry]})
    except PolicyError:
        return False
    return True


@given(
    address=st.tuples(*[st.integers(0, 255)] * 4),
    prefix=st.integers(0, 32),
    aligned=st.booleans(),
)
def test_the_cidr_pattern_accepts_exactly_what_the_policy_accepts(
    doc: dict[str, Any], address: tuple[int, int, int, int], prefix: int, aligned: bool
) -> None:
    value = int.from_bytes(bytes(address), "big")
    if aligned:
        value &= (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF
    entry = ".".join(str(b) for b in value.to_bytes(4, "big")) + f"/{prefix}"
    for where in ("allow_out", "deny_out"):
        pattern = doc["components"]["schemas"]["NetworkConfig"]["properties"][where]["items"]["pattern"]
        assert bool(re.match(pattern, entry)) == _accepted(entry, where), (where, entry)


@pytest.mark.parametrize("entry", ["10.0.0.1/8", "192.168.1.1/24", "0.0.0.1/0", "255.255.255.255/31"])
def test_cidrs_with_host_bits_are_outside_the_pattern(doc: dict[str, Any], entry: str) -> None:
    pattern = doc["components"]["schemas"]["NetworkConfig"]["properties"]["allow_out"]["items"]["pattern"]
    assert not re.match(pattern, entry) and not _accepted(entry, "allow_out")
    assert re.match(pattern, entry.split("/")[0])


def test_the_committed_document_is_the_generated_one() -> None:
    """``openapi.json`` is generated from the declarations; after changing one, run the generator's ``--write``."""
    from mockserver.tensorlake.openapi import DOCUMENT_PATH, main, rendered

    assert DOCUMENT_PATH.read_text(encoding="utf-8") == rendered(), (
        "run: python -m mockserver.tensorlake.openapi --write"
    )
    assert main(["--check"]) == 0


def test_a_stale_document_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mockserver.tensorlake import openapi

    stale = tmp_path / "openapi.json"
    stale.write_text(openapi.rendered().replace('"maximum": 2592000', '"maximum": 2592001'), encoding="utf-8")
    monkeypatch.setattr(openapi, "DOCUMENT_PATH", stale)
    assert openapi.main(["--check"]) == 1
    assert openapi.main(["--write"]) == 0 and openapi.main(["--check"]) == 0


def test_every_setting_is_in_the_create_request_and_each_shown_one_in_sandbox_info(doc: dict[str, Any]) -> None:
    from mockserver.tensorlake.model.settings import MARKERS, SHOWN

    schemas = doc["components"]["schemas"]
    assert set(MARKERS) <= set(schemas["CreateSandboxRequest"]["properties"])
    assert set(SHOWN.values()) <= set(schemas["SandboxInfo"]["properties"])
