"""Linear-scan TensorLake egress engine: the oracle for the indexed engine in ``contracts.tensorlake``.

It walks ``allow_out`` and ``deny_out`` in order for every decision and matches with ``ipaddress`` objects
and plain string comparisons, sharing only destination parsing and the four-row table with the indexed
engine, so a bug in the indexes shows up as a disagreement.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from contracts.tensorlake import (
    REASON_NO_POLICY,
    Decision,
    NetworkConfig,
    dns_verdict,
    egress_verdict,
    prepare_destination,
)

__all__ = ["decide_dns_naive", "decide_egress_naive"]

_Rule = tuple[str, str, ipaddress.IPv4Network | None]
_NETWORK_CHARS = frozenset("0123456789./")


def _compile(entries: tuple[str, ...]) -> tuple[_Rule, ...]:
    rules: list[_Rule] = []
    for entry in entries:
        if entry.startswith("*."):
            rules.append((entry, "wildcard", None))
        elif set(entry) <= _NETWORK_CHARS:
            rules.append((entry, "network", ipaddress.IPv4Network(entry)))
        else:
            rules.append((entry, "domain", None))
    return tuple(rules)


@lru_cache(maxsize=16)
def _rules(config: NetworkConfig) -> tuple[tuple[_Rule, ...], tuple[_Rule, ...]]:
    return _compile(config.allow_out), _compile(config.deny_out)


def _scan(
    rules: tuple[_Rule, ...],
    name: str | None,
    address: ipaddress.IPv4Address | None,
    *,
    domains: bool = True,
) -> str | None:
    for entry, kind, network in rules:
        if network is not None:
            if address is not None and address in network:
                return entry
        elif not domains or name is None:
            continue
        elif kind == "domain":
            if name == entry:
                return entry
        elif name.endswith(entry[1:]):
            return entry
    return None


def _address(value: int | None) -> ipaddress.IPv4Address | None:
    return None if value is None else ipaddress.IPv4Address(value)


def decide_egress_naive(config: NetworkConfig | None, *, host: str | None = None, ip: str | None = None) -> Decision:
    """Decide like ``decide_egress`` by scanning every rule in order."""
    if config is None:
        return Decision(True, REASON_NO_POLICY)
    name, value = prepare_destination(host, ip)
    address = _address(value)
    allow, deny = _rules(config)
    return egress_verdict(config, _scan(deny, name, address), _scan(allow, name, address))


def decide_dns_naive(config: NetworkConfig | None, resolver_ip: str) -> Decision:
    """Decide like ``decide_dns`` by scanning every rule in order."""
    if config is None:
        return Decision(True, REASON_NO_POLICY)
    address = _address(prepare_destination(None, resolver_ip)[1])
    allow, deny = _rules(config)
    return dns_verdict(
        config,
        _scan(deny, None, address, domains=False),
        _scan(allow, None, address, domains=False),
    )
