"""Egress rules without HTTP: the sidecar's ``/policy`` answers and the lifecycle networkpolicy route."""

from __future__ import annotations

import json

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model.config import ServerConfig
from mockserver.opensandbox.model.egress import effective_policy, egress_allowed, network_policy, sidecar_policy
from mockserver.opensandbox.model.errors import TextError

from .conftest import POLICY, create, new_state

CONFIG = ServerConfig()


def _raw(body: object) -> bytes:
    return json.dumps(body).encode()


def test_sidecar_reads_and_merges_the_policy() -> None:
    sb = create(new_state(), networkPolicy=POLICY)
    got = sidecar_policy(sb, CONFIG, "GET", b"")
    assert got["policy"] == {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
    patched = sidecar_policy(sb, CONFIG, "PATCH", _raw([{"action": "allow", "target": "github.com"}]))
    assert "policy" not in patched and patched["mode"] == "deny_all"
    assert egress_allowed(effective_policy(sb), "github.com") and egress_allowed(effective_policy(sb), "pypi.org")
    sidecar_policy(sb, CONFIG, "DELETE", _raw(["pypi.org"]))
    assert not egress_allowed(effective_policy(sb), "pypi.org")


@pytest.mark.parametrize(
    ("config", "method", "raw", "status", "text"),
    [
        (ServerConfig(egress_token="t"), "GET", b"", 401, "unauthorized"),
        (CONFIG, "PATCH", b"{not json", 400, "invalid JSON body"),
        (CONFIG, "PATCH", b"[]", 400, "invalid policy"),
        (CONFIG, "DELETE", b"", 400, "invalid policy"),
    ],
)
def test_sidecar_refusals_are_text(config: ServerConfig, method: str, raw: bytes, status: int, text: str) -> None:
    sb = create(new_state(), networkPolicy=POLICY)
    before = sb.policy
    with pytest.raises(TextError) as caught:
        sidecar_policy(sb, config, method, raw)
    assert caught.value.status == status and caught.value.message.startswith(text)
    assert sb.policy is before


def test_networkpolicy_route_needs_a_running_sidecar() -> None:
    state = new_state()
    plain = create(state)
    with pytest.raises(ApiError) as caught:
        network_policy(state, CONFIG, "default", plain.id, "GET", None)
    assert (caught.value.status, caught.value.code) == (502, "BACKEND_CONNECTION_FAILED")
    sb = create(state, networkPolicy=POLICY)
    with pytest.raises(ApiError) as caught:
        network_policy(state, CONFIG, "default", sb.id, "PATCH", [{"action": "allow", "target": "*"}])
    assert (caught.value.status, caught.value.code) == (400, "SANDBOX::INVALID_PARAMETER")
    answer = network_policy(state, CONFIG, "default", sb.id, "PATCH", [{"action": "allow", "target": "example.com"}])
    assert [r["target"] for r in answer["policy"]["egress"]] == ["example.com", "pypi.org"]
    with pytest.raises(ApiError) as caught:
        network_policy(state, CONFIG, "other", sb.id, "GET", None)
    assert caught.value.status == 404


def test_without_a_sidecar_nothing_is_filtered() -> None:
    sb = create(new_state())
    assert effective_policy(sb) is None and egress_allowed(None, "anything.example")
