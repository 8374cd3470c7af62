"""The firewall's bookkeeping, with a recording stand-in for nft (no root): what it sends, and when not."""

from __future__ import annotations

import pytest

from contracts import opensandbox as osb
from contracts import tensorlake as tl
from contracts.errors import PolicyError
from mockserver.core.dns import DnsTable
from mockserver.linux.firewall import OPEN_PLAN, Firewall
from mockserver.linux.nftables import NftError
from mockserver.opensandbox.linux_egress import opensandbox_names
from mockserver.tensorlake.linux_egress import tensorlake_apply, tensorlake_plan, tensorlake_update


class FakeNft:
    """Records scripts; refuses them while ``fail`` is set."""

    def __init__(self) -> None:
        self.scripts: list[str] = []
        self.fail = False

    def run(self, script: str) -> str:
        if self.fail:
            raise NftError("refused")
        self.scripts.append(script)
        return ""

    def close(self) -> None:
        pass


DNS = DnsTable({"pypi.org": ["198.51.100.20"], "evil.example.com": ["203.0.113.13"]}, default="nxdomain")


def test_a_refused_swap_keeps_the_old_plan() -> None:
    nft = FakeNft()
    firewall = Firewall(nft)
    nft.fail = True
    with pytest.raises(NftError):
        firewall.apply(tensorlake_plan(tl.NetworkConfig(False, (), ()), firewall.resolver))
    assert firewall.plan is OPEN_PLAN and firewall.swaps == 0


def test_learning_sends_one_addition_only_when_needed() -> None:
    nft = FakeNft()
    firewall = Firewall(nft)
    tensorlake_apply(firewall, tl.NetworkConfig(True, ("*.example.com",), ("evil.example.com",)), DNS)
    assert "elements = { 203.0.113.13 }" in nft.scripts[-1]  # the denied exact name, resolved in advance
    firewall.learn("api.example.com", ["203.0.113.11"])
    firewall.learn("other.test", ["203.0.113.50"])  # not named by the policy: nothing to add
    assert nft.scripts[-1] == "add element inet sandproof allow_names { 203.0.113.11 }\n"
    assert len(nft.scripts) == 2
    assert firewall.permits("anything")  # TensorLake answers every name


def test_a_swap_rejudges_what_dns_answered() -> None:
    nft = FakeNft()
    firewall = Firewall(nft)
    firewall.apply(tensorlake_plan(tl.NetworkConfig(True, ("*.example.com",), ()), firewall.resolver))
    firewall.learn("api.example.com", ["203.0.113.11"])
    firewall.apply(tensorlake_plan(tl.NetworkConfig(True, (), ("api.example.com",)), firewall.resolver))
    last = nft.scripts[-1]
    assert "set deny_names { type ipv4_addr; elements = { 203.0.113.11 }; }" in last
    assert "set allow_names { type ipv4_addr; }" in last


def test_unresolvable_host_changes_nothing() -> None:
    nft = FakeNft()
    firewall = Firewall(nft)
    with pytest.raises(PolicyError):
        tensorlake_update(firewall, None, {"network": {"allow_out": ["missing.example"]}}, DNS)
    assert nft.scripts == [] and firewall.swaps == 0


def test_opensandbox_names_are_the_exact_domain_targets() -> None:
    policy = osb.NetworkPolicy.from_json(
        {"egress": [{"action": "allow", "target": t} for t in ("pypi.org", "*.example.com", "192.0.2.5", "::1")]}
    )
    assert opensandbox_names(policy) == ("pypi.org",)
    assert opensandbox_names(None) == ()
