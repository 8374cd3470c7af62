"""Hypothesis properties of TensorLake egress and DNS decisions, with the reference engine as the oracle.

The ``spec`` properties draw lowercase ASCII policies and destinations (``plain`` strategies), the forms the
networking docs define, so that no choice of sandproof's (letter case, IDNA) decides them. Some are stated
directly (deny precedence, monotonicity, wildcard/apex, CIDR bounds, hostnames followed across DNS), the
others compare the engine with the reference where the docs determine the answer. Whether a CIDR entry
covering a resolver "lists" it (row 3 of the table) is sandproof's choice, checked apart.
"""

from __future__ import annotations

import ipaddress

from hypothesis import strategies as st

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.runner import CheckResult, expect, run_property
from harness.policy.tensorlake.strategies import (
    REFERENCE,
    Network,
    aimed_entry,
    allow_entries,
    ascii_labels,
    canonical,
    cidrs,
    deny_entries,
    domains,
    egress_cases,
    ipv4s,
    is_address,
    networks,
    pick,
    resolver_cases,
    small_ints,
    with_entry,
)
from harness.strength import choice, spec, tagged

__all__ = [
    "check_allow_never_allows_less",
    "check_cidr_bounds",
    "check_deny_never_allows_more",
    "check_deny_precedence",
    "check_dns_agrees",
    "check_dns_cidr_resolver",
    "check_egress_agrees",
    "check_hostname_follows_dns",
    "check_wildcard_apex",
    "covered",
]

SUITE = "tensorlake-policy"


def covered(entries: list[str], ip: str) -> list[str]:
    """Return the IPv4/CIDR entries (canonical) that cover address ``ip``."""
    address = ipaddress.IPv4Address(ip)
    return [e for e in entries if is_address(e) and address in ipaddress.IPv4Network(e)]


def _egress_agrees(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None]) -> None:
    network, host, ip = case
    want = REFERENCE.allows_egress(network, host, ip)
    got = engine.allows_egress(network, host, ip)
    expect(got == want, f"allows_egress returned {got}, the reference says {want}")


@tagged(
    SUITE,
    "egress_agrees",
    spec("tl.dns.row-1", "tl.dns.row-2", "tl.dns.row-3", "tl.dns.row-4", "tl.allow.kinds", "tl.table.allow-out"),
)
def check_egress_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Egress decisions agree with the reference on documented policies and destinations aimed at their rules."""
    cases = egress_cases(plain=True)
    return run_property("egress_agrees", cases, _egress_agrees, engine, max_examples, derandomize, shrink)


def _cidr_listed_only(network: Network, resolver: str) -> bool:
    """Tell whether only a CIDR allow entry, no exact address, covers the resolver in the (false, non-empty) row."""
    allow, deny = canonical(network)
    if network.get("allow_internet_access", True) or not allow or covered(deny, resolver):
        return False
    return resolver not in allow and bool(covered(allow, resolver))


def _dns_agrees(engine: TensorLakeEngine, case: tuple[Network, str]) -> None:
    network, resolver = case
    if _cidr_listed_only(network, resolver):
        return  # whether a CIDR "lists" the resolver is a choice: check_dns_cidr_resolver
    want = REFERENCE.allows_dns(network, resolver)
    got = engine.allows_dns(network, resolver)
    expect(got == want, f"allows_dns returned {got}, the reference says {want}")


@tagged(
    SUITE,
    "dns_agrees",
    spec("tl.dns.row-1", "tl.dns.row-2", "tl.dns.row-3", "tl.dns.row-4", "tl-sdk.resolver-deny"),
)
def check_dns_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """DNS decisions agree with the reference, resolvers placed on the edges of the policy's entries."""
    return run_property(
        "dns_agrees", resolver_cases(plain=True), _dns_agrees, engine, max_examples, derandomize, shrink
    )


@st.composite
def _cidr_resolver_cases(draw: st.DrawFn) -> tuple[Network, str]:
    network = draw(networks(min_allow=1, unicode=False))
    cidr = draw(cidrs.filter(lambda c: not c.endswith("/32")))
    net = ipaddress.IPv4Network(cidr)
    resolver = str(net.network_address + draw(st.integers(0, net.num_addresses - 1)))
    return {**with_entry(network, "allow_out", cidr), "allow_internet_access": False}, resolver


def _cidr_resolver(engine: TensorLakeEngine, case: tuple[Network, str]) -> None:
    network, resolver = case
    want = REFERENCE.allows_dns(network, resolver)
    got = engine.allows_dns(network, resolver)
    expect(got == want, f"allows_dns returned {got}; sandproof counts a covering allow_out CIDR as listing it")


@tagged(
    SUITE,
    "dns_cidr_resolver",
    choice(
        "row 3 allows DNS when the resolver's IP is 'listed in allow_out'; sandproof counts a covering CIDR as listed",
        sentences=("tl.dns.row-3",),
    ),
)
def check_dns_cidr_resolver(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """With allow_internet_access=false, an allow_out CIDR covering the resolver lets DNS through (deny still wins)."""
    cases = _cidr_resolver_cases()
    return run_property("dns_cidr_resolver", cases, _cidr_resolver, engine, max_examples, derandomize, shrink)


@st.composite
def _aimed_cases(
    draw: st.DrawFn, *, min_allow: int = 0, wildcard: bool = False, aimed_only: bool = False
) -> tuple[Network, str | None, str | None, str]:
    network, host, ip = draw(egress_cases(min_allow, plain=True))
    if aimed_only or draw(small_ints) % 3:
        entry = aimed_entry(draw, host, ip, wildcard=wildcard)
    else:
        entry = draw(allow_entries(unicode=False) if wildcard else deny_entries(unicode=False))
    return network, host, ip, entry


def _deny_precedence(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    both = with_entry(with_entry(network, "allow_out", entry), "deny_out", entry)
    expect(not engine.allows_egress(both, host, ip), f"{entry!r} is in allow_out and deny_out but was allowed")
    if ip is not None and is_address(entry):
        expect(not engine.allows_dns(both, ip), f"resolver {ip} is covered by deny_out {entry!r} but DNS was allowed")


@tagged(
    SUITE,
    "deny_precedence",
    spec("tl.allow.deny-precedence", "tl.deny.combine", "tl.table.deny-out", "tl-sdk.resolver-deny"),
)
def check_deny_precedence(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """A destination matched by both allow_out and deny_out is blocked, and so is DNS to a denied resolver."""
    cases = _aimed_cases(aimed_only=True)
    return run_property("deny_precedence", cases, _deny_precedence, engine, max_examples, derandomize, shrink)


def _deny_monotone(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    more = with_entry(network, "deny_out", entry)
    if engine.allows_egress(more, host, ip):
        expect(engine.allows_egress(network, host, ip), f"adding deny_out {entry!r} allowed the destination")
    if ip is not None and engine.allows_dns(more, ip):
        expect(engine.allows_dns(network, ip), f"adding deny_out {entry!r} allowed DNS to {ip}")


@tagged(SUITE, "deny_never_allows_more", spec("tl.table.deny-out", "tl.dns.row-1"))
def check_deny_never_allows_more(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Adding a deny_out entry never allows a destination or resolver that was blocked."""
    return run_property(
        "deny_never_allows_more", _aimed_cases(), _deny_monotone, engine, max_examples, derandomize, shrink
    )


def _allow_monotone(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    more = with_entry(network, "allow_out", entry)
    if engine.allows_egress(network, host, ip):
        expect(engine.allows_egress(more, host, ip), f"adding allow_out {entry!r} blocked the destination")
    if ip is not None and engine.allows_dns(network, ip):
        expect(engine.allows_dns(more, ip), f"adding allow_out {entry!r} blocked DNS to {ip}")


@tagged(SUITE, "allow_never_allows_less", spec("tl.table.allow-out", "tl.dns.row-2", "tl.dns.row-3"))
def check_allow_never_allows_less(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Adding an entry to a non-empty allow_out never blocks what was allowed."""
    cases = _aimed_cases(min_allow=1, wildcard=True)
    return run_property("allow_never_allows_less", cases, _allow_monotone, engine, max_examples, derandomize, shrink)


def _wildcard_apex(engine: TensorLakeEngine, case: tuple[str, str, str, bool, str | None]) -> None:
    domain, p, q, internet, ip = case
    network = {"allow_internet_access": internet, "allow_out": ["*." + domain]}
    expect(engine.allows_egress(network, f"{p}.{domain}", ip), f"*.{domain} did not match {p}.{domain}")
    expect(engine.allows_egress(network, f"{q}.{p}.{domain}", ip), f"*.{domain} did not match {q}.{p}.{domain}")
    expect(not engine.allows_egress(network, domain, ip), f"*.{domain} matched the apex {domain}")
    with_apex = with_entry(network, "allow_out", domain)
    expect(engine.allows_egress(with_apex, domain, ip), f"the apex entry {domain} did not match {domain}")


@tagged(SUITE, "wildcard_apex", spec("tl.allow.wildcard-apex", "tl.allow.add-apex"))
def check_wildcard_apex(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """*.d matches names any depth below d but never d itself; the apex entry d matches d."""
    cases = st.tuples(domains(unicode=False), ascii_labels, ascii_labels, st.booleans(), st.one_of(st.none(), ipv4s))
    return run_property("wildcard_apex", cases, _wildcard_apex, engine, max_examples, derandomize, shrink)


def _cidr_bounds(engine: TensorLakeEngine, case: tuple[str, bool]) -> None:
    cidr, internet = case
    net = ipaddress.IPv4Network(cidr)
    first, last = int(net.network_address), int(net.broadcast_address)
    inside = [str(ipaddress.IPv4Address(v)) for v in (first, last)]
    outside = [str(ipaddress.IPv4Address(v)) for v in (first - 1, last + 1) if 0 <= v < 2**32]
    allow = {"allow_internet_access": internet, "allow_out": [cidr]}
    deny = {"allow_internet_access": True, "deny_out": [cidr]}
    for ip in inside:
        expect(engine.allows_egress(allow, None, ip), f"allow_out {cidr} did not cover {ip}")
        expect(not engine.allows_egress(deny, None, ip), f"deny_out {cidr} did not cover {ip}")
        expect(not engine.allows_dns(deny, ip), f"deny_out {cidr} did not block DNS to resolver {ip}")
        if internet:
            expect(engine.allows_dns(allow, ip), f"DNS to resolver {ip} was blocked with allow_internet_access=true")
    for ip in outside:
        expect(not engine.allows_egress(allow, None, ip), f"allow_out {cidr} covered {ip}")
        expect(engine.allows_egress(deny, None, ip), f"deny_out {cidr} covered {ip}")
        expect(engine.allows_dns(allow, ip) == internet, f"allow_out {cidr} changed DNS to resolver {ip}")


@tagged(SUITE, "cidr_bounds", spec("tl.allow.kinds", "tl.table.allow-out", "tl.table.deny-out", "tl.dns.row-3"))
def check_cidr_bounds(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """An IPv4/CIDR entry covers exactly its first to last address, in allow_out and deny_out, DNS included."""
    cases = st.tuples(cidrs, st.booleans())
    return run_property("cidr_bounds", cases, _cidr_bounds, engine, max_examples, derandomize, shrink)


@st.composite
def _dns_follow_cases(draw: st.DrawFn) -> tuple[Network, str, list[str]]:
    network = draw(networks(min_allow=1, unicode=False))
    allow, deny = canonical(network)
    names = [e for e in allow if not is_address(e) and not e.startswith("*.") and e not in deny]
    use_listed = bool(names) and draw(st.booleans())
    name: str = pick(draw, names) if use_listed else draw(domains(unicode=False))
    if name not in allow:
        network = with_entry(network, "allow_out", name)
    if name in deny:
        network = {**network, "deny_out": [e for e in network.get("deny_out", []) if e != name]}
    return network, name, draw(st.lists(ipv4s, min_size=1, max_size=4))


def _follows_dns(engine: TensorLakeEngine, case: tuple[Network, str, list[str]]) -> None:
    network, name, addresses = case
    _, deny = canonical(network)
    for ip in addresses:
        if covered(deny, ip):
            continue
        expect(engine.allows_egress(network, name, ip), f"allow_out {name!r} did not cover {name} at {ip}")
    denied = with_entry(network, "deny_out", name)
    for ip in addresses:
        expect(not engine.allows_egress(denied, name, ip), f"deny_out {name!r} did not block {name} at {ip}")


@tagged(SUITE, "hostname_follows_dns", spec("tl.allow.follows-dns"))
def check_hostname_follows_dns(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """A hostname entry covers the name at whatever address it resolves to, in allow_out and in deny_out."""
    return run_property(
        "hostname_follows_dns", _dns_follow_cases(), _follows_dns, engine, max_examples, derandomize, shrink
    )
