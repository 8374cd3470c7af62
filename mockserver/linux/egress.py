"""Compile a provider's egress policy to the nftables ruleset of one sandbox. Pure: policy in, text out.

A policy becomes an :class:`EgressPlan`: the verdict for destinations nothing matches, the verdict for DNS
to the sandbox's resolver, static allow/deny sets of IPv4 addresses and CIDRs, and a name rule the DNS
server asks about every name it answers. The ruleset lives in table ``inet sandproof`` of the sandbox's
network namespace; its output chain, in order:

1. loopback traffic is accepted (ingress forwarded from the host arrives on ``lo``); IPv6 is refused (the
   world has no IPv6);
2. packets of connections already established are accepted ("already-established connections are not
   interrupted" by a policy change);
3. DNS (UDP and TCP port 53) to the resolver gets the plan's DNS verdict;
4. ``deny_nets`` then ``deny_names`` refuse, ``allow_nets`` then ``allow_names`` accept (deny precedence);
5. everything else gets the default verdict.

``*_names`` hold the addresses the DNS server answered for names the policy names: an allowed (or
wildcard-allowed) name's addresses go to ``allow_names`` when the default is to refuse, a denied name's to
``deny_names``, and nothing else is ever added. A refused packet is answered at once (TCP reset, else ICMP
administratively prohibited), so a blocked connection fails fast instead of timing out.

The plans themselves are the providers': :mod:`mockserver.tensorlake.linux_egress` and
:mod:`mockserver.opensandbox.linux_egress` compile a TensorLake ``network`` or an OpenSandbox
``networkPolicy`` to an :class:`EgressPlan`. This module knows no provider.

Known deviations: hostname rules are enforced on the addresses the names resolve to, so a connection to
an allowed (or denied) name's address is allowed (or refused) even when the program never asked for the
name; learned addresses stay in their set until the next policy change (no TTL expiry); an address
answered for both an allowed and a denied name is refused for both; IPv6 egress is always refused;
refused packets are rejected at once rather than silently dropped.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "TABLE",
    "EgressPlan",
    "NameAction",
    "Verdict",
    "learned_sets",
    "networks",
    "render_additions",
    "render_ruleset",
]

TABLE = "inet sandproof"
Verdict = Literal["accept", "reject"]
#: What the DNS server does with a name: learn its addresses as allowed or denied, nothing, or refuse it.
NameAction = Literal["allow", "deny", "none", "nxdomain"]
NameSet = Literal["allow_names", "deny_names"]


@dataclass(frozen=True)
class EgressPlan:
    """What a sandbox's firewall and DNS server enforce for one policy."""

    default: Verdict
    dns: Verdict
    allow_nets: tuple[str, ...] = ()
    deny_nets: tuple[str, ...] = ()
    name_rule: Callable[[str], NameAction] = field(default=lambda _name: "none", compare=False)
    description: str = ""

    def judge(self, name: str) -> NameAction:
        """Return what the DNS server does with ``name`` under this plan."""
        return self.name_rule(name.rstrip(".").lower())

    def learned_set(self, action: NameAction) -> NameSet | None:
        """Return the set a name judged ``action`` adds its addresses to, or None when none is needed."""
        if action == "deny":
            return "deny_names"
        if action == "allow" and self.default == "reject":
            return "allow_names"
        return None


def networks(entries: Iterable[str]) -> tuple[str, ...]:
    """Return the IPv4 addresses and networks among ``entries``, once each (a /32 as its address)."""
    nets: dict[str, None] = {}
    for entry in entries:
        try:
            network = ipaddress.IPv4Network(entry, strict=False)
        except ValueError:
            continue
        nets.setdefault(str(network.network_address) if network.prefixlen == 32 else str(network), None)
    return tuple(nets)


def learned_sets(plan: EgressPlan, answers: Mapping[str, Sequence[str]]) -> tuple[set[str], set[str]]:
    """Return the (allow, deny) address sets ``plan`` learns from the answers already given for some names."""
    allow: set[str] = set()
    deny: set[str] = set()
    for name, addresses in answers.items():
        target = plan.learned_set(plan.judge(name))
        if target == "allow_names":
            allow.update(addresses)
        elif target == "deny_names":
            deny.update(addresses)
    return allow, deny


def _set(name: str, elements: Iterable[str], interval: bool) -> str:
    flags = " flags interval; auto-merge;" if interval else ""
    items = sorted(elements, key=lambda e: ipaddress.IPv4Network(e, strict=False))
    body = f" elements = {{ {', '.join(items)} }};" if items else ""
    return f"\tset {name} {{ type ipv4_addr;{flags}{body} }}\n"


def _verdict(verdict: Verdict) -> str:
    return "accept" if verdict == "accept" else "jump blocked"


def render_ruleset(
    plan: EgressPlan, *, resolver: str, allow_names: Iterable[str] = (), deny_names: Iterable[str] = ()
) -> str:
    """Return the nft script that replaces the sandbox's table with ``plan`` in one transaction."""
    ipaddress.IPv4Address(resolver)
    return (
        f"table {TABLE}\n"
        f"delete table {TABLE}\n"
        f"table {TABLE} {{\n"
        + _set("allow_nets", plan.allow_nets, True)
        + _set("deny_nets", plan.deny_nets, True)
        + _set("allow_names", set(allow_names), False)
        + _set("deny_names", set(deny_names), False)
        + "\tchain blocked {\n"
        "\t\tmeta l4proto tcp reject with tcp reset\n"
        "\t\treject with icmpx admin-prohibited\n"
        "\t}\n"
        "\tchain output {\n"
        "\t\ttype filter hook output priority filter; policy accept;\n"
        '\t\toifname "lo" accept\n'
        "\t\tmeta nfproto ipv6 jump blocked\n"
        "\t\tct state established,related accept\n"
        f"\t\tip daddr {resolver} meta l4proto {{ tcp, udp }} th dport 53 {_verdict(plan.dns)}\n"
        "\t\tip daddr @deny_nets jump blocked\n"
        "\t\tip daddr @deny_names jump blocked\n"
        "\t\tip daddr @allow_nets accept\n"
        "\t\tip daddr @allow_names accept\n"
        f"\t\t{_verdict(plan.default)}\n"
        "\t}\n"
        "}\n"
    )


def render_additions(set_name: NameSet, addresses: Iterable[str]) -> str:
    """Return the nft command adding ``addresses`` to one of the learned sets ("" when there are none)."""
    items = sorted({str(ipaddress.IPv4Address(a)) for a in addresses}, key=ipaddress.IPv4Address)
    if not items:
        return ""
    return f"add element {TABLE} {set_name} {{ {', '.join(items)} }}\n"
