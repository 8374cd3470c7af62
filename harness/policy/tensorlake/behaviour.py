"""Compare TensorLake policies by what they decide, not by how they are written.

Two policies behave alike when they decide every egress destination and every resolver the same way. A
stored policy may be written differently from sandproof's reference (duplicates kept, names as given): the
networking docs say what a policy decides, not how the service stores it. :func:`probes` builds the
destinations and resolvers on the edges of the policies' entries; :func:`behaviour_difference` names the
first one on which the engine decides its own stored policy differently from the policy the reference
stores. The engine judges both, so its other choices (letter case, IDNA) count the same on either side; what
it decides is checked against the docs by the decision checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.strategies import REFERENCE, Network, is_address, near_addresses

__all__ = ["Probes", "behaviour_difference", "probes"]

UNRELATED_HOST = "unrelated.sandproof.test"
UNRELATED_IP = "198.51.100.77"
RESOLVERS = ("10.0.0.2", "8.8.8.8", "1.1.1.1")


@dataclass(frozen=True)
class Probes:
    """Destinations (host, ip) and resolver addresses to compare two policies on."""

    destinations: tuple[tuple[str | None, str | None], ...]
    resolvers: tuple[str, ...]


def _entries(network: Any) -> list[str]:
    """Return the reference's canonical entries of a policy, or none when it does not parse."""
    if not isinstance(network, dict):
        return []
    try:
        config = REFERENCE.config(network)
    except ValueError:
        return []
    return [] if config is None else [*config.allow_out, *config.deny_out]


def probes(networks: Iterable[Network | None]) -> Probes:
    """Return the names at, below and above each domain entry and the addresses on each IPv4/CIDR edge."""
    hosts: dict[str, None] = {UNRELATED_HOST: None}
    addresses: dict[str, None] = {UNRELATED_IP: None}
    for network in networks:
        for entry in _entries(network):
            if is_address(entry):
                addresses.update(dict.fromkeys(near_addresses(entry)))
                continue
            base = entry.removeprefix("*.")
            parent = base.partition(".")[2]
            hosts.update(dict.fromkeys([base, f"a.{base}", f"b.a.{base}", *([parent] if "." in parent else [])]))
    names, ips = list(hosts), list(addresses)
    destinations = [(h, None) for h in names] + [(None, ip) for ip in ips] + [(h, ips[0]) for h in names]
    return Probes(tuple(destinations), tuple(dict.fromkeys([*RESOLVERS, *ips])))


def _verdict(allowed: bool) -> str:
    return "allowed" if allowed else "blocked"


def behaviour_difference(
    engine: TensorLakeEngine, got: Network | None, want: Network | None, *, extra: Iterable[Network | None] = ()
) -> str | None:
    """Return the first probe the engine decides differently on ``got`` than on ``want``, or None."""
    found = probes([got, want, *extra])
    for host, ip in found.destinations:
        mine, theirs = engine.allows_egress(got, host, ip), engine.allows_egress(want, host, ip)
        if mine != theirs:
            return f"egress to host={host!r} ip={ip!r} is {_verdict(mine)}; under {want!r} it is {_verdict(theirs)}"
    for resolver in found.resolvers:
        mine, theirs = engine.allows_dns(got, resolver), engine.allows_dns(want, resolver)
        if mine != theirs:
            return f"DNS to resolver {resolver} is {_verdict(mine)}; under {want!r} it is {_verdict(theirs)}"
    return None
