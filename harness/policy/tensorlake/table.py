"""One Hypothesis property per row of the networking docs' allow_internet_access x allow_out table.

Each property is stated directly from its row, without the reference engine: it draws a documented policy of
that row (lowercase ASCII entries) and checks destinations whose fate the row fixes, namely an exact allow_out
entry (reachable unless a deny_out entry matches it), an unrelated destination, and the sandbox's resolvers.
"""

from __future__ import annotations

import ipaddress

from hypothesis import strategies as st

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.properties import covered
from harness.policy.tensorlake.runner import CheckResult, expect, run_property
from harness.policy.tensorlake.strategies import Network, canonical, ipv4s, is_address, networks
from harness.strength import spec, tagged

__all__ = ["check_row_allow_internet", "check_row_blocked", "check_row_no_internet", "check_row_open"]

SUITE = "tensorlake-policy"
UNRELATED_HOST = "unrelated.sandproof.test"

Case = tuple[Network, str]


def _row_cases(internet: bool, listed: bool) -> st.SearchStrategy[Case]:
    """Policies of one table row (allow_out empty or not) with a resolver address."""
    base = networks(min_allow=1, unicode=False) if listed else networks(unicode=False)
    policies = base.map(lambda n: {**n, "allow_internet_access": internet, **({} if listed else {"allow_out": []})})
    return st.tuples(policies, ipv4s)


def _outside(entries: list[str], ip: str) -> str | None:
    """Return an address near ``ip`` that no IPv4/CIDR entry covers (None if the entries cover everything)."""
    value = int(ipaddress.IPv4Address(ip))
    for step in range(64):
        candidate = str(ipaddress.IPv4Address((value + step * 7919) % 2**32))
        if not covered(entries, candidate):
            return candidate
    return None


def _exact_destination(entry: str) -> tuple[str | None, str | None]:
    """Return a destination an allow_out entry plainly covers: its name, a name below a wildcard, its address."""
    if entry.startswith("*."):
        return "a." + entry[2:], None
    if is_address(entry):
        return None, str(ipaddress.IPv4Network(entry).network_address)
    return entry, None


def _denied(deny: list[str], host: str | None, ip: str | None) -> bool:
    """Tell whether a deny_out entry matches the destination exactly (its name, or a covering address entry)."""
    return (host is not None and host in deny) or (ip is not None and bool(covered(deny, ip)))


def _listed_rows(engine: TensorLakeEngine, network: Network, resolver: str) -> None:
    """The two default-deny rows: listed destinations reachable, unrelated ones not."""
    allow, deny = canonical(network)
    for entry in allow:
        host, ip = _exact_destination(entry)
        if _denied(deny, host, ip):
            continue
        expect(engine.allows_egress(network, host, ip), f"listed {entry!r} is unreachable")
    expect(not engine.allows_egress(network, UNRELATED_HOST, None), f"the unlisted {UNRELATED_HOST} is reachable")
    other = _outside(allow, resolver)
    if other is not None:
        expect(not engine.allows_egress(network, None, other), f"the unlisted address {other} is reachable")


def _row_open(engine: TensorLakeEngine, case: Case) -> None:
    network, resolver = case
    _, deny = canonical(network)
    expect(engine.allows_egress(network, UNRELATED_HOST, None), f"{UNRELATED_HOST} is blocked in the open row")
    for entry in deny:
        host, ip = _exact_destination(entry)
        expect(not engine.allows_egress(network, host, ip), f"deny_out {entry!r} did not block its destination")
    denied = bool(covered(deny, resolver))
    expect(engine.allows_dns(network, resolver) != denied, f"DNS to {resolver}: deny_out covers it: {denied}")
    other = _outside(deny, resolver)
    if other is not None:
        expect(engine.allows_egress(network, None, other), f"{other} matches no deny_out entry but is blocked")


@tagged(SUITE, "row_open", spec("tl.dns.row-1", "tl.table.allow-internet-access", "tl.egress.default-on"))
def check_row_open(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Row (true, empty): all egress and DNS open, except destinations and resolvers deny_out matches."""
    return run_property("row_open", _row_cases(True, False), _row_open, engine, max_examples, derandomize, shrink)


def _row_allow_internet(engine: TensorLakeEngine, case: Case) -> None:
    network, resolver = case
    _listed_rows(engine, network, resolver)
    _, deny = canonical(network)
    denied = bool(covered(deny, resolver))
    expect(engine.allows_dns(network, resolver) != denied, f"DNS to resolver {resolver}: deny_out covers it: {denied}")


@tagged(SUITE, "row_allow_internet", spec("tl.dns.row-2", "tl.table.allow-out", "tl.dns.in-short"))
def check_row_allow_internet(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Row (true, non-empty): default-deny, listed destinations reachable, DNS to the resolvers allowed."""
    cases = _row_cases(True, True)
    return run_property("row_allow_internet", cases, _row_allow_internet, engine, max_examples, derandomize, shrink)


def _row_no_internet(engine: TensorLakeEngine, case: Case) -> None:
    network, resolver = case
    _listed_rows(engine, network, resolver)
    allow, deny = canonical(network)
    listed = [e for e in allow if is_address(e) and "/" not in e]
    if listed and not covered(deny, listed[0]):
        expect(engine.allows_dns(network, listed[0]), f"DNS to the listed resolver {listed[0]} is blocked")
    unlisted = _outside(allow, resolver)
    if unlisted is not None:
        expect(not engine.allows_dns(network, unlisted), f"DNS to the unlisted resolver {unlisted} is allowed")


@tagged(
    SUITE,
    "row_no_internet",
    spec("tl.dns.row-3", "tl.egress.false-nonempty", "tl.table.allow-out", "tl.dns.in-short"),
)
def check_row_no_internet(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Row (false, non-empty): default-deny, listed destinations reachable, DNS only to a listed resolver IP."""
    cases = _row_cases(False, True)
    return run_property("row_no_internet", cases, _row_no_internet, engine, max_examples, derandomize, shrink)


def _row_blocked(engine: TensorLakeEngine, case: Case) -> None:
    network, resolver = case
    _, deny = canonical(network)
    expect(not engine.allows_egress(network, UNRELATED_HOST, None), f"{UNRELATED_HOST} got out of the blocked row")
    expect(not engine.allows_egress(network, None, resolver), f"{resolver} got out of the blocked row")
    expect(not engine.allows_dns(network, resolver), f"DNS to {resolver} got out of the blocked row")
    for entry in deny:
        host, ip = _exact_destination(entry)
        expect(not engine.allows_egress(network, host, ip), f"{entry!r} got out of the blocked row")


@tagged(
    SUITE,
    "row_blocked",
    spec("tl.dns.row-4", "tl.egress.false-empty", "tl.egress.verified-no-internet"),
)
def check_row_blocked(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Row (false, empty): all egress blocked, DNS included, whatever deny_out holds."""
    cases = _row_cases(False, False)
    return run_property("row_blocked", cases, _row_blocked, engine, max_examples, derandomize, shrink)
