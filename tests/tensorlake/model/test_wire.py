"""The wire records declared once: the answers to bad bodies, the stored form, and what each setting's marker does."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model.records import Sandbox
from mockserver.tensorlake.model.settings import INHERITED, MARKERS, SHOWN
from mockserver.tensorlake.model.validation import parse_create, parse_mount, parse_patch


def resolve(name: str) -> list[str]:
    """Resolve every name but ``*.invalid``."""
    return [] if name.endswith(".invalid") else ["192.0.2.1"]


#: (body, code, message): the answers the hand-written checks gave before the declarations, kept word for word.
CREATE_REFUSALS: list[tuple[Any, str, str]] = [
    ([1], "invalid_type", "request body must be a JSON object"),
    ({"wait": "yes"}, "invalid_type", "wait must be a boolean, got str"),
    ({"name": 5}, "invalid_type", "name must be a string, got int"),
    (
        {"name": "Bad_Name"},
        "invalid_name",
        "name 'Bad_Name' must match ^[a-z][a-z0-9-]{0,62}$ and must not end with '-'",
    ),
    (
        {"name": "abcdefghijklmnopqrstu"},
        "invalid_name",
        "name 'abcdefghijklmnopqrstu' is ambiguous: 21 lowercase alphanumerics look like an id",
    ),
    ({"image": " "}, "invalid_value", "image must not be empty"),
    ({"resources": []}, "invalid_type", "resources must be an object"),
    ({"resources": {"cpus": "two"}}, "invalid_type", "resources.cpus must be a number"),
    ({"resources": {"cpus": True}}, "invalid_type", "resources.cpus must be a number"),
    ({"resources": {"cpus": 0}}, "invalid_value", "resources.cpus must be positive"),
    ({"resources": {"cpus": 1e300}}, "invalid_value", "resources.cpus must be at most 256, got 1e+300"),
    ({"resources": {"memory_mb": -1}}, "invalid_value", "resources.memory_mb must be at least 1, got -1"),
    (
        {"resources": {"ephemeral_disk_mb": 10**9}},
        "invalid_value",
        "resources.disk_mb must be at most 16777216, got 1000000000",
    ),
    ({"resources": {"gpus": "x"}}, "invalid_type", "resources.gpus must be a list"),
    ({"resources": {"gpus": [{}]}}, "invalid_type", "resources.gpus[].count must be an integer, got NoneType"),
    ({"resources": {"gpus": [{"count": 1, "model": "X"}]}}, "invalid_gpu_model", "unknown GPU model 'X'"),
    ({"timeout_secs": 1e30}, "invalid_type", "timeout_secs must be an integer, got float"),
    ({"timeout_secs": True}, "invalid_type", "timeout_secs must be an integer, got bool"),
    (
        {"timeout_secs": 10**30},
        "invalid_value",
        "timeout_secs must be at most 2592000, got 1000000000000000000000000000000",
    ),
    ({"entrypoint": ["a", 1]}, "invalid_type", "entrypoint must be a list of strings"),
    ({"entrypoint": "a"}, "invalid_type", "entrypoint must be a list of strings"),
    ({"network": {"allow_out": ["10.0.0.1/8"]}}, "invalid_cidr", None),
    ({"network": {"allow_out": ["gone.invalid"]}}, "unresolvable_host", None),
    ({"allow_unauthenticated_access": 1}, "invalid_type", "allow_unauthenticated_access must be a boolean, got int"),
    ({"allow_unauthenticated_proxy_access": "x"}, "invalid_type", None),
    ({"exposed_ports": [9501]}, "invalid_port", "port 9501 is the management API and cannot be exposed"),
    ({"exposed_ports": [80, "x"]}, "invalid_port", "exposed port 'x' is not an integer"),
    ({"exposed_ports": [0]}, "invalid_port", "exposed port 0 is outside 1-65535"),
    ({"auto_resume": False}, "invalid_auto_resume", "auto_resume=false requires a named sandbox"),
    ({"file_systems": [{"file_system_id": "f", "mount_path": "m"}]}, "invalid_value", "mount_path must be absolute"),
    ({"file_systems": [{"file_system_id": "f", "mount_path": "/m", "b": 1, "a": 2}]}, "unknown_field", None),
    ({"max_pending_secs": 0}, "invalid_value", "max_pending_secs must be at least 1, got 0"),
    ({"secret_names": ["a", 2]}, "invalid_type", "secret_names must be a list of strings"),
    ({"template_id": ""}, "invalid_value", "template_id must not be empty"),
    ({"pool_id": "p"}, "not_supported", "claiming from a sandbox pool is not supported by this mock"),
]


@pytest.mark.parametrize(("body", "code", "message"), CREATE_REFUSALS)
def test_a_create_s_first_defect_is_answered_in_the_mock_s_words(body: Any, code: str, message: str | None) -> None:
    with pytest.raises(ApiError) as caught:
        parse_create(body, resolve)
    assert caught.value.code == code
    if message is not None:
        assert caught.value.message == message


def test_the_first_defect_in_declared_order_is_the_one_answered() -> None:
    with pytest.raises(ApiError) as caught:
        parse_create({"template_id": "", "name": 5, "timeout_secs": -1}, resolve)
    assert caught.value.message == "name must be a string, got int"


def test_rule_statuses_come_with_their_refusal() -> None:
    mounts = [{"file_system_id": "f", "mount_path": "/m"}, {"file_system_id": "g", "mount_path": "/m"}]
    with pytest.raises(ApiError) as caught:
        parse_create({"file_systems": mounts}, resolve)
    assert (caught.value.status, caught.value.code) == (409, "mount_path_in_use")
    with pytest.raises(ApiError) as pools:
        parse_create({"pool_id": "p"}, resolve)
    assert pools.value.status == 501


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "empty_update"),
        ({"shiny": 1}, "empty_update"),
        ({"resources": {}}, "empty_update"),
        ({"resources": {"gpus": 1}}, "unknown_field"),
        ({"resources": {"cpus": 1.5}}, "invalid_value"),
        ({"resources": {"cpus": None}}, "invalid_type"),
        ({"resources": {"cpus": 2}, "name": "x"}, "invalid_update"),
        ({"auto_resume": "no"}, "invalid_type"),
    ],
)
def test_patch_refusals(body: dict[str, Any], code: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_patch(body, resolve)
    assert caught.value.code == code


def test_what_a_body_gives() -> None:
    req = parse_create(
        {
            "name": "box",
            "network": None,
            "image": None,
            "allow_unauthenticated_proxy_access": True,
            "exposed_ports": [8080, 80, 8080],
            "resources": {"ephemeral_disk_mb": 2048, "shiny": 1},
            "brand_new": True,
        },
        resolve,
    )
    given = req.given()
    assert given["network"] is None and "image" not in given  # network: null clears, image: null is not given
    assert given["allow_unauthenticated_access"] is True  # the deprecated name stands in
    assert given["exposed_ports"] == (80, 8080)
    assert given["resources"].over(None).disk_mb == 2048
    assert req.unknown() == ["brand_new", "resources.shiny"]
    assert req.wait is None and parse_create({"wait": False}, resolve).wait is False


def test_a_mount_keeps_only_its_true_flags() -> None:
    mount = parse_mount({"file_system_id": "f", "mount_path": "/m", "read_only": False, "prefetch": True})
    assert mount.to_json() == {"file_system_id": "f", "mount_path": "/m", "prefetch": True}


def _sandbox(**settings: Any) -> Sandbox:
    return Sandbox(
        id="a" * 21, owner="tenant-x", namespace="default", created_at=12.5, filesystem=lambda: None, **settings
    )


def test_the_stored_form_round_trips_every_setting() -> None:
    req = parse_create(
        {
            "name": "box",
            "image": "python:3.11",
            "resources": {"cpus": 2, "memory_mb": 512, "gpus": [{"count": 1, "model": "H100"}]},
            "timeout_secs": 60,
            "entrypoint": ["sleep", "1"],
            "network": {"allow_out": ["api.example.com", "10.0.0.0/8"], "deny_out": ["10.1.0.0/16"]},
            "snapshot_id": "s1",
            "allow_unauthenticated_access": True,
            "exposed_ports": [3000],
            "auto_resume": False,
            "file_systems": [{"file_system_id": "f", "mount_path": "/data", "read_only": True}],
            "max_pending_secs": 30,
            "secret_names": ["token"],
            "template_id": "t1",
        },
        resolve,
    )
    given = req.given()
    given["resources"] = given["resources"].over(None)
    assert set(given) == set(MARKERS)
    sb = _sandbox(**given)
    stored = sb.dump(with_fs=False)
    loaded = Sandbox.load(stored, sb.filesystem)
    assert loaded == sb and loaded.dump(with_fs=False) == stored
    assert stored["network"] == {
        "allow_internet_access": True,
        "allow_out": ["api.example.com", "10.0.0.0/8"],
        "deny_out": ["10.1.0.0/16"],
    }


def test_a_record_the_previous_version_stored_still_loads() -> None:
    """The keys of the hand-written dump of earlier versions (a state file written before the declarations)."""
    earlier = {
        "id": "b" * 21,
        "owner": "tenant-y",
        "namespace": "default",
        "created_at": 3.0,
        "status": "running",
        "name": None,
        "image": None,
        "resources": {"cpus": 1.0, "memory_mb": 1024, "disk_mb": 10240},
        "timeout_secs": None,
        "entrypoint": None,
        "network": {"allow_internet_access": False, "allow_out": [], "deny_out": []},
        "allow_unauthenticated_access": False,
        "exposed_ports": [8080],
        "auto_resume": True,
        "pending_reason": None,
        "termination_reason": None,
        "error_details": None,
        "terminated_at": None,
        "file_systems": [{"file_system_id": "f", "mount_path": "/m"}],
        "snapshot_id": None,
        "secret_names": [],
        "template_id": None,
        "max_pending_secs": None,
        "ready_at": 3.0,
        "transition_at": None,
        "resuming": False,
        "running_since": 3.0,
        "resize": {
            "generation": 1,
            "requested": {"cpus": 2.0, "memory_mb": 1024, "disk_mb": 10240},
            "status": "pending",
            "done_at": 9.0,
        },
        "archived_at": None,
    }
    sb = Sandbox.load(earlier, lambda: None)
    assert sb.network is not None and sb.network.allow_internet_access is False
    assert sb.exposed_ports == (8080,) and sb.resize is not None and sb.resize.done_at == 9.0
    assert sb.dump(with_fs=False) == earlier
    info = sb.info(sandbox_url="http://x", ingress_endpoint="x")
    assert info["resource_resize"] == {
        "generation": 1,
        "requested": {"cpus": 2.0, "memory_mb": 1024, "disk_mb": 10240},
        "status": "pending",
    }
    assert info["network_policy"] == earlier["network"] and "network" not in info


def test_the_markers_say_what_a_snapshot_keeps_and_sandbox_info_shows() -> None:
    assert INHERITED == (
        "image",
        "resources",
        "timeout_secs",
        "entrypoint",
        "network",
        "allow_unauthenticated_access",
        "exposed_ports",
    )
    info = _sandbox(secret_names=["s"], template_id="t", max_pending_secs=5).info(
        sandbox_url=None, ingress_endpoint=None
    )
    assert {SHOWN[name] for name in SHOWN} <= set(info)
    assert not {"secret_names", "template_id", "max_pending_secs", "snapshot_id"} & set(info)


def test_sandbox_info_shows_each_setting_in_its_stored_form() -> None:
    """``Sandbox.info`` writes the shown settings out itself (it is on the request path): as pydantic does."""
    req = parse_create(
        {
            "name": "box",
            "resources": {"gpus": [{"count": 2}]},
            "network": {"deny_out": ["10.0.0.0/8"]},
            "exposed_ports": [81, 80],
            "file_systems": [{"file_system_id": "f", "mount_path": "/m", "prefetch": True}],
            "entrypoint": ["a"],
        },
        resolve,
    )
    given = req.given()
    given["resources"] = given["resources"].over(None)
    sb = _sandbox(**given)
    info, stored = sb.info(sandbox_url=None, ingress_endpoint=None), sb.dump(with_fs=False)
    assert {key: info[key] for key in SHOWN.values()} == {key: stored[name] for name, key in SHOWN.items()}
