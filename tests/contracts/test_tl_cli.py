"""Tests for the ``tl sbx`` flag semantics in ``contracts.tl_cli`` (wire reference §9 and the networking docs)."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.errors import PolicyError
from contracts.tensorlake import NetworkConfig
from contracts.tl_cli import (
    CLI_CODES,
    build_network_config,
    create_body,
    parse_user_port,
    port_expose_body,
    port_rm_body,
    update_body,
)

RESOURCES = {"cpus": 1.0, "memory_mb": 1024}


def net(internet: bool, allow: list[str], deny: list[str]) -> dict[str, Any]:
    return {"allow_internet_access": internet, "allow_out": allow, "deny_out": deny}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {"resources": RESOURCES}),
        (["my-env"], {"resources": RESOURCES, "name": "my-env"}),
        (["--no-internet"], {"resources": RESOURCES, "network": net(False, [], [])}),
        (["-N"], {"resources": RESOURCES, "network": net(False, [], [])}),
        (
            ["-A", "example.com", "--network-allow", "*.example.com", "-A203.0.113.10", "--network-allow=10.0.0.0/8"],
            {
                "resources": RESOURCES,
                "network": net(True, ["example.com", "*.example.com", "203.0.113.10", "10.0.0.0/8"], []),
            },
        ),
        (["--network-deny", "example.com"], {"resources": RESOURCES, "network": net(True, [], ["example.com"])}),
        (
            ["-A", "a.com", "-D", "b.com", "-D", "10.0.0.0/8"],
            {"resources": RESOURCES, "network": net(True, ["a.com"], ["b.com", "10.0.0.0/8"])},
        ),
        (
            ["web", "-x", "8080", "--expose", "3000", "-x8080"],
            {
                "resources": RESOURCES,
                "name": "web",
                "exposed_ports": [8080, 3000, 8080],
                "allow_unauthenticated_access": True,
            },
        ),
        (["--allow-unauthenticated-access"], {"resources": RESOURCES, "allow_unauthenticated_access": True}),
    ],
)
def test_create_body(argv: list[str], expected: dict[str, Any]) -> None:
    assert create_body(argv) == expected


def test_create_network_is_a_valid_policy() -> None:
    body = create_body(["-A", "Example.COM", "-D", "10.0.0.0/8"])
    assert body["network"]["allow_out"] == ["Example.COM"]  # passed through verbatim; the server normalises
    assert NetworkConfig.from_json(body["network"]).allow_out == ("example.com",)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-A", "api.example.com"], {"network": net(True, ["api.example.com"], [])}),
        (["--no-internet"], {"network": net(False, [], [])}),
        (["-D", "ads.example.com"], {"network": net(True, [], ["ads.example.com"])}),
        (
            ["-A", "api.example.com", "-A", "10.0.0.0/8", "-D", "10.10.0.0/16"],
            {"network": net(True, ["api.example.com", "10.0.0.0/8"], ["10.10.0.0/16"])},
        ),
        (["--clear-network"], {"network": None}),
    ],
)
def test_update_body(argv: list[str], expected: dict[str, Any]) -> None:
    assert update_body(argv) == expected


@pytest.mark.parametrize(
    ("command", "argv", "code"),
    [
        ("create", ["-N", "-A", "example.com"], "conflicting_flags"),
        ("create", ["--no-internet", "--network-deny", "example.com"], "conflicting_flags"),
        ("create", ["-NA", "example.com"], "conflicting_flags"),
        ("create", ["-x", "9501"], "reserved_port"),
        ("create", ["-x", "0"], "port_out_of_range"),
        ("create", ["-x", "65536"], "invalid_port"),
        ("create", ["-x", "http"], "invalid_port"),
        ("create", ["-A"], "missing_value"),
        ("create", ["-A", "--no-internet"], "missing_value"),
        ("create", ["--network-allow"], "missing_value"),
        ("create", ["--clear-network"], "unknown_flag"),
        ("create", ["-Z"], "unknown_flag"),
        ("create", ["a", "b"], "unexpected_argument"),
        ("create", ["-N", "--no-internet"], "duplicate_flag"),
        ("create", ["--no-internet=yes"], "unexpected_argument"),
        ("update", [], "missing_network_setting"),
        ("update", ["--clear-network", "-A", "a.com"], "conflicting_flags"),
        ("update", ["--clear-network", "--no-internet"], "conflicting_flags"),
        ("update", ["-D", "a.com", "--clear-network"], "conflicting_flags"),
        ("update", ["--no-internet", "-D", "a.com"], "conflicting_flags"),
        ("update", ["sbx-id"], "unexpected_argument"),
        ("update", ["-x", "8080"], "unknown_flag"),
    ],
)
def test_refused_flag_combinations(command: str, argv: list[str], code: str) -> None:
    build = create_body if command == "create" else update_body
    with pytest.raises(PolicyError) as caught:
        build(argv)
    assert caught.value.code == code
    assert isinstance(caught.value, ValueError)


def test_build_network_config_mirrors_the_cli() -> None:
    assert build_network_config(False, [], []) is None
    assert build_network_config(True, [], []) == net(False, [], [])
    assert build_network_config(False, ["a.com"], []) == net(True, ["a.com"], [])
    with pytest.raises(PolicyError, match="cannot be combined"):
        build_network_config(True, [], ["a.com"])


@pytest.mark.parametrize(("value", "port"), [("1", 1), ("8080", 8080), (65535, 65535), ("9500", 9500)])
def test_user_ports(value: str | int, port: int) -> None:
    assert parse_user_port(value) == port


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("9501", "reserved_port"),
        (9501, "reserved_port"),
        ("0", "port_out_of_range"),
        (0, "port_out_of_range"),
        (-1, "port_out_of_range"),
        (65536, "port_out_of_range"),
        ("65536", "invalid_port"),
        ("-1", "invalid_port"),
        ("", "invalid_port"),
        ("\uff18\uff10", "invalid_port"),
        (True, "invalid_port"),
    ],
)
def test_bad_user_ports(value: str | int, code: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_user_port(value)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("current", "ports", "expected"),
    [
        ({}, [8080], {"allow_unauthenticated_access": True, "exposed_ports": [8080]}),
        (
            {"allow_unauthenticated_access": False, "exposed_ports": [8080, 3000]},
            ["3000", 80],
            {"allow_unauthenticated_access": True, "exposed_ports": [80, 3000, 8080]},
        ),
        (
            {"allow_unauthenticated_access": False, "exposed_ports": [8080]},
            [8080],
            {"allow_unauthenticated_access": True, "exposed_ports": [8080]},
        ),
        ({"allow_unauthenticated_access": True, "exposed_ports": [3000, 8080]}, [8080], None),
        ({"allow_unauthenticated_proxy_access": True, "exposedPorts": [8080]}, [8080], None),
        (
            {"allow_unauthenticated_access": True, "exposed_ports": None},
            [1],
            {"allow_unauthenticated_access": True, "exposed_ports": [1]},
        ),
    ],
)
def test_port_expose(current: dict[str, Any], ports: list[str | int], expected: dict[str, Any] | None) -> None:
    assert port_expose_body(current, ports) == expected


@pytest.mark.parametrize(
    ("current", "ports", "expected"),
    [
        (
            {"allow_unauthenticated_access": True, "exposed_ports": [80, 3000, 8080, 9090]},
            [8080, 1234, 80],
            {"allow_unauthenticated_access": True, "exposed_ports": [3000, 9090]},
        ),
        (
            {"allow_unauthenticated_access": True, "exposed_ports": [8080]},
            ["8080"],
            {"allow_unauthenticated_access": False, "exposed_ports": []},
        ),
        (
            {"allow_unauthenticated_access": False, "exposed_ports": [3000, 8080]},
            [8080],
            {"allow_unauthenticated_access": True, "exposed_ports": [3000]},
        ),
        ({"allow_unauthenticated_access": False, "exposed_ports": []}, [8080], None),
        ({}, [8080], None),
        ({"allow_unauthenticated_access": True, "exposed_ports": [3000]}, [8080], None),
        (
            {"allow_unauthenticated_access": False, "exposed_ports": [3000]},
            [8080],
            {"allow_unauthenticated_access": True, "exposed_ports": [3000]},
        ),
    ],
)
def test_port_rm(current: dict[str, Any], ports: list[str | int], expected: dict[str, Any] | None) -> None:
    assert port_rm_body(current, ports) == expected


@pytest.mark.parametrize(
    ("build", "ports", "code"),
    [
        (port_expose_body, [9501], "reserved_port"),
        (port_rm_body, ["9501"], "reserved_port"),
        (port_expose_body, [70000], "port_out_of_range"),
        (port_expose_body, [], "missing_ports"),
        (port_rm_body, [], "missing_ports"),
    ],
)
def test_port_commands_reject_bad_ports(build: Any, ports: list[str | int], code: str) -> None:
    with pytest.raises(PolicyError) as caught:
        build({"exposed_ports": [8080]}, ports)
    assert caught.value.code == code


def test_cli_codes_are_all_exercised() -> None:
    seen = {"conflicting_flags", "reserved_port", "port_out_of_range", "invalid_port", "missing_value"}
    seen |= {"unknown_flag", "unexpected_argument", "duplicate_flag", "missing_network_setting", "missing_ports"}
    assert seen == CLI_CODES
