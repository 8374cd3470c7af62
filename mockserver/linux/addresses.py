"""The address plan of a runtime's private network: the world, its resolver, its test hosts, the sandbox links.

Nothing here is routed anywhere outside the namespaces a runtime makes, so every runtime uses the same plan.

* The world's DNS server answers on :data:`RESOLVER` (UDP and TCP port 53); each sandbox's
  ``/etc/resolv.conf`` names it.
* The world serves, as its own local addresses, the three TEST-NET ranges, the benchmarking range
  198.18.0.0/15 the default :class:`~mockserver.core.DnsTable` synthesises addresses from, and any other
  address the DNS server hands out (added when first answered). Every served address runs the test hosts.
* Sandbox ``n`` is joined to the world by a point-to-point /31 link in :data:`LINK_NET`: the world end is
  ``gateway``, the sandbox end ``address``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from mockserver.core.dns import SANDBOX_RESOLVER

__all__ = [
    "INFRA_NETS",
    "LINK_NET",
    "MAX_LINKS",
    "RESOLVER",
    "SERVED_NETS",
    "Link",
    "is_servable",
    "link_for",
]

#: The world's DNS server: the one resolver address of every sandbox, on both runtimes (``mockserver.core.dns``).
RESOLVER = SANDBOX_RESOLVER
LINK_NET = ipaddress.IPv4Network("100.96.0.0/11")
MAX_LINKS = LINK_NET.num_addresses // 2
SERVED_NETS: tuple[str, ...] = ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15")
#: Addresses that never become world hosts: this plan's own ranges, loopback, link-local, multicast and so on.
INFRA_NETS = tuple(
    ipaddress.IPv4Network(n)
    for n in ("0.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/3", str(LINK_NET))
)


@dataclass(frozen=True)
class Link:
    """The two ends of sandbox ``index``'s link to the world."""

    index: int
    gateway: str
    address: str


def link_for(index: int) -> Link:
    """Return the link addresses of sandbox ``index`` (0 <= index < MAX_LINKS)."""
    if not 0 <= index < MAX_LINKS:
        raise ValueError(f"link index {index} out of range")
    base = int(LINK_NET.network_address) + 2 * index
    return Link(index, str(ipaddress.IPv4Address(base)), str(ipaddress.IPv4Address(base + 1)))


def is_servable(address: str) -> bool:
    """Tell whether ``address`` may become a world host (an IPv4 unicast address outside the plan's own ranges)."""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return (
        not any(ip in net for net in INFRA_NETS)
        and not ip.is_multicast
        and ip != ipaddress.IPv4Address("255.255.255.255")
    )
