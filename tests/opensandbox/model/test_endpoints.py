"""Endpoint resolution: the URLs handed out (direct and proxy, from a plain Host), headers and check order."""

from __future__ import annotations

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model.auth import KeyTable
from mockserver.opensandbox.model.config import DEFAULT_HOST, ServerConfig
from mockserver.opensandbox.model.endpoints import resolve_endpoint
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.validation import RequestValidationError

from .conftest import create, new_state

CONFIG = ServerConfig()


def _resolve(
    state: OpenSandboxModel,
    sandbox_id: str,
    port: str = "44772",
    query: list[tuple[str, str]] | None = None,
    *,
    config: ServerConfig = CONFIG,
    host: str | None = "mock.test:8080",
    mount: str = "/v1",
) -> dict[str, object]:
    path = f"{mount}/sandboxes/{sandbox_id}/endpoints/{port}"
    return resolve_endpoint(state, config, "default", sandbox_id, port, query or [], host=host, path=path)


def test_direct_and_proxy_urls_are_built_from_the_host_value() -> None:
    state = new_state()
    sb = create(state)
    assert _resolve(state, sb.id) == {"endpoint": f"mock.test:8080/direct/{sb.id}/44772"}
    proxied = _resolve(state, sb.id, "18080", [("use_server_proxy", "true")])
    assert proxied == {"endpoint": f"mock.test:8080/v1/sandboxes/{sb.id}/proxy/18080"}
    bare = _resolve(state, sb.id, query=[("use_server_proxy", "1")], mount="")
    assert bare == {"endpoint": f"mock.test:8080/sandboxes/{sb.id}/proxy/44772"}
    assert _resolve(state, sb.id, host=None)["endpoint"] == f"{DEFAULT_HOST}/direct/{sb.id}/44772"
    assert (
        _resolve(state, sb.id, query=[("use_server_proxy", "true"), ("use_server_proxy", "false")])["endpoint"]
        == f"mock.test:8080/direct/{sb.id}/44772"
    )  # the last value wins, as Starlette reads a query


def test_headers_name_the_tokens_and_in_multi_tenant_mode_the_secure_access_token() -> None:
    state = new_state()
    sb = create(state)
    tokens = ServerConfig(execd_token="e", egress_token="g")
    assert _resolve(state, sb.id, config=tokens)["headers"] == {"X-EXECD-ACCESS-TOKEN": "e"}
    assert _resolve(state, sb.id, "18080", config=tokens)["headers"] == {"OPENSANDBOX-EGRESS-AUTH": "g"}
    multi = ServerConfig(access=KeyTable.from_option({"ka": "default", "kb": "b"}))
    assert _resolve(state, sb.id, config=multi)["headers"] == {"OpenSandbox-Secure-Access": sb.access_token}
    assert "headers" not in _resolve(state, sb.id, query=[("use_server_proxy", "true")], config=multi)


@pytest.mark.parametrize(
    ("port", "query", "status", "code"),
    [
        ("abc", [], 422, None),
        ("44772", [("use_server_proxy", "maybe")], 422, None),
        ("44772", [("expires", "soon")], 422, None),
        ("44772", [("use_server_proxy", "true"), ("expires", "4102444800")], 400, "SANDBOX::INVALID_PARAMETER"),
        ("44772", [("expires", "4102444800")], 400, "SANDBOX::API_NOT_SUPPORTED"),
        ("0", [], 400, "DOCKER::INVALID_PORT"),
        ("70000", [], 400, "DOCKER::INVALID_PORT"),
    ],
)
def test_refusals_come_in_the_real_servers_order(
    port: str, query: list[tuple[str, str]], status: int, code: str | None
) -> None:
    state = new_state()
    with pytest.raises((ApiError, RequestValidationError)) as caught:
        _resolve(state, "no-such-sandbox", port, query)  # every check comes before the lookup
    assert caught.value.status == status
    assert getattr(caught.value, "code", None) == code


def test_unknown_sandbox_then_pending_pod() -> None:
    state = new_state()
    with pytest.raises(ApiError) as caught:
        _resolve(state, "nope")
    assert (caught.value.status, caught.value.code) == (404, "DOCKER::SANDBOX_NOT_FOUND")
    k8s = new_state("kubernetes")
    pending = create(k8s)
    with pytest.raises(ApiError) as caught:
        _resolve(k8s, pending.id)
    assert caught.value.code == "KUBERNETES::POD_IP_NOT_AVAILABLE"
    k8s.clock.advance(k8s.profile.pending_seconds)
    assert _resolve(k8s, pending.id)["endpoint"] == f"mock.test:8080/direct/{pending.id}/44772"
