"""The OpenAPI documents the OpenSandbox mock serves: the published ones, with the mock's deviations marked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import httpx
import pytest

from mockserver.core.deviations import deviations_of
from mockserver.opensandbox import OpenSandboxMock, openapi

EXT = openapi.EXTENSION


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with OpenSandboxMock(api_key="k").server() as srv, httpx.Client(base_url=srv.url) as c:  # no key sent
        yield c


def _published(name: str) -> dict[str, Any]:
    text = resources.files("mockserver.opensandbox").joinpath("specs", openapi.DOCUMENTS[name]).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def _unmarked(doc: dict[str, Any]) -> dict[str, Any]:
    for item in doc["paths"].values():
        for operation in item.values():
            if isinstance(operation, dict):
                operation.pop(EXT, None)
    return doc


@pytest.mark.parametrize(("name", "path"), sorted(openapi.SERVED_AT.items()))
def test_each_document_is_served_without_a_key_and_is_the_published_one(
    client: httpx.Client, name: str, path: str
) -> None:
    resp = client.get(path)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    served = resp.json()
    assert _unmarked(served) == _published(name)
    assert client.get(f"/openapi/{name}.json").json() == resp.json()


def test_the_operations_the_mock_answers_differently_are_marked(client: httpx.Client) -> None:
    lifecycle = client.get("/openapi.json").json()
    for path in ("/sandboxes", "/v1/sandboxes"):
        marks = lifecycle["paths"][path]["post"][EXT]
        modules = {m["module"] for m in marks}
        assert "mockserver.opensandbox.model.volumes" in modules, path
        assert all(m["deviation"] for m in marks)
    assert EXT not in lifecycle["paths"]["/v1/sandboxes/{sandbox_id}"]["get"]  # answered as the real server does
    assert EXT in lifecycle["paths"]["/v1/pools"]["get"]
    execd = client.get("/openapi/execd.json").json()
    assert EXT in execd["paths"]["/code"]["post"] and EXT not in execd["paths"]["/ping"]["get"]
    egress = client.get("/openapi/egress.json").json()
    assert EXT in egress["paths"]["/credential-vault"]["post"] and EXT not in egress["paths"]["/policy"]["get"]
    assert EXT not in egress["paths"]["/credential-vault"]["get"]  # the vault's reads answer as the sidecar does


def test_the_marks_are_the_deviations_table_text() -> None:
    texts = {d.module: d.text for d in deviations_of("mockserver.opensandbox")}
    marked = openapi.document("lifecycle")["paths"]["/sandboxes"]["post"][EXT]
    assert [m["deviation"] for m in marked] == [texts[m["module"]] for m in marked]


def test_every_deviating_operation_names_an_operation_of_its_document() -> None:
    assert openapi.unknown_deviating_operations() == []


def test_an_unknown_document_is_404(client: httpx.Client) -> None:
    assert client.get("/openapi/nope.json").status_code == 404
