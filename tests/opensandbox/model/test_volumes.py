"""Create-body ``volumes``, ``platform``, ``networkPolicy``, ``lifecycle`` and ``secureAccess`` checks against what the real 1.1.1 server answered."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model import lifecycle
from mockserver.opensandbox.model.config import ServerConfig
from mockserver.opensandbox.model.validation import RequestValidationError

from ..create_cases import (
    ACCEPTED_VOLUMES,
    BODY,
    ECHOED_PLATFORM,
    LIFECYCLE_CASES,
    MODE_CASES,
    NETWORK_POLICY_CASES,
    NO_EGRESS_IMAGE,
    PLATFORM_CASES,
    SECURE_ACCESS_CASES,
    VOLUME_CASES,
    Answer,
    volume,
)
from .conftest import new_state


def answer(body: dict[str, Any], config: ServerConfig | None = None) -> Answer:
    """Return the (status, body) the model's create gives; a refused create must leave no sandbox."""
    state = new_state()
    try:
        _, created = lifecycle.create_sandbox(state, "default", body, config)
    except RequestValidationError as exc:
        assert state.sandboxes == {}
        return 422, {"detail": exc.errors}
    except ApiError as exc:
        assert state.sandboxes == {}
        return exc.status, {"code": exc.code, "message": exc.message}
    return 202, created


@pytest.mark.parametrize("case", sorted(VOLUME_CASES))
def test_volumes_are_refused_as_the_real_server_refuses_them(case: str) -> None:
    volumes, expected = VOLUME_CASES[case]
    assert answer({**BODY, "volumes": volumes}) == expected


@pytest.mark.parametrize("case", sorted(PLATFORM_CASES))
def test_platforms_are_refused_as_the_real_server_refuses_them(case: str) -> None:
    platform, expected = PLATFORM_CASES[case]
    assert answer({**BODY, "platform": platform}) == expected


@pytest.mark.parametrize("volumes", ACCEPTED_VOLUMES)
def test_no_volumes_is_accepted(volumes: Any) -> None:
    assert answer({**BODY, "volumes": volumes})[0] == 202


def test_pvc_and_ossfs_volumes_are_accepted() -> None:
    ossfs = {"bucket": "bkt", "endpoint": "oss.example", "accessKeyId": "a", "accessKeySecret": "b"}
    volumes = [volume(pvc={"claimName": "c"}), volume(name="b", ossfs=ossfs, subPath="p/q")]
    assert answer({**BODY, "volumes": volumes})[0] == 202


def test_allowed_host_paths_admit_paths_under_them_only() -> None:
    config = ServerConfig(allowed_host_paths=("/data/sandboxes/",))
    inside = [volume(host={"path": "/data/sandboxes/run-1"})]
    assert answer({**BODY, "volumes": inside}, config)[0] == 202
    assert answer({**BODY, "volumes": [volume(host={"path": "/data/sandboxes"})]}, config)[0] == 202
    status, body = answer({**BODY, "volumes": [volume(host={"path": "/data/sandboxes-2"})]}, config)
    assert (status, body["code"]) == (400, "VOLUME::HOST_PATH_NOT_ALLOWED")
    assert body["message"].endswith("Allowed prefixes: ['/data/sandboxes/']")


def test_dns_label_pattern_does_not_end_before_a_newline() -> None:
    status, body = answer({**BODY, "volumes": [volume(name="data\n", pvc={"claimName": "c"})]})
    assert (status, body["detail"][0]["type"]) == (422, "string_pattern_mismatch")


def test_field_errors_come_in_the_models_field_order() -> None:
    status, body = answer({**BODY, "volumes": [{"mountPath": 1, "readOnly": "x"}]})
    assert status == 422
    assert [e["loc"][-1] for e in body["detail"]] == ["name", "mountPath", "readOnly"]


def test_the_platform_is_echoed_stripped_and_lower_case() -> None:
    sent, echoed = ECHOED_PLATFORM
    state = new_state()
    sb, created = lifecycle.create_sandbox(state, "default", {**BODY, "platform": sent})
    assert created["platform"] == echoed
    assert lifecycle.get_sandbox(state, "default", sb.id)["platform"] == echoed


@pytest.mark.parametrize("case", sorted(NETWORK_POLICY_CASES))
def test_network_policies_without_an_egress_image_as_the_real_server(case: str) -> None:
    fields, expected = NETWORK_POLICY_CASES[case]
    assert answer({**BODY, **fields}, ServerConfig(egress_image=False)) == expected


def test_an_egress_image_lets_a_policy_through() -> None:
    """With a sidecar image (the mock's default), a policy the engine accepts creates the sandbox."""
    policy = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
    assert answer({**BODY, "networkPolicy": policy}, ServerConfig())[0] == 202
    assert answer({**BODY, "networkPolicy": policy}, ServerConfig(egress_image=False)) == NO_EGRESS_IMAGE


@pytest.mark.parametrize("case", sorted(LIFECYCLE_CASES))
def test_lifecycle_hooks_are_checked_as_the_real_server_checks_them(case: str) -> None:
    hooks, expected = LIFECYCLE_CASES[case]
    assert answer({**BODY, "lifecycle": hooks}) == expected


@pytest.mark.parametrize("case", sorted(SECURE_ACCESS_CASES))
def test_secure_access_reads_booleans_as_the_real_server(case: str) -> None:
    value, status, kind = SECURE_ACCESS_CASES[case]
    got, body = answer({**BODY, "secureAccess": value})
    assert got == status
    if kind is not None:
        assert [(e["type"], e["loc"]) for e in body["detail"]] == [(kind, ["body", "secureAccess"])]


@pytest.mark.parametrize("case", sorted(MODE_CASES))
def test_template_pool_and_credential_proxy_modes_as_the_real_server(case: str) -> None:
    body, (status, expected) = MODE_CASES[case]
    got, answered = answer(body, ServerConfig(egress_image=False))  # the real server's configuration
    assert (got, answered if got != 202 else "<created>") == (status, expected)
