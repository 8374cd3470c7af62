"""The egress gate's decisions: the sandbox's resolver, DNS, connections (unusable destinations denied)."""

from __future__ import annotations

from contracts.tensorlake import NetworkConfig
from mockserver.tensorlake.model.egress import DEFAULT_RESOLVER, connect_decision, dns_decision, resolver_from


def test_the_resolver_is_the_first_nameserver() -> None:
    assert resolver_from("# x\nsearch local\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n") == "1.1.1.1"
    assert resolver_from("nameserver\n") == DEFAULT_RESOLVER and resolver_from(None) == DEFAULT_RESOLVER


def test_decisions_follow_the_reference_policy() -> None:
    closed = NetworkConfig(allow_internet_access=False, allow_out=("example.com",))
    assert not dns_decision(closed, DEFAULT_RESOLVER).allowed
    assert dns_decision(NetworkConfig(False, ("example.com", DEFAULT_RESOLVER)), DEFAULT_RESOLVER).allowed
    assert dns_decision(None, DEFAULT_RESOLVER).allowed
    assert connect_decision(closed, "example.com", "93.184.215.14").allowed
    assert not connect_decision(closed, "other.example", "192.0.2.1").allowed
    assert connect_decision(None, "anything", "192.0.2.1").allowed


def test_an_unusable_destination_is_denied_not_raised() -> None:
    verdict = connect_decision(NetworkConfig(), None, "not-an-ip")
    assert not verdict.allowed and verdict.reason.startswith("unusable destination")
