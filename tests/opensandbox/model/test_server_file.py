"""The real server's own TOML file: what it sets, the real defaults, the errors, and the answers each key changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.opensandbox.model import lifecycle
from mockserver.opensandbox.model.config import HOST_MODE_POLICY, NO_EGRESS_IMAGE, ServerConfig
from mockserver.opensandbox.model.endpoints import (
    PublishedPort,
    host_port_target,
    host_ports,
    published_ports,
    resolve_endpoint,
)
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.profiles import make_profile
from mockserver.opensandbox.model.server_file import (
    ServerFileError,
    load_server_file,
    outward_ip,
    parse_server_file,
)

RUNTIME = '[runtime]\ntype = "docker"\nexecd_image = "opensandbox/execd:v1.1.0"\n'
BODY: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["sleep", "60"],
    "resourceLimits": {"cpu": "1", "memory": "1Gi"},
}
POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
FULL = f"""
{RUNTIME}
[server]
host = "10.1.2.3"
port = 9999
api_key = "secret"
max_sandbox_timeout_seconds = 86400
future_key = "ignored"

[egress]
image = "opensandbox/egress:v1.1.0"
mode = "dns+nft"

[docker]
network_mode = "Bridge"
port_range_min = 45000
port_range_max = 45100

[storage]
allowed_host_paths = ["/data/"]

[a_table_the_mock_does_not_read]
anything = [1, 2]
"""


def _state(profile: str = "docker") -> OpenSandboxModel:
    return OpenSandboxModel(make_profile(profile), VirtualClock("manual", start=1_700_000_000), IdFactory(seed=1))


def _create(config: ServerConfig, **fields: Any) -> tuple[int, str]:
    """Return the status and message (or id) of a create under ``config``."""
    try:
        sb, _ = lifecycle.create_sandbox(_state(), "default", {**BODY, **fields}, config)
    except ApiError as exc:
        return exc.status, exc.message
    return 202, sb.id


def _config(text: str) -> ServerConfig:
    return ServerConfig(**parse_server_file(text).settings())


def test_a_full_file_sets_every_served_key_and_ignores_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(FULL)
    read = load_server_file(path)
    assert read.path == str(path) and read.profile == "docker" and read.api_key == "secret"
    assert read.settings() == {
        "max_timeout": 86400,
        "egress_image": True,
        "enforcement": "dns+nft",
        "network_mode": "bridge",  # the real Docker runtime lower-cases it
        "public_host": "10.1.2.3",
        "proxy_base": None,
        "port_range": (45000, 45100),
        "allowed_host_paths": ("/data/",),
    }


def test_keys_left_out_take_the_real_servers_defaults() -> None:
    """Host network mode, no egress image, dns, no bound, the 40000-60000 range, no host volumes, no key."""
    read = parse_server_file(RUNTIME + '[server]\nhost = "127.0.0.1"\n')
    assert read.api_key is None
    assert read.settings() == {
        "max_timeout": None,
        "egress_image": False,
        "enforcement": "dns",
        "network_mode": "host",
        "public_host": "127.0.0.1",
        "proxy_base": None,
        "port_range": (40000, 60000),
        "allowed_host_paths": (),
    }
    assert parse_server_file(RUNTIME).public_host == outward_ip()  # host 0.0.0.0: the outward address
    assert parse_server_file(RUNTIME.replace("docker", "kubernetes", 1)).profile == "kubernetes"


def test_eip_names_the_endpoint_host_and_the_proxy_base() -> None:
    read = parse_server_file(RUNTIME + '[server]\neip = "https://sandboxes.example.com/"\n')
    assert read.public_host == "https://sandboxes.example.com/"
    assert read.proxy_base == "sandboxes.example.com"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[runtime\n", "not valid TOML"),
        ('[server]\napi_key = "k"\n', "runtime: required"),
        ('[runtime]\ntype = "podman"\nexecd_image = "x"\n', "runtime.type: must be 'docker' or 'kubernetes'"),
        ('[runtime]\ntype = "docker"\n', "runtime.execd_image: required"),
        (RUNTIME + "[server]\nmax_sandbox_timeout_seconds = 59\n", "server.max_sandbox_timeout_seconds: must be at"),
        (RUNTIME + '[server]\nmax_sandbox_timeout_seconds = "1h"\n', "server.max_sandbox_timeout_seconds: must be an"),
        (RUNTIME + "[server]\napi_key = 5\n", "server.api_key: must be a string"),
        (RUNTIME + '[egress]\nimage = ""\n', "egress.image: must be at least 1"),
        (RUNTIME + '[egress]\nmode = "nft"\n', "egress.mode: must be 'dns' or 'dns+nft'"),
        (RUNTIME + '[docker]\nnetwork_mode = "my-net"\n', "docker.network_mode: the mock serves"),
        (RUNTIME + "[docker]\nport_range_min = 50000\nport_range_max = 40000\n", "docker.port_range_min: (50000)"),
        (RUNTIME + "[docker]\nport_range_min = 40000\nport_range_max = 40050\n", "docker.port_range_max: port range"),
        (RUNTIME + "[docker]\nport_range_min = 80\n", "docker.port_range_min: must be between 1024 and 65535"),
        (RUNTIME + '[storage]\nallowed_host_paths = "/data"\n', "storage.allowed_host_paths: must be a list"),
        ('server = "x"\n' + RUNTIME, "server: must be a table"),
        (RUNTIME + '[ingress]\nmode = "gateway"\n', "ingress.mode: must be 'direct'"),
        (RUNTIME + '[tenants]\nprovider = "file"\n', "tenants: the multi-tenant key file"),
    ],
)
def test_a_bad_file_names_its_path_and_the_field(tmp_path: Path, text: str, names: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ServerFileError) as caught:
        load_server_file(path)
    assert str(caught.value).startswith(f"{path}: ") and names in str(caught.value)


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ServerFileError, match=r"missing\.toml: cannot be read"):
        load_server_file(tmp_path / "missing.toml")


def test_the_maximum_timeout_refuses_longer_creates_only() -> None:
    bounded = _config(RUNTIME + "[server]\nmax_sandbox_timeout_seconds = 86400\n")
    assert _create(bounded, timeout=10_000_000_000) == (
        400,
        "Sandbox timeout 10000000000s exceeds configured maximum of 86400s.",
    )
    assert _create(bounded, timeout=86_400)[0] == 202
    assert _create(bounded)[0] == 202  # no timeout: manual cleanup, never bounded
    assert _create(_config(RUNTIME), timeout=10_000_000_000)[0] == 202  # no key: no bound


def test_a_policy_needs_bridge_mode_then_an_egress_image() -> None:
    """The real order: host network mode first, then the egress image; with both a policy is served."""
    assert _create(_config(RUNTIME), networkPolicy=POLICY) == (400, HOST_MODE_POLICY)
    bridge = RUNTIME + '[docker]\nnetwork_mode = "bridge"\n'
    assert _create(_config(bridge), networkPolicy=POLICY) == (400, NO_EGRESS_IMAGE)
    assert _create(_config(bridge + '[egress]\nimage = "egress:1"\n'), networkPolicy=POLICY)[0] == 202
    assert _create(_config(RUNTIME))[0] == 202  # without a policy, neither matters


def test_the_allow_list_admits_host_volumes_under_it() -> None:
    volume = [{"name": "d", "host": {"path": "/data/x"}, "mountPath": "/mnt/d"}]
    assert _create(_config(RUNTIME), volumes=volume)[0] == 400
    assert _create(_config(RUNTIME + '[storage]\nallowed_host_paths = ["/data/"]\n'), volumes=volume)[0] == 202


def _endpoint(config: ServerConfig, port: int, *, proxy: bool = False, state: OpenSandboxModel | None = None) -> str:
    state = state or _state()
    sb, _ = lifecycle.create_sandbox(state, "default", dict(BODY), config)
    query = [("use_server_proxy", "true")] if proxy else []
    answer = resolve_endpoint(
        state, config, "default", sb.id, str(port), query, host="mock:8080", path=f"/v1/sandboxes/{sb.id}/endpoints/1"
    )
    return str(answer["endpoint"]).replace(sb.id, "ID")


def test_endpoints_take_the_network_modes_shapes() -> None:
    host = _config(RUNTIME + '[server]\nhost = "10.0.0.5"\n')
    assert _endpoint(host, 44772) == "10.0.0.5:44772"
    assert _endpoint(host, 5000) == "10.0.0.5:5000"
    bridge = _config(RUNTIME + '[server]\nhost = "10.0.0.5"\n[docker]\nnetwork_mode = "bridge"\n')
    assert _endpoint(bridge, 44772) == "10.0.0.5:40000/proxy/44772"
    assert _endpoint(bridge, 5000) == "10.0.0.5:40000/proxy/5000"
    assert _endpoint(bridge, 8080) == "10.0.0.5:40001"  # 8080 is published on its own
    assert _endpoint(bridge, 44772, proxy=True) == "mock:8080/v1/sandboxes/ID/proxy/44772"
    eip = _config(RUNTIME + '[server]\neip = "http://gw.example:80/"\n')
    assert _endpoint(eip, 44772) == "http://gw.example:80/:44772"  # the real server names eip as written
    assert _endpoint(eip, 44772, proxy=True) == "gw.example:80/sandboxes/ID/proxy/44772"
    assert _endpoint(ServerConfig(), 44772) == "mock:8080/direct/ID/44772"  # no file: the mock's own


def test_bridge_host_ports_come_from_the_range_and_are_freed_with_their_sandbox() -> None:
    config = _config(RUNTIME + '[docker]\nnetwork_mode = "bridge"\nport_range_min = 45000\nport_range_max = 45100\n')
    state = _state()
    made = [lifecycle.create_sandbox(state, "default", dict(BODY), config)[0] for _ in range(51)]
    pairs = [host_ports(state, config, sb.id) for sb in made[:50]]
    assert pairs[0] == (45000, 45001) and pairs[-1] == (45098, 45099)
    assert len({port for pair in pairs for port in pair}) == 100
    assert host_ports(state, config, made[0].id) == pairs[0]  # stable per sandbox
    with pytest.raises(ApiError) as full:  # one port left: the real allocator's 500
        host_ports(state, config, made[50].id)
    assert (full.value.status, full.value.message) == (500, "Failed to allocate host ports for sandbox container.")
    lifecycle.delete_sandbox(state, "default", made[0].id)
    assert host_ports(state, config, made[50].id) == (45000, 45001)  # a deleted sandbox's ports are free again


def test_the_host_ports_answer_on_the_servers_local_host() -> None:
    """The real server's ``_resolve_proxy_host``: ``[server] host``, else 127.0.0.1 (never any address)."""
    assert parse_server_file(RUNTIME).local_host == "127.0.0.1"
    assert parse_server_file(RUNTIME + '[server]\nhost = "0.0.0.0"\n').local_host == "127.0.0.1"
    assert parse_server_file(RUNTIME + '[server]\nhost = "::"\n').local_host == "127.0.0.1"
    named = parse_server_file(RUNTIME + '[server]\nhost = "10.0.0.5"\neip = "gw.example"\n')
    assert (named.local_host, named.public_host) == ("10.0.0.5", "gw.example")


def test_published_host_ports_are_those_of_live_sandboxes() -> None:
    config = _config(RUNTIME + '[docker]\nnetwork_mode = "bridge"\nport_range_min = 45000\nport_range_max = 45100\n')
    state = _state()
    kept, deleted, expiring = (
        lifecycle.create_sandbox(state, "default", {**BODY, **extra}, config)[0] for extra in ({}, {}, {"timeout": 60})
    )
    for sb in (kept, deleted, expiring):
        host_ports(state, config, sb.id)
    lifecycle.delete_sandbox(state, "default", deleted.id)
    assert published_ports(state) == {
        45000: PublishedPort(kept.id, 44772),
        45001: PublishedPort(kept.id, 8080),
        45004: PublishedPort(expiring.id, 44772),
        45005: PublishedPort(expiring.id, 8080),
    }
    state.clock.advance(60)
    assert set(published_ports(state)) == {45000, 45001}  # a timeout that passed publishes nothing


def test_a_host_port_request_reaches_the_port_its_endpoint_names() -> None:
    execd, web = PublishedPort("sb", 44772), PublishedPort("sb", 8080)
    assert host_port_target(execd, "/proxy/44772/command") == (44772, "/command")
    assert host_port_target(execd, "/proxy/5000/a/b") == (5000, "/a/b")
    assert host_port_target(execd, "/proxy/5000") == (5000, "/")
    assert host_port_target(execd, "/command") == (44772, "/command")  # execd itself
    assert host_port_target(execd, "/proxy/0/x") == (44772, "/proxy/0/x")  # no such port: execd's own 404
    assert host_port_target(execd, "/proxy/70000/x") == (44772, "/proxy/70000/x")
    assert host_port_target(execd, "/proxyx/5000") == (44772, "/proxyx/5000")
    assert host_port_target(web, "/proxy/5000/a") == (8080, "/proxy/5000/a")  # 8080's own server sees any path
