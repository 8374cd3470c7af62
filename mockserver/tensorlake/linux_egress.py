"""TensorLake's egress policy on the linux runtime: a ``network`` policy compiled to a sandbox's firewall plan.

The four rows of the docs' table give the default verdict and, through ``decide_dns``, the verdict for DNS to
the sandbox's resolver; IPv4/CIDR entries fill the static sets; hostname entries judge the names the
sandbox's DNS server answers, with ``decide_egress`` (``contracts.tensorlake``, the one rule). The DNS server
answers every name: a denied name resolves, and its connections are refused.

:func:`tensorlake_update` validates a PATCH body first and changes nothing on a rejected update; the plan is
then swapped in one nft transaction (:class:`mockserver.linux.firewall.Firewall`).
"""

from __future__ import annotations

from collections.abc import Callable

from contracts import tensorlake as tl
from contracts.errors import PolicyError
from mockserver.core.dns import DnsTable
from mockserver.linux.egress import EgressPlan, NameAction, networks
from mockserver.linux.firewall import Firewall, resolve_all

__all__ = ["tensorlake_apply", "tensorlake_plan", "tensorlake_update"]


def _name_rule(config: tl.NetworkConfig) -> Callable[[str], NameAction]:
    def rule(name: str) -> NameAction:
        try:
            decision = tl.decide_egress(config, host=name)
        except (ValueError, PolicyError):
            return "none"
        if decision.allowed:
            return "none" if decision.reason in (tl.REASON_OPEN, tl.REASON_NO_POLICY) else "allow"
        return "none" if decision.reason in (tl.REASON_DEFAULT_DENY, tl.REASON_BLOCKED) else "deny"

    return rule


def tensorlake_plan(config: tl.NetworkConfig | None, resolver: str) -> EgressPlan:
    """Return the plan of a TensorLake ``network`` policy (None: unrestricted) for a sandbox using ``resolver``."""
    if config is None:
        return EgressPlan("accept", "accept", description="tensorlake: no policy")
    ips = ("ip", "cidr")
    allow = [e for e in config.allow_out if tl.classify_entry(e, "allow_out")[0] in ips]
    deny = [e for e in config.deny_out if tl.classify_entry(e, "deny_out")[0] in ips]
    open_row = config.allow_internet_access and not config.allow_out
    return EgressPlan(
        default="accept" if open_row else "reject",
        dns="accept" if tl.decide_dns(config, resolver).allowed else "reject",
        allow_nets=networks(allow),
        deny_nets=networks(deny),
        name_rule=_name_rule(config),
        description=f"tensorlake: {config.to_json()}",
    )


def tensorlake_update(
    firewall: Firewall, current: tl.NetworkConfig | None, patch_body: object, dns: DnsTable
) -> tl.NetworkConfig | None:
    """Apply a TensorLake ``PATCH /sandboxes/{id}`` body to the sandbox; return the policy now in force.

    Raises ``contracts.errors.PolicyError`` (e.g. ``unresolvable_host``) and changes nothing when the body is
    rejected; otherwise the table is swapped in one transaction before this returns.
    """
    updated = tl.apply_network_update(current, patch_body, dns.resolve)
    if updated is not current:
        names = tl.resolvable_hostnames(updated) if updated is not None else ()
        firewall.apply(tensorlake_plan(updated, firewall.resolver), resolve_all(names, dns))
    return updated


def tensorlake_apply(firewall: Firewall, config: tl.NetworkConfig | None, dns: DnsTable) -> None:
    """Enforce a TensorLake policy given at create time (None: unrestricted)."""
    names = tl.resolvable_hostnames(config) if config is not None else ()
    firewall.apply(tensorlake_plan(config, firewall.resolver), resolve_all(names, dns))
