"""The sandbox-port gate: who reaches execd and the sidecar, and what answers everyone else."""

from __future__ import annotations

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model.auth import ANY_KEY, KeyTable, key_tenant
from mockserver.opensandbox.model.config import ServerConfig
from mockserver.opensandbox.model.errors import ExecdAuthError, TextError, wire_code
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.ports import PortCall, admit_port
from mockserver.opensandbox.model.profiles import EGRESS_PORT, EXECD_PORT
from mockserver.opensandbox.model.records import SandboxRecord

from .conftest import POLICY, create, new_state

MULTI = ServerConfig(access=KeyTable.from_option({"ka": "a", "kb": "b"}))
SINGLE = ServerConfig(access=KeyTable.from_option("k"))


def _answer(state: OpenSandboxModel, config: ServerConfig, call: PortCall) -> tuple[int, str | None] | str:
    """Return the admitted sandbox's id, or the refusal as (status, wire code)."""
    try:
        return admit_port(state, config, call).id
    except ApiError as exc:
        return exc.status, wire_code(exc)


def _tenant_sandbox(state: OpenSandboxModel) -> SandboxRecord:
    return create(state, "a", networkPolicy=POLICY)


def test_single_tenant_ports_need_no_key() -> None:
    state = new_state()
    sb = _tenant_sandbox(state)
    for via_proxy in (False, True):
        for port in (EXECD_PORT, EGRESS_PORT):
            assert _answer(state, SINGLE, PortCall(sb.id, port, via_proxy)) == sb.id


@pytest.mark.parametrize(
    ("call", "answer"),
    [
        # direct: the owner's key or the sandbox's token gets through
        (dict(api_key="ka"), "ok"),
        (dict(api_key=None), (401, "MISSING_API_KEY")),
        (dict(api_key="nope"), (401, "INVALID_API_KEY")),
        (dict(api_key="kb"), (502, None)),  # another tenant: as if there were no such sandbox
        (dict(access_token="TOKEN"), "ok"),
        (dict(access_token="forged"), (401, "MISSING_OR_INVALID_SECURE_ACCESS")),
        (dict(access_token="forged", api_key="ka"), (401, "MISSING_OR_INVALID_SECURE_ACCESS")),
        # through the proxy the lifecycle auth has resolved the tenant
        (dict(via_proxy=True, tenant="a"), "ok"),
        (dict(via_proxy=True, tenant="b"), (404, "DOCKER::SANDBOX_NOT_FOUND")),
        (dict(via_proxy=True, tenant=None), (401, "MISSING_API_KEY")),
    ],
)
def test_multi_tenant_gate_table(call: dict[str, object], answer: object) -> None:
    state = new_state()
    sb = _tenant_sandbox(state)
    if call.get("access_token") == "TOKEN":
        call = {**call, "access_token": sb.access_token}
    fields = {"via_proxy": False, **call}
    got = _answer(state, MULTI, PortCall(sb.id, EXECD_PORT, **fields))  # type: ignore[arg-type]
    assert got == (sb.id if answer == "ok" else answer)


def test_any_key_mode_each_key_is_a_tenant() -> None:
    config = ServerConfig(access=KeyTable.from_option(ANY_KEY))
    state = new_state()
    sb = create(state, key_tenant("mine"))
    assert _answer(state, config, PortCall(sb.id, EXECD_PORT, False, api_key="mine")) == sb.id
    assert _answer(state, config, PortCall(sb.id, EXECD_PORT, False, api_key="yours")) == (502, None)
    assert _answer(state, config, PortCall(sb.id, EXECD_PORT, False)) == (401, "MISSING_API_KEY")


def test_unknown_sandboxes_and_unserved_ports() -> None:
    state = new_state()
    plain = create(state)  # no networkPolicy: no egress sidecar
    assert _answer(state, SINGLE, PortCall("nope", EXECD_PORT, False)) == (502, None)
    assert _answer(state, SINGLE, PortCall("nope", EXECD_PORT, True)) == (404, "DOCKER::SANDBOX_NOT_FOUND")
    assert _answer(state, SINGLE, PortCall(plain.id, EGRESS_PORT, True)) == (502, "BACKEND_CONNECTION_FAILED")
    assert _answer(state, SINGLE, PortCall(plain.id, EGRESS_PORT, False)) == (502, None)
    assert _answer(state, SINGLE, PortCall(plain.id, 8000, True)) == (502, "BACKEND_CONNECTION_FAILED")
    with pytest.raises(TextError) as caught:
        admit_port(state, SINGLE, PortCall(plain.id, 8000, False))
    assert caught.value.message == "Bad Gateway"


def test_a_paused_sandbox_is_unreachable_and_a_pending_pod_has_no_ip() -> None:
    state = new_state()
    sb = create(state)
    state.pause("default", sb.id)
    assert _answer(state, SINGLE, PortCall(sb.id, EXECD_PORT, True)) == (502, "BACKEND_CONNECTION_FAILED")
    k8s = new_state("kubernetes")
    pending = create(k8s)
    assert pending.state == "Pending"
    assert _answer(k8s, SINGLE, PortCall(pending.id, EXECD_PORT, True)) == (404, "KUBERNETES::POD_IP_NOT_AVAILABLE")
    assert _answer(k8s, SINGLE, PortCall(pending.id, EXECD_PORT, False)) == (502, None)


def test_execd_token_is_checked_after_the_sandbox_only_on_execd() -> None:
    config = ServerConfig(execd_token="t")
    state = new_state()
    sb = _tenant_sandbox(state)
    with pytest.raises(ExecdAuthError):
        admit_port(state, config, PortCall(sb.id, EXECD_PORT, False, execd_token="wrong"))
    assert _answer(state, config, PortCall(sb.id, EXECD_PORT, False, execd_token="t")) == sb.id
    assert _answer(state, config, PortCall(sb.id, EGRESS_PORT, False)) == sb.id
    assert _answer(state, config, PortCall("nope", EXECD_PORT, False)) == (502, None)
