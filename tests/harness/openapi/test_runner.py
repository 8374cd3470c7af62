"""The Schemathesis contracts pass the mocks, catch wrong implementations, and their deviation table is sound."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("schemathesis")

from starlette.types import ASGIApp, Message, Receive, Scope, Send

import harness.openapi.runner
from harness.differential.real_server import RealOpenSandboxServer, RealOpenSandboxUnavailable
from harness.openapi.runner import (
    ALL_CHECKS,
    SCHEMA_DEVIATIONS,
    SPECS,
    Endpoint,
    SchemaContract,
    auth_headers,
    deviations_markdown,
    excluded_checks,
    load_document,
    operation_labels,
    register_schema_deviations,
    sandbox_endpoints,
    skip_reason,
    stale_deviation_entries,
)
from harness.reporting import report as report_module
from mockserver.asgi.server import MockServer
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import DEFAULT_API_KEY, TensorLakeMock

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = ROOT / "harness" / "contracts" / "test_schemathesis.py"
OS_KEY = "contract-key"
Change = Callable[[int, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]


class Corrupt:
    """ASGI middleware that rewrites the answers to one method and path (a deliberately wrong implementation)."""

    def __init__(self, app: ASGIApp, method: str, path: str, change: Change) -> None:
        self.app = app
        self.method = method
        self.path = re.compile(path)
        self.change = change

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != self.method or not self.path.fullmatch(scope["path"]):
            await self.app(scope, receive, send)
            return
        status = 0
        headers: dict[str, str] = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers.update({k.decode("latin-1"): v.decode("latin-1") for k, v in message.get("headers", [])})
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            new_status, new_headers, body = self.change(status, headers, b"".join(chunks))
            new_headers = {k: v for k, v in new_headers.items() if k.lower() != "content-length"}
            new_headers["content-length"] = str(len(body))
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in new_headers.items()]
            await send({"type": "http.response.start", "status": new_status, "headers": raw})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)


def json_change(edit: Callable[[Any], Any]) -> Change:
    """Return a change that edits a 2xx JSON body (other answers pass through)."""

    def change(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        if not 200 <= status < 300:
            return status, headers, body
        return status, headers, json.dumps(edit(json.loads(body))).encode()

    return change


def server_error(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """Answer 500 with a well-formed error body."""
    return 500, {"content-type": "application/json"}, b'{"code": "RUNTIME_ERROR", "message": "boom"}'


def plain_text(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """Answer 200 as text/plain."""
    return 200, {"content-type": "text/plain"}, b"ok"


def teapot(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """Answer with a status no operation documents."""
    return 418, {"content-type": "application/json"}, b'{"code": "TEAPOT", "message": "short and stout"}'


def drop(key: str) -> Callable[[Any], Any]:
    """Return an edit removing a top-level key."""
    return lambda data: {k: v for k, v in data.items() if k != key}


@contextmanager
def served(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` on a loopback socket and yield its URL."""
    with MockServer(app) as server:
        yield server.url


def failures(exc: BaseException) -> set[str]:
    """Return the class names of the leaf exceptions of a (nested) exception group."""
    if isinstance(exc, BaseExceptionGroup):
        return set().union(*(failures(e) for e in exc.exceptions))
    return {type(exc).__name__}


def lifecycle_contract(url: str) -> SchemaContract:
    """Return the OpenSandbox lifecycle contract against ``url``."""
    return SchemaContract(SPECS["opensandbox-lifecycle"], Endpoint(url, auth_headers("opensandbox", OS_KEY)))


def run_lifecycle(app: ASGIApp, label: str, examples: int = 8) -> set[str]:
    """Fuzz one lifecycle operation of ``app`` and return the failure names (empty when it conforms)."""
    with served(app) as url:
        contract = lifecycle_contract(url)
        try:
            contract.run_operation(label, examples)
        except BaseException as exc:
            return failures(exc)
        finally:
            contract.close()
    return set()


@pytest.fixture
def os_mock() -> OpenSandboxMock:
    """Return a fresh OpenSandbox mock with an API key."""
    return OpenSandboxMock(seed=3, api_key=OS_KEY)


# --- the contract passes the mocks -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "label", ["GET /v1/sandboxes", "POST /v1/sandboxes", "GET /v1/sandboxes/{sandbox_id}", "GET /health"]
)
def test_opensandbox_mock_passes(os_mock: OpenSandboxMock, label: str) -> None:
    assert run_lifecycle(os_mock.app, label) == set()


def test_opensandbox_link_scenarios_pass_and_reach_real_sandboxes(os_mock: OpenSandboxMock) -> None:
    with served(os_mock.app) as url:
        contract = lifecycle_contract(url)
        contract.run_stateful(8)
        contract.close()
    assert contract.calls > 8
    assert os_mock.sandbox_ids() == []  # what the scenarios created was deleted


def test_execd_and_egress_pass_in_a_sandbox(os_mock: OpenSandboxMock) -> None:
    with served(os_mock.app) as url:
        lifecycle = Endpoint(url, auth_headers("opensandbox", OS_KEY))
        with sandbox_endpoints(lifecycle, [44772, 18080]) as endpoints:
            assert endpoints[44772].base_url.startswith(url + "/direct/")
            SchemaContract(SPECS["opensandbox-execd"], endpoints[44772]).run_operation("GET /metrics", 3)
            SchemaContract(SPECS["opensandbox-egress"], endpoints[18080]).run_operation("PATCH /policy", 8)
        assert os_mock.sandbox_ids() == []


def test_tensorlake_mock_passes_and_serves_the_contracts_document() -> None:
    mock = TensorLakeMock(seed=3)
    with served(mock.app) as url:
        served_doc = httpx.get(f"{url}/openapi.json").json()
        contract = SchemaContract(SPECS["tensorlake"], Endpoint(url, auth_headers("tensorlake", DEFAULT_API_KEY)))
        contract.run_operation("GET /sandboxes", 5)
        contract.run_stateful(5)
        contract.close()
    assert served_doc == json.loads((ROOT / "mockserver" / "tensorlake" / "openapi.json").read_text(encoding="utf-8"))


# --- the contract catches wrong implementations ----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "change", "label", "expected"),
    [
        pytest.param("GET", "/v1/sandboxes", server_error, "GET /v1/sandboxes", "ServerError", id="500"),
        pytest.param("GET", "/health", teapot, "GET /health", "UndefinedStatusCode", id="undocumented-status"),
        pytest.param(
            "GET", "/v1/sandboxes", json_change(drop("pagination")), "GET /v1/sandboxes", "JsonSchemaError", id="key"
        ),
        pytest.param(
            "GET",
            "/v1/sandboxes",
            json_change(lambda d: {**d, "pagination": {**d["pagination"], "page": "one"}}),
            "GET /v1/sandboxes",
            "JsonSchemaError",
            id="wrong-type",
        ),
        pytest.param("GET", "/v1/sandboxes", plain_text, "GET /v1/sandboxes", "UndefinedContentType", id="text"),
        pytest.param(
            "POST",
            r"/v1/sandboxes/[^/]+/pause",
            server_error,
            "POST /v1/sandboxes/{sandbox_id}/pause",
            "ServerError",
            id="500-where-other-checks-are-excused",
        ),
        pytest.param(
            "GET",
            r"/v1/sandboxes/[^/]+/networkpolicy",
            plain_text,
            "GET /v1/sandboxes/{sandbox_id}/networkpolicy",
            "UndefinedContentType",
            id="text-where-the-status-is-excused",
        ),
    ],
)
def test_lifecycle_contract_catches(
    os_mock: OpenSandboxMock, method: str, path: str, change: Change, label: str, expected: str
) -> None:
    found = run_lifecycle(Corrupt(os_mock.app, method, path, change), label)
    assert expected in found, found


def test_link_scenarios_catch_a_broken_answer_only_a_real_sandbox_gets(os_mock: OpenSandboxMock) -> None:
    app = Corrupt(os_mock.app, "GET", r"/v1/sandboxes/[^/]+", json_change(drop("status")))
    assert run_lifecycle(app, "GET /v1/sandboxes/{sandbox_id}") == set()  # random ids only ever get 404
    with served(app) as url:
        contract = lifecycle_contract(url)
        with pytest.raises(BaseException) as caught:
            contract.run_stateful(30)
        contract.close()
    assert "JsonSchemaError" in failures(caught.value)


def test_tensorlake_contract_catches_a_missing_key() -> None:
    mock = TensorLakeMock(seed=3)
    with served(Corrupt(mock.app, "GET", "/sandboxes", json_change(drop("sandboxes")))) as url:
        contract = SchemaContract(SPECS["tensorlake"], Endpoint(url, auth_headers("tensorlake", DEFAULT_API_KEY)))
        with pytest.raises(BaseException) as caught:
            contract.run_operation("GET /sandboxes", 5)
    assert "JsonSchemaError" in failures(caught.value)


# --- the real opensandbox-server needs exactly the registered deviations --------------------------------


@pytest.fixture(scope="module")
def real_server() -> Iterator[RealOpenSandboxServer]:
    """Serve the real opensandbox-server 1.1.1 (against the fake Docker API) for this module."""
    server = RealOpenSandboxServer()
    try:
        server.start()
    except RealOpenSandboxUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


def real_contract(server: RealOpenSandboxServer) -> SchemaContract:
    """Return the lifecycle contract against the real server (not a sandproof mock)."""
    return SchemaContract(SPECS["opensandbox-lifecycle"], Endpoint(server.url, server.headers), mock=False)


@pytest.mark.parametrize(
    ("label", "without_exclusions"),
    [
        ("GET /v1/sandboxes/{sandbox_id}/networkpolicy", "UndefinedStatusCode"),
        ("GET /v1/pools", "ServerError"),
        ("GET /v1/sandboxes/{sandbox_id}", None),
    ],
)
def test_real_server_passes_only_with_its_registered_deviations(
    real_server: RealOpenSandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    label: str,
    without_exclusions: str | None,
) -> None:
    real_contract(real_server).run_operation(label, 5)
    monkeypatch.setattr(harness.openapi.runner, "SCHEMA_DEVIATIONS", ())
    if without_exclusions is None:
        real_contract(real_server).run_operation(label, 5)
        return
    with pytest.raises(BaseException) as caught:
        real_contract(real_server).run_operation(label, 5)
    assert without_exclusions in failures(caught.value)


def test_real_server_passes_the_link_scenarios(real_server: RealOpenSandboxServer) -> None:
    # Not the /v1/snapshots links: the fake Docker API has no image delete, so deleting a snapshot fails there.
    spec = dataclasses.replace(SPECS["opensandbox-lifecycle"], stateful_paths="^/v1/sandboxes")
    contract = SchemaContract(spec, Endpoint(real_server.url, real_server.headers), mock=False)
    contract.run_stateful(6)
    contract.close()
    assert contract.calls > 6


# --- the contract module, run by pytest against a URL target ---------------------------------------------


@pytest.fixture
def contract_module(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Put the contract module in a pytester directory, with the key and a private deviation registry."""
    monkeypatch.setattr(report_module, "_DEVIATIONS", [])
    monkeypatch.setenv("OPEN_SANDBOX_API_KEY", OS_KEY)
    pytester.makepyfile(test_schemathesis=CONTRACT.read_text(encoding="utf-8"))
    return pytester


def _run_contract(pytester: pytest.Pytester, url: str, selection: str) -> pytest.RunResult:
    """Run the contract module against ``opensandbox:url``, selecting tests by keyword."""
    return pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--sandproof-target=opensandbox:{url}", "--hypothesis-profile=dev", "-k", selection
    )


def test_contract_module_passes_the_mock_and_fails_a_broken_one(
    contract_module: pytest.Pytester, os_mock: OpenSandboxMock
) -> None:
    selection = "opensandbox-lifecycle:GET:/v1/sandboxes] or opensandbox-lifecycle:links"
    with served(os_mock.app) as url:
        _run_contract(contract_module, url, selection).assert_outcomes(passed=2)
    broken = Corrupt(os_mock.app, "GET", "/v1/sandboxes", json_change(drop("items")))
    with served(broken) as url:
        result = _run_contract(contract_module, url, "opensandbox-lifecycle:GET:/v1/sandboxes]")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Response violates schema*"])


def test_contract_module_skips_tensorlake_on_an_opensandbox_target(
    contract_module: pytest.Pytester, os_mock: OpenSandboxMock
) -> None:
    with served(os_mock.app) as url:
        result = _run_contract(contract_module, url, "tensorlake:GET:/sandboxes]")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*does not cover tensorlake*"])


# --- the deviation table ---------------------------------------------------------------------------------


def test_every_deviation_names_real_operations_and_checks() -> None:
    assert stale_deviation_entries() == []


def test_documented_5xx_entries_name_operations_that_document_a_5xx() -> None:
    for entry in SCHEMA_DEVIATIONS:
        if entry.kind != "documented":
            continue
        raw = load_document(entry.spec)
        for label in entry.operations:
            method, _, path = label.partition(" ")
            statuses = raw["paths"][path][method.lower()]["responses"]
            assert any(str(code).startswith("5") for code in statuses), label


def test_mock_only_entries_apply_only_to_mocks() -> None:
    label = "POST /credential-vault"
    assert skip_reason("opensandbox-egress", label, mock=True) is not None
    assert skip_reason("opensandbox-egress", label, mock=False) is None
    assert excluded_checks("opensandbox-egress", label, mock=False) == frozenset()
    assert ALL_CHECKS in excluded_checks("opensandbox-egress", label, mock=True)
    pause = "POST /v1/sandboxes/{sandbox_id}/pause"
    assert excluded_checks("opensandbox-lifecycle", pause, mock=False) == {
        "content_type_conformance",
        "response_schema_conformance",
    }
    assert excluded_checks("opensandbox-lifecycle", "GET /v1/sandboxes", mock=True) == frozenset()


def test_deviations_are_rendered_and_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_module, "_DEVIATIONS", [])
    table = deviations_markdown()
    assert table.count("\n") == len(SCHEMA_DEVIATIONS) + 2
    assert "`GET /v1/sandboxes/{sandbox_id}/networkpolicy`" in table
    registered = register_schema_deviations()
    assert registered == len(report_module.deviations()) == sum(d.kind != "documented" for d in SCHEMA_DEVIATIONS)
    assert {d.operation for d in report_module.deviations()} <= {spec.row for spec in SPECS.values()}


def test_links_are_added_in_memory_only() -> None:
    raw = load_document("opensandbox-lifecycle")
    links = raw["paths"]["/v1/sandboxes"]["post"]["responses"]["202"]["links"]
    assert links["get_sandbox_v1_sandboxes__sandbox_id__get"]["parameters"] == {"sandbox_id": "$response.body#/id"}
    text = (ROOT / "harness" / "specs" / "opensandbox" / "lifecycle-1.1.1.yaml").read_text(encoding="utf-8")
    assert "links:" not in text
    assert len(operation_labels("opensandbox-lifecycle")) == len(
        SchemaContract(SPECS["opensandbox-lifecycle"], Endpoint("http://127.0.0.1:9")).labels()
    )


#: SHA-256 of the OpenSandbox 1.1.1 documents as published, so the packaged copies cannot drift unnoticed.
PUBLISHED_SHA256 = {
    "lifecycle-1.1.1.yaml": "9dd5c11d51a416549f0671f1f00f80432220454b6b9975a50b3adbc2ffddef2b",
    "execd.yaml": "9add6010898391dee2140b90f6437c4b2bacffb3cd8cc6ff7cf6bae15b88a2bb",
    "egress.yaml": "15b9612455299e650ffc9a59e9dc5cdb07ef86139208d432fb9e0ff952c2384b",
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_SHA256))
def test_packaged_specs_are_the_published_documents(name: str) -> None:
    packaged = ROOT / "harness" / "specs" / "opensandbox" / name
    assert hashlib.sha256(packaged.read_bytes()).hexdigest() == PUBLISHED_SHA256[name]
