"""Tests of ``restrict_sandbox_network``: every row of the seed's decision table, per provider."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from contracts import sandbox_network as sn
from contracts import tensorlake as tl
from contracts.opensandbox import NetworkPolicy, decide_egress
from contracts.sandbox_network import (
    AgentSeedRejectedError,
    OpenSandboxNetworkProvider,
    PlainSandboxProvider,
    SandboxProvider,
    SandboxSpec,
    SupportsNetworkPolicy,
    TensorLakeNetworkProvider,
    restrict_sandbox_network,
    sandbox_reachable_host,
)
from contracts.tensorlake import NetworkConfig

OS = OpenSandboxNetworkProvider()
TL = TensorLakeNetworkProvider()
TL_PINNED = TensorLakeNetworkProvider(resolver_ips=("10.0.0.2",))
TL_NO_DNS = TensorLakeNetworkProvider(resolver_ips=())
PLAIN = PlainSandboxProvider("docker")

MODEL = "http://model.example:8000/v1"
TOOLS = ("http://tools.example:9000/mcp", "https://10.1.2.3:443/sse", "http://tools.example:9001/other")
SPEC = SandboxSpec(image="python:3.11", env={"A": "1"}, provider_options={"platform": "linux/amd64"})
OS_EXPLICIT = SandboxSpec(provider_options={"network_policy": {"defaultAction": "allow", "egress": []}})
TL_EXPLICIT = SandboxSpec(provider_options={"network": NetworkConfig(allow_internet_access=False)})
OS_NONE = SandboxSpec(provider_options={"network_policy": None})


def _os(*targets: str) -> dict[str, Any]:
    """Return the deny-by-default OpenSandbox policy allowing ``targets``."""
    return {"defaultAction": "deny", "egress": [{"action": "allow", "target": t} for t in targets]}


SAME = "unchanged"


def row(
    name: str,
    provider: SandboxProvider,
    mode: str,
    expected: object,
    *,
    spec: SandboxSpec = SPEC,
    model: str = MODEL,
    tools: Sequence[str] = (),
    required: Sequence[str] = (),
) -> Any:
    """Build one decision-table row."""
    return pytest.param(provider, mode, spec, model, tools, required, expected, id=name)


ROWS = [
    # inherit: the spec comes back untouched, whatever else is wrong.
    row("inherit opensandbox", OS, "inherit", SAME, tools=TOOLS, required=TOOLS),
    row("inherit plain provider", PLAIN, "inherit", SAME),
    row("inherit explicit policy", OS, "inherit", SAME, spec=OS_EXPLICIT),
    row("inherit localhost model", TL, "inherit", SAME, model="http://localhost:8000"),
    # configurations that cannot be enforced
    row("unknown mode", OS, "everything", sn.UNKNOWN_NETWORK_ACCESS),
    row("model_only plain", PLAIN, "model_only", sn.PROVIDER_WITHOUT_NETWORK_POLICY),
    row("tools plain", PLAIN, "model_and_tools", sn.PROVIDER_WITHOUT_NETWORK_POLICY, tools=TOOLS),
    row("plain before URL checks", PLAIN, "model_only", sn.PROVIDER_WITHOUT_NETWORK_POLICY, model=""),
    row("explicit opensandbox", OS, "model_only", sn.EXPLICIT_PROVIDER_POLICY, spec=OS_EXPLICIT),
    row("explicit tensorlake", TL, "model_and_tools", sn.EXPLICIT_PROVIDER_POLICY, spec=TL_EXPLICIT, tools=TOOLS),
    row("required, model_only", OS, "model_only", sn.REQUIRED_TOOL_UNDER_MODEL_ONLY, tools=TOOLS, required=TOOLS[:1]),
    row("required co-hosted, model_only", TL, "model_only", sn.REQUIRED_TOOL_UNDER_MODEL_ONLY, required=(MODEL,)),
    row("localhost model", OS, "model_only", sn.UNREACHABLE_ENDPOINT, model="http://localhost:8000"),
    row("loopback model", TL, "model_only", sn.UNREACHABLE_ENDPOINT, model="http://127.0.0.2/v1"),
    row("loopback tool", OS, "model_and_tools", sn.UNREACHABLE_ENDPOINT, tools=("http://[::1]:9000",)),
    row("unspecified tool", TL, "model_and_tools", sn.UNREACHABLE_ENDPOINT, tools=("http://0.0.0.0:9",)),
    row("schemeless model", OS, "model_only", sn.UNREACHABLE_ENDPOINT, model="model.example:8000"),
    row(
        "required not granted",
        OS,
        "model_and_tools",
        sn.REQUIRED_TOOL_NOT_GRANTED,
        tools=TOOLS[:1],
        required=("http://other.example",),
    ),
    row("required unreachable", OS, "model_and_tools", sn.UNREACHABLE_ENDPOINT, required=("http://localhost:1",)),
    row("tensorlake IPv6", TL, "model_only", sn.UNENFORCEABLE_HOST, model="http://[2001:db8::1]:8000"),
    row("tensorlake no DNS, name", TL_NO_DNS, "model_only", sn.UNENFORCEABLE_HOST),
    # enforced policies
    row("model_only opensandbox", OS, "model_only", _os("model.example"), tools=TOOLS),
    row(
        "tools opensandbox",
        OS,
        "model_and_tools",
        _os("10.1.2.3", "model.example", "tools.example"),
        tools=TOOLS,
        required=TOOLS,
    ),
    row("tools opensandbox, none given", OS, "model_and_tools", _os("model.example")),
    row("required co-hosted", OS, "model_and_tools", _os("model.example"), required=(MODEL + "/mcp",)),
    row("opensandbox trailing dot", OS, "model_only", _os("model.example."), model="http://Model.Example.:1"),
    row("opensandbox IPv6", OS, "model_only", _os("2001:db8::1"), model="http://[2001:db8::1]:8000"),
    row("explicit None is absent", OS, "model_only", _os("model.example"), spec=OS_NONE),
    row("tool ignored, model_only", OS, "model_only", _os("model.example"), tools=("http://localhost:1",)),
    row("model_only tensorlake", TL, "model_only", NetworkConfig(True, ("model.example",)), tools=TOOLS),
    row(
        "tools tensorlake",
        TL,
        "model_and_tools",
        NetworkConfig(True, ("10.1.2.3", "model.example", "tools.example")),
        model="http://model.example.:1",
        tools=TOOLS,
    ),
    row("tensorlake pinned resolver", TL_PINNED, "model_only", NetworkConfig(False, ("model.example", "10.0.0.2"))),
    row(
        "tensorlake no DNS, IPv4",
        TL_NO_DNS,
        "model_and_tools",
        NetworkConfig(False, ("10.0.0.9", "10.1.2.3")),
        model="http://10.0.0.9:8000",
        tools=("http://10.1.2.3",),
    ),
]


@pytest.mark.parametrize(("provider", "mode", "spec", "model", "tools", "required", "expected"), ROWS)
def test_decision_table(
    provider: SandboxProvider,
    mode: Any,
    spec: SandboxSpec,
    model: str,
    tools: Sequence[str],
    required: Sequence[str],
    expected: object,
) -> None:
    def call() -> SandboxSpec:
        """Restrict the row's spec."""
        return restrict_sandbox_network(spec, mode, provider, model, tool_urls=tools, required_tool_urls=required)

    if expected == SAME:
        assert call() is spec
        return
    if isinstance(expected, str):
        with pytest.raises(AgentSeedRejectedError) as info:
            call()
        assert info.value.reason == expected
        assert info.value.status_code == 422
        assert isinstance(info.value, ValueError)
        return
    before = dict(spec.provider_options)
    out = call()
    assert isinstance(provider, SupportsNetworkPolicy)
    assert out.provider_options[provider.network_policy_option] == expected
    assert {k: v for k, v in out.provider_options.items() if k != provider.network_policy_option} == {
        k: v for k, v in before.items() if k != provider.network_policy_option
    }
    assert dict(spec.provider_options) == before
    assert (out.image, out.env, out.metadata, out.ports) == (spec.image, spec.env, spec.metadata, spec.ports)


REACHABLE = [
    ("http://model.example:8000/v1", "model.example"),
    ("https://Model.Example:443/v1?x=1#f", "model.example"),
    ("http://user:pw@model.example:8000", "model.example"),
    ("http://model.example.:8000", "model.example."),
    ("http://10.1.2.3:9000", "10.1.2.3"),
    ("http://192.168.1.5", "192.168.1.5"),
    ("http://169.254.169.254", "169.254.169.254"),
    ("http://[2001:db8::1]:8000", "2001:db8::1"),
    ("http://foo.localhost:8000", "foo.localhost"),
    ("http://host:99999", "host"),
    ("//model.example:8000", "model.example"),
]
UNREACHABLE = [
    "http://localhost:8000",
    "http://LOCALHOST.:8000",
    "http://127.0.0.1",
    "http://127.0.0.2",
    "http://[::1]",
    "http://0.0.0.0",
    "http://[::]",
    "http://[::ffff:127.0.0.1]:8000",
    "http://[::ffff:0.0.0.0]",
    "model.example:8000",
    "model.example",
    "",
    "http://[::1",
    "http://",
]


@pytest.mark.parametrize(("url", "host"), REACHABLE)
def test_reachable_hosts_match_measured_table(url: str, host: str) -> None:
    assert sandbox_reachable_host(url) == host


@pytest.mark.parametrize("url", UNREACHABLE)
def test_unreachable_endpoints_are_rejected(url: str) -> None:
    with pytest.raises(AgentSeedRejectedError) as info:
        sandbox_reachable_host(url)
    assert info.value.reason == sn.UNREACHABLE_ENDPOINT
    assert url in str(info.value)


def test_one_bad_tool_url_fails_the_whole_call() -> None:
    with pytest.raises(AgentSeedRejectedError):
        restrict_sandbox_network(SPEC, "model_and_tools", OS, MODEL, ["http://a.example", "http://localhost"])


def test_opensandbox_policy_is_enforced_by_the_reference() -> None:
    out = restrict_sandbox_network(SPEC, "model_and_tools", OS, MODEL, TOOLS)
    policy = NetworkPolicy.from_json(out.provider_options["network_policy"])
    for host in ("model.example", "tools.example", "10.1.2.3", "MODEL.example."):
        assert decide_egress(policy, host).allowed
    for host in ("example.com", "api.model.example", "10.1.2.4", "pypi.org"):
        assert not decide_egress(policy, host).allowed


@pytest.mark.parametrize(
    ("provider", "resolver", "dns"),
    [(TL, "10.0.0.2", True), (TL, "8.8.8.8", True), (TL_PINNED, "10.0.0.2", True), (TL_PINNED, "8.8.8.8", False)],
)
def test_tensorlake_config_allows_hosts_and_dns(provider: TensorLakeNetworkProvider, resolver: str, dns: bool) -> None:
    out = restrict_sandbox_network(SPEC, "model_and_tools", provider, MODEL, TOOLS)
    config = out.provider_options["network"]
    assert isinstance(config, NetworkConfig)
    assert tl.decide_egress(config, host="model.example", ip="203.0.113.7").allowed
    assert tl.decide_egress(config, host="tools.example").allowed
    assert tl.decide_egress(config, ip="10.1.2.3").allowed
    assert not tl.decide_egress(config, host="pypi.org", ip="151.101.0.223").allowed
    assert tl.decide_dns(config, resolver).allowed is dns


def test_tensorlake_without_dns_blocks_resolution() -> None:
    out = restrict_sandbox_network(SPEC, "model_only", TL_NO_DNS, "http://10.0.0.9:8000")
    config = out.provider_options["network"]
    assert not tl.decide_dns(config, "10.0.0.2").allowed
    assert tl.decide_egress(config, ip="10.0.0.9").allowed


@pytest.mark.parametrize("resolvers", [("::1",), ("resolver.local",), ("10.0.0.0/8",)])
def test_tensorlake_resolvers_must_be_ipv4(resolvers: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        TensorLakeNetworkProvider(resolver_ips=resolvers)


def test_provider_capabilities() -> None:
    assert isinstance(OS, SupportsNetworkPolicy)
    assert isinstance(TL, SupportsNetworkPolicy)
    assert not isinstance(PLAIN, SupportsNetworkPolicy)
    assert sn.NETWORK_ACCESS_MODES == ("inherit", "model_only", "model_and_tools")
    assert AgentSeedRejectedError.status_code == 422
