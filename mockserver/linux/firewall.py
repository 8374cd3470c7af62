"""One sandbox's egress enforcement: its nftables table and the names its DNS answers taught it.

:class:`Firewall` owns the sandbox's nft context. :meth:`Firewall.apply` compiles a plan (see
:mod:`~mockserver.linux.egress`) and replaces the whole table in one transaction, re-judging every name
answered so far under the new plan; if nft refuses, the old table stays. It is also the world DNS server's
client for this sandbox (:class:`~mockserver.linux.world.DnsClient`): it says whether a name may be
answered and adds the answered addresses to the right set *before* the answer is sent.

The plans are the providers' (``mockserver.<provider>.linux_egress``), which validate an update first and
change nothing when it is rejected; this module knows no provider.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

from mockserver.core.dns import DnsTable

from .addresses import RESOLVER
from .egress import TABLE, EgressPlan, learned_sets, render_additions, render_ruleset
from .nftables import Nftables

__all__ = ["OPEN_PLAN", "Firewall", "resolve_all"]

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


def resolve_all(names: Iterable[str], dns: DnsTable) -> dict[str, list[str]]:
    """Return each name's addresses in ``dns`` (what a plan is seeded with when it is applied)."""
    return {name: dns.resolve(name) for name in names}
