"""The shared driver frame: how an answer's body is read, and the sandbox paths both providers use."""

from __future__ import annotations

import httpx

from harness.concurrency.opensandbox_driver import OpenSandboxDriver
from harness.concurrency.tensorlake_driver import TensorLakeDriver


def _drivers() -> tuple[OpenSandboxDriver, TensorLakeDriver]:
    opensandbox = OpenSandboxDriver("http://127.0.0.1:1/", api_key=None, strict=True, start=0.0, label="run")
    return opensandbox, TensorLakeDriver("http://127.0.0.1:1/", api_key="k", strict=True)


def test_a_body_is_json_else_its_start_and_an_empty_one_is_the_providers_empty_body() -> None:
    opensandbox, tensorlake = _drivers()
    for driver in (opensandbox, tensorlake):
        assert driver._body(httpx.Response(200, json={"id": "a"})) == {"id": "a"}
        assert driver._body(httpx.Response(502, text="x" * 300)) == "x" * 200
    assert opensandbox._body(httpx.Response(204)) is None
    assert tensorlake._body(httpx.Response(204)) == ""


def test_the_list_url_and_base_url_are_the_providers() -> None:
    opensandbox, tensorlake = _drivers()
    assert opensandbox.base_url == tensorlake.base_url == "http://127.0.0.1:1"
    assert opensandbox._list_url() == "/v1/sandboxes?metadata=sandproof-run%3Drun&pageSize=200"
    assert tensorlake._list_url() == "/sandboxes"
