"""The policy -> nftables compiler, without root: plans agree with the reference decisions, text is one swap.

``verdict`` walks a plan in the documented chain order (DNS rule, deny sets, allow sets, default); the
tests check that walk against ``contracts`` for every probe, so a compiler that put an entry in the wrong
set, dropped deny precedence or got a DNS row wrong fails here. The real kernel enforcement of the same
plans is checked in ``test_egress_matrix.py``.
"""

from __future__ import annotations

import ipaddress

import pytest

from contracts import opensandbox as osb
from contracts import tensorlake as tl
from mockserver.linux.addresses import RESOLVER
from mockserver.linux.egress import EgressPlan, learned_sets, render_additions, render_ruleset
from mockserver.opensandbox.linux_egress import opensandbox_plan
from mockserver.tensorlake.linux_egress import tensorlake_plan

ADDRESSES = {"example.com": "203.0.113.10", "api.example.com": "203.0.113.11", "evil.example.com": "203.0.113.13"}


def _in(address: str, nets: tuple[str, ...]) -> bool:
    ip = ipaddress.IPv4Address(address)
    return any(ip in ipaddress.IPv4Network(n) for n in nets)


def verdict(plan: EgressPlan, address: str, *, port: int = 80, learned: dict[str, str] | None = None) -> bool:
    """Return whether the chain lets a new connection to ``address`` through (the documented order)."""
    allow_names, deny_names = learned_sets(plan, {n: [a] for n, a in (learned or {}).items()})
    if address == RESOLVER and port == 53:
        return plan.dns == "accept"
    if _in(address, plan.deny_nets) or address in deny_names:
        return False
    if _in(address, plan.allow_nets) or address in allow_names:
        return True
    return plan.default == "accept"


TL_POLICIES = [
    tl.NetworkConfig(True, (), ()),
    tl.NetworkConfig(True, (), ("evil.example.com", "192.0.2.66", "198.51.100.0/24")),
    tl.NetworkConfig(True, ("*.example.com", "pypi.org", "192.0.2.0/25"), ("evil.example.com", "192.0.2.66")),
    tl.NetworkConfig(False, ("pypi.org", "192.0.2.5"), ()),
    tl.NetworkConfig(False, ("pypi.org", RESOLVER), ()),
    tl.NetworkConfig(False, (), ()),
    tl.NetworkConfig(True, (), (RESOLVER,)),
    tl.NetworkConfig(True, ("100.64.0.0/10",), ("100.64.0.53",)),
]


@pytest.mark.parametrize("config", TL_POLICIES, ids=lambda c: str(c.to_json()))
def test_tensorlake_dns_verdict_follows_the_four_rows(config: tl.NetworkConfig) -> None:
    plan = tensorlake_plan(config, RESOLVER)
    assert (plan.dns == "accept") == tl.decide_dns(config, RESOLVER).allowed
    assert verdict(plan, RESOLVER, port=53) == tl.decide_dns(config, RESOLVER).allowed


@pytest.mark.parametrize("config", TL_POLICIES, ids=lambda c: str(c.to_json()))
@pytest.mark.parametrize("address", ["192.0.2.5", "192.0.2.66", "192.0.2.200", "198.51.100.7", "203.0.113.99"])
def test_tensorlake_raw_addresses_match_decide_egress(config: tl.NetworkConfig, address: str) -> None:
    assert verdict(tensorlake_plan(config, RESOLVER), address) == tl.decide_egress(config, ip=address).allowed


@pytest.mark.parametrize("config", TL_POLICIES, ids=lambda c: str(c.to_json()))
@pytest.mark.parametrize("name", sorted(ADDRESSES))
def test_tensorlake_names_match_decide_egress_through_the_learned_sets(config: tl.NetworkConfig, name: str) -> None:
    plan = tensorlake_plan(config, RESOLVER)
    address = ADDRESSES[name]
    expected = tl.decide_egress(config, host=name, ip=address).allowed
    assert verdict(plan, address, learned={name: address}) == expected


def test_wildcard_covers_subdomains_not_the_apex() -> None:
    plan = tensorlake_plan(tl.NetworkConfig(True, ("*.example.com",), ()), RESOLVER)
    assert plan.judge("api.example.com") == "allow"
    assert plan.judge("v1.api.example.com") == "allow"
    assert plan.judge("example.com") == "none"
    assert plan.judge("API.Example.COM.") == "allow"


def test_a_denied_name_is_learned_as_denied_even_in_the_open_row() -> None:
    plan = tensorlake_plan(tl.NetworkConfig(True, (), ("evil.example.com",)), RESOLVER)
    assert plan.judge("evil.example.com") == "deny"
    assert plan.learned_set("deny") == "deny_names"
    assert plan.learned_set(plan.judge("example.com")) is None  # open row: nothing to learn
    allow, deny = learned_sets(plan, {"evil.example.com": ["203.0.113.13"], "example.com": ["203.0.113.10"]})
    assert (allow, deny) == (set(), {"203.0.113.13"})


def test_deny_precedence_over_a_wildcard_allow() -> None:
    plan = tensorlake_plan(tl.NetworkConfig(True, ("*.example.com",), ("evil.example.com",)), RESOLVER)
    assert plan.judge("evil.example.com") == "deny"
    assert not verdict(plan, "203.0.113.13", learned={"evil.example.com": "203.0.113.13"})


def test_no_policy_is_open() -> None:
    plan = tensorlake_plan(None, RESOLVER)
    assert (plan.default, plan.dns, plan.allow_nets, plan.deny_nets) == ("accept", "accept", (), ())


OS_POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}


def test_opensandbox_dns_mode_filters_names_only() -> None:
    plan = opensandbox_plan(osb.NetworkPolicy.from_json(OS_POLICY), "dns", RESOLVER)
    assert plan.default == "accept" and plan.allow_nets == () and plan.deny_nets == ()
    assert plan.judge("pypi.org") == "allow"
    assert plan.judge("example.com") == "nxdomain"
    assert verdict(plan, "192.0.2.5")  # raw addresses pass


def test_opensandbox_dns_nft_mode_also_filters_addresses() -> None:
    plan = opensandbox_plan(osb.NetworkPolicy.from_json(OS_POLICY), "dns+nft", RESOLVER)
    assert plan.default == "reject" and plan.dns == "accept"
    assert not verdict(plan, "192.0.2.5")
    assert verdict(plan, "198.51.100.20", learned={"pypi.org": "198.51.100.20"})


@pytest.mark.parametrize(
    "rules",
    [
        [{"action": "allow", "target": "192.0.2.5"}, {"action": "deny", "target": "192.0.2.5"}],
        [{"action": "deny", "target": "192.0.2.5"}, {"action": "allow", "target": "192.0.2.5"}],
        [{"action": "deny", "target": "192.0.2.6"}],
        [{"action": "allow", "target": "*.example.com"}, {"action": "allow", "target": "192.0.2.6"}],
    ],
)
@pytest.mark.parametrize("default", ["allow", "deny"])
def test_opensandbox_ip_targets_first_match_wins(rules: list[dict[str, str]], default: str) -> None:
    policy = osb.NetworkPolicy.from_json({"defaultAction": default, "egress": rules})
    plan = opensandbox_plan(policy, "dns+nft", RESOLVER)
    for address in ("192.0.2.5", "192.0.2.6", "192.0.2.7"):
        assert verdict(plan, address) == osb.decide_egress(policy, address).allowed, address


@pytest.mark.parametrize("host", ["api.example.com", "v1.api.example.com", "example.com", "pypi.org"])
def test_opensandbox_names_match_decide_egress(host: str) -> None:
    policy = osb.NetworkPolicy.from_json(
        {
            "defaultAction": "deny",
            "egress": [
                {"action": "deny", "target": "api.example.com"},
                {"action": "allow", "target": "*.example.com"},
                {"action": "allow", "target": "pypi.org"},
            ],
        }
    )
    plan = opensandbox_plan(policy, "dns+nft", RESOLVER)
    assert (plan.judge(host) != "nxdomain") == osb.decide_egress(policy, host).allowed


def test_an_empty_opensandbox_policy_allows_everything() -> None:
    plan = opensandbox_plan(None, "dns+nft", RESOLVER)
    assert plan.default == "accept" and plan.judge("anything.example") == "allow"


def test_unknown_opensandbox_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        opensandbox_plan(None, "nft", RESOLVER)  # type: ignore[arg-type]


def test_ruleset_replaces_the_table_in_one_script_in_the_documented_order() -> None:
    config = tl.NetworkConfig(True, ("*.example.com", "192.0.2.0/25"), ("192.0.2.66",))
    text = render_ruleset(tensorlake_plan(config, RESOLVER), resolver=RESOLVER, allow_names={"203.0.113.11"})
    lines = [line.strip() for line in text.splitlines()]
    assert lines[:3] == ["table inet sandproof", "delete table inet sandproof", "table inet sandproof {"]
    order = [
        'oifname "lo" accept',
        "meta nfproto ipv6 jump blocked",
        "ct state established,related accept",
        f"ip daddr {RESOLVER} meta l4proto {{ tcp, udp }} th dport 53 accept",
        "ip daddr @deny_nets jump blocked",
        "ip daddr @deny_names jump blocked",
        "ip daddr @allow_nets accept",
        "ip daddr @allow_names accept",
        "jump blocked",
    ]
    positions = [lines.index(rule) for rule in order]
    assert positions == sorted(positions)
    assert "elements = { 192.0.2.0/25 }" in text and "elements = { 192.0.2.66 }" in text
    assert "elements = { 203.0.113.11 }" in text


def test_blocked_dns_is_refused_in_the_ruleset() -> None:
    text = render_ruleset(tensorlake_plan(tl.NetworkConfig(False, (), ()), RESOLVER), resolver=RESOLVER)
    assert f"ip daddr {RESOLVER} meta l4proto {{ tcp, udp }} th dport 53 jump blocked" in text


def test_additions_are_sorted_and_validated() -> None:
    assert render_additions("allow_names", ["203.0.113.2", "203.0.113.10", "203.0.113.2"]) == (
        "add element inet sandproof allow_names { 203.0.113.2, 203.0.113.10 }\n"
    )
    assert render_additions("deny_names", []) == ""
    with pytest.raises(ValueError):
        render_additions("allow_names", ["not-an-address"])
