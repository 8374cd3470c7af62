"""One sandbox's egress enforcement: its nftables table and the names its DNS answers taught it.

:class:`Firewall` owns the sandbox's nft context. :meth:`Firewall.apply` compiles a plan (see
:mod:`~mockserver.linux.egress`) and replaces the whole table in one transaction, re-judging every name
answered so far under the new plan; if nft refuses, the old table stays. It is also the world DNS server's
client for this sandbox (:class:`~mockserver.linux.world.DnsClient`): it says whether a name may be
answered and adds the answered addresses to the right set *before* the answer is sent.

The provider helpers validate first and change nothing on a rejected update: :func:`tensorlake_update`
runs ``contracts.tensorlake.apply_network_update`` (which rejects an unresolvable hostname) before
touching the table.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

from contracts import opensandbox as osb
from contracts import tensorlake as tl
from mockserver.core.dns import DnsTable

from .addresses import RESOLVER
from .egress import (
    TABLE,
    EgressPlan,
    OpenSandboxMode,
    learned_sets,
    opensandbox_plan,
    render_additions,
    render_ruleset,
    tensorlake_plan,
)
from .nftables import Nftables

__all__ = ["OPEN_PLAN", "Firewall", "opensandbox_names", "tensorlake_update"]

OPEN_PLAN = EgressPlan("accept", "accept", description="no policy")


class Firewall:
    """The egress state of one sandbox; thread-safe."""

    def __init__(self, nft: Nftables, *, resolver: str = RESOLVER, serve: Callable[[str], bool] | None = None) -> None:
        self._nft = nft
        self.resolver = resolver
        self._serve = serve or (lambda _address: True)
        self._lock = threading.Lock()
        self.plan = OPEN_PLAN
        self._answers: dict[str, tuple[str, ...]] = {}
        self.swaps = 0

    def apply(self, plan: EgressPlan, resolved: Mapping[str, Sequence[str]] | None = None) -> None:
        """Enforce ``plan`` from now on, in one nft transaction; ``resolved`` seeds names' current addresses."""
        with self._lock:
            answers = dict(self._answers)
            for name, addresses in (resolved or {}).items():
                answers[name.rstrip(".").lower()] = tuple(a for a in addresses if self._serve(a))
            allow, deny = learned_sets(plan, answers)
            self._nft.run(render_ruleset(plan, resolver=self.resolver, allow_names=allow, deny_names=deny))
            self.plan = plan
            self._answers = answers
            self.swaps += 1

    def permits(self, name: str) -> bool:
        """Tell whether the DNS server may answer ``name`` (OpenSandbox refuses denied names)."""
        return self.plan.judge(name) != "nxdomain"

    def learn(self, name: str, addresses: list[str]) -> None:
        """Record an answer and add its addresses to the set the current plan puts them in."""
        key = name.rstrip(".").lower()
        with self._lock:
            self._answers[key] = tuple(addresses)
            target = self.plan.learned_set(self.plan.judge(key))
            if target is not None and addresses:
                self._nft.run(render_additions(target, addresses))

    def answers(self) -> dict[str, tuple[str, ...]]:
        """Return the addresses last answered (or seeded) per name."""
        with self._lock:
            return dict(self._answers)

    def ruleset(self) -> str:
        """Return the table as nft lists it now."""
        return self._nft.run(f"list table {TABLE}")

    def close(self) -> None:
        """Release the nft context."""
        self._nft.close()


def _resolve_all(names: Iterable[str], dns: DnsTable) -> dict[str, list[str]]:
    return {name: dns.resolve(name) for name in names}


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
        firewall.apply(tensorlake_plan(updated, firewall.resolver), _resolve_all(names, dns))
    return updated


def tensorlake_apply(firewall: Firewall, config: tl.NetworkConfig | None, dns: DnsTable) -> None:
    """Enforce a TensorLake policy given at create time (None: unrestricted)."""
    names = tl.resolvable_hostnames(config) if config is not None else ()
    firewall.apply(tensorlake_plan(config, firewall.resolver), _resolve_all(names, dns))


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
    firewall.apply(opensandbox_plan(policy, mode, firewall.resolver), _resolve_all(opensandbox_names(policy), dns))
