"""OpenSandbox's egress policy on the linux runtime: a ``networkPolicy`` compiled to a sandbox's firewall plan.

Two sidecar modes, both served (``--opensandbox-egress-mode``):

* ``dns``: the sandbox's DNS server answers NXDOMAIN for names the policy denies; nothing filters addresses,
  so raw IP connections pass (the real sidecar's DNS-only layer).
* ``dns+nft``: as ``dns``, plus the default action and IPv4 rule targets are enforced on addresses, and the
  addresses of allowed names are learned from the DNS answers (the real sidecar's dynamic allow set). The
  resolver is always reachable, as the sidecar whitelists its nameservers.

Names are judged by ``decide_egress`` (``contracts.opensandbox``, the one rule).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Literal

from contracts import opensandbox as osb
from contracts.errors import PolicyError
from mockserver.core.dns import DnsTable
from mockserver.linux.egress import EgressPlan, NameAction, Verdict, networks
from mockserver.linux.firewall import Firewall, resolve_all

__all__ = ["OpenSandboxMode", "opensandbox_apply", "opensandbox_names", "opensandbox_plan"]

OpenSandboxMode = Literal["dns", "dns+nft"]


def _name_rule(policy: osb.NetworkPolicy) -> Callable[[str], NameAction]:
    def rule(name: str) -> NameAction:
        try:
            decision = osb.decide_egress(policy, name)
        except PolicyError:
            return "allow" if policy.is_empty else "nxdomain"
        return "allow" if decision.allowed else "nxdomain"

    return rule


def opensandbox_plan(policy: osb.NetworkPolicy | None, mode: OpenSandboxMode, resolver: str) -> EgressPlan:
    """Return the plan of an OpenSandbox ``networkPolicy`` (None: allow all) under sidecar ``mode``."""
    del resolver  # the sidecar always lets the sandbox reach its nameservers
    policy = policy or osb.NetworkPolicy()
    rule = _name_rule(policy)
    description = f"opensandbox {mode}: {policy.to_json()}"
    if mode == "dns":
        return EgressPlan("accept", "accept", name_rule=rule, description=description)
    if mode != "dns+nft":
        raise ValueError(f"unknown OpenSandbox egress mode {mode!r}")
    allow: list[str] = []
    deny: list[str] = []
    for target in dict.fromkeys(r.target for r in policy.egress):
        try:
            address = ipaddress.ip_address(target)
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv4Address):
            (allow if osb.decide_egress(policy, target).allowed else deny).append(target)
    default: Verdict = "accept" if policy.effective_default == "allow" else "reject"
    return EgressPlan(default, "accept", networks(allow), networks(deny), rule, description)


def opensandbox_names(policy: osb.NetworkPolicy | None) -> tuple[str, ...]:
    """Return the exact domain targets of an OpenSandbox policy (what can be resolved in advance)."""
    if policy is None:
        return ()
    names: dict[str, None] = {}
    for rule in policy.egress:
        target = rule.target
        if not rule.is_wildcard and not target.replace(".", "").isdigit() and ":" not in target:
            names.setdefault(target, None)
    return tuple(names)


def opensandbox_apply(
    firewall: Firewall, policy: osb.NetworkPolicy | None, mode: OpenSandboxMode, dns: DnsTable
) -> None:
    """Enforce an OpenSandbox ``networkPolicy`` under sidecar ``mode`` (after PUT, PATCH or DELETE merged it)."""
    firewall.apply(opensandbox_plan(policy, mode, firewall.resolver), resolve_all(opensandbox_names(policy), dns))
