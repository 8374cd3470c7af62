"""Hypothesis property checks for TensorLake egress engines, with the reference engine as the oracle.

Some properties are stated directly (deny precedence, monotonicity, wildcard/apex, case, IDNA, CIDR bounds),
the others compare the engine with the reference (decisions, normalisation, validation, PATCH, resolving).
"""

from __future__ import annotations

import ipaddress
from typing import Any

import idna
from hypothesis import strategies as st

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.runner import CheckResult, expect, raises, run_property
from harness.policy.tensorlake.strategies import (
    KEYS,
    LABELS,
    REFERENCE,
    RESOLVED,
    TLDS,
    UNICODE_LABELS,
    Network,
    aimed_entry,
    allow_entries,
    ascii_labels,
    canonical,
    cidrs,
    decorate,
    decorated_networks,
    deny_entries,
    destinations,
    domains,
    egress_cases,
    ipv4s,
    is_address,
    networks,
    pick,
    raw_networks,
    recase,
    resolve_all,
    resolve_none,
    resolver_cases,
    small_ints,
    with_entry,
)

__all__ = [
    "check_allow_never_allows_less",
    "check_case_insensitive",
    "check_cidr_bounds",
    "check_deny_never_allows_more",
    "check_deny_precedence",
    "check_dns_agrees",
    "check_egress_agrees",
    "check_idna",
    "check_normalisation",
    "check_patch_tristate",
    "check_unresolvable_rejected",
    "check_validation_agrees",
    "check_wildcard_apex",
]


def _egress_agrees(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None]) -> None:
    network, host, ip = case
    want = REFERENCE.allows_egress(network, host, ip)
    got = engine.allows_egress(network, host, ip)
    expect(got == want, f"allows_egress returned {got}, the reference says {want}")


def check_egress_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check egress decisions against the reference on policies and destinations aimed at each other."""
    return run_property("egress_agrees", egress_cases(), _egress_agrees, engine, max_examples, derandomize, shrink)


def _dns_agrees(engine: TensorLakeEngine, case: tuple[Network, str]) -> None:
    network, resolver = case
    want = REFERENCE.allows_dns(network, resolver)
    got = engine.allows_dns(network, resolver)
    expect(got == want, f"allows_dns returned {got}, the reference says {want}")


def check_dns_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check DNS decisions against the reference, resolvers placed on the edges of the policy's CIDRs."""
    return run_property("dns_agrees", resolver_cases(), _dns_agrees, engine, max_examples, derandomize, shrink)


@st.composite
def _aimed_cases(
    draw: st.DrawFn, *, min_allow: int = 0, wildcard: bool = False, aimed_only: bool = False
) -> tuple[Network, str | None, str | None, str]:
    network, host, ip = draw(egress_cases(min_allow))
    if aimed_only or draw(small_ints) % 3:
        entry = aimed_entry(draw, host, ip, wildcard=wildcard)
    else:
        entry = draw(allow_entries() if wildcard else deny_entries())
    return network, host, ip, entry


def _deny_precedence(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    both = with_entry(with_entry(network, "allow_out", entry), "deny_out", entry)
    expect(not engine.allows_egress(both, host, ip), f"{entry!r} is in allow_out and deny_out but was allowed")
    if ip is not None and is_address(entry):
        expect(not engine.allows_dns(both, ip), f"resolver {ip} is covered by deny_out {entry!r} but DNS was allowed")


def check_deny_precedence(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that a destination matched by both allow_out and deny_out is blocked (DNS included)."""
    cases = _aimed_cases(aimed_only=True)
    return run_property("deny_precedence", cases, _deny_precedence, engine, max_examples, derandomize, shrink)


def _deny_monotone(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    more = with_entry(network, "deny_out", entry)
    if engine.allows_egress(more, host, ip):
        expect(engine.allows_egress(network, host, ip), f"adding deny_out {entry!r} allowed the destination")
    if ip is not None and engine.allows_dns(more, ip):
        expect(engine.allows_dns(network, ip), f"adding deny_out {entry!r} allowed DNS to {ip}")


def check_deny_never_allows_more(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that adding a deny_out entry never allows a destination or resolver that was blocked."""
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


def check_allow_never_allows_less(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that adding an entry to a non-empty allow_out never blocks what was allowed."""
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


def check_wildcard_apex(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that *.d matches names any depth below d but never d itself."""
    cases = st.tuples(domains(), ascii_labels, ascii_labels, st.booleans(), st.one_of(st.none(), ipv4s))
    return run_property("wildcard_apex", cases, _wildcard_apex, engine, max_examples, derandomize, shrink)


@st.composite
def _case_cases(draw: st.DrawFn) -> tuple[Network, str, str | None, int]:
    network, host, ip = draw(egress_cases())
    allow, deny = canonical(network)
    wild = [e[2:] for e in allow if e.startswith("*.")]
    exact = [e for e in allow + deny if not e.startswith("*.") and not is_address(e)]
    choice = draw(small_ints) % 4
    if choice < 3 and exact and (choice < 2 or not wild):
        host = pick(draw, exact)
    elif choice < 3 and wild:
        host = f"{draw(ascii_labels)}.{pick(draw, wild)}"
    if host is None:
        host = draw(domains())
    return network, host.lower(), ip, draw(st.integers(1, 2**60))


def _case_insensitive(engine: TensorLakeEngine, case: tuple[Network, str, str | None, int]) -> None:
    network, host, ip, mask = case
    base = engine.allows_egress(network, host, ip)
    shouted = recase(host, mask)
    expect(engine.allows_egress(network, shouted, ip) == base, f"{shouted!r} and {host!r} were judged differently")
    loud = {k: [decorate(e, "upper") for e in v] if isinstance(v, list) else v for k, v in network.items()}
    expect(engine.allows_egress(loud, host, ip) == base, "upper-casing the policy's domains changed the decision")


def check_case_insensitive(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that letter case in hosts and in domain entries never changes a decision."""
    return run_property("case_insensitive", _case_cases(), _case_insensitive, engine, max_examples, derandomize, shrink)


_unicode_domains = st.builds(
    lambda labels, tld: ".".join([*labels, tld]),
    st.lists(st.sampled_from(LABELS + UNICODE_LABELS), min_size=1, max_size=2).filter(
        lambda labels: any(not label.isascii() for label in labels)
    ),
    st.sampled_from(TLDS),
)


def _idna(engine: TensorLakeEngine, case: tuple[str, str, bool]) -> None:
    name, p, upper = case
    puny = idna.encode(name, uts46=True).decode("ascii")
    written = name.upper() if upper else name
    expect(engine.allows_egress({"allow_out": [written]}, puny, None), f"{written!r} did not match {puny!r}")
    expect(engine.allows_egress({"allow_out": [puny]}, written, None), f"{puny!r} did not match {written!r}")
    expect(
        engine.allows_egress({"allow_out": ["*." + written]}, f"{p}.{puny}", None),
        f"*.{written} did not match {p}.{puny}",
    )
    expect(not engine.allows_egress({"deny_out": [written]}, puny, None), f"deny_out {written!r} missed {puny!r}")
    out = engine.apply_update(None, {"network": {"allow_out": [written, "*." + written]}}, resolve_all)
    want = [puny, "*." + puny]
    expect(out is not None and out.get("allow_out") == want, f"normalised allow_out is {out!r}, expected {want}")


def check_idna(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that non-ASCII names are IDNA-encoded and match their punycode spelling both ways."""
    cases = st.tuples(_unicode_domains, ascii_labels, st.booleans())
    return run_property("idna", cases, _idna, engine, max_examples, derandomize, shrink)


@st.composite
def _normalisation_cases(draw: st.DrawFn) -> tuple[Network, str | None, str | None]:
    network = draw(decorated_networks())
    host, ip = draw(destinations(network))
    return network, host, ip


def _normalisation(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None]) -> None:
    network, host, ip = case
    want = REFERENCE.apply_update(None, {"network": network}, resolve_all)
    got = engine.apply_update(None, {"network": network}, resolve_all)
    expect(got == want, f"normalised to {got!r}, the reference gives {want!r}")
    again = engine.apply_update(None, {"network": got}, resolve_all)
    expect(again == got, f"normalising {got!r} again gave {again!r}")
    expect(
        engine.allows_egress(network, host, ip) == engine.allows_egress(got, host, ip),
        "the normalised policy decides differently from the original",
    )


def check_normalisation(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check normalisation (case, dots, spaces, ports, duplicates) against the reference, and its round trip."""
    return run_property(
        "normalisation", _normalisation_cases(), _normalisation, engine, max_examples, derandomize, shrink
    )


def _validation(engine: TensorLakeEngine, raw: object) -> None:
    want = raises(lambda: REFERENCE.validate(raw))  # type: ignore[arg-type]
    got = raises(lambda: engine.validate(raw))  # type: ignore[arg-type]
    verdict = {True: "rejected", False: "accepted"}
    expect(got == want, f"the engine {verdict[got]} it, the reference {verdict[want]} it")


def check_validation_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that the engine rejects exactly the policies the reference rejects."""
    return run_property("validation_agrees", raw_networks(), _validation, engine, max_examples, derandomize, shrink)


@st.composite
def _currents(draw: st.DrawFn) -> Network | None:
    """A current policy in normalised form with a non-empty allow_out, or (one time in four) None."""
    if draw(small_ints) % 4 == 0:
        return None
    network = {**draw(networks(min_allow=1)), "allow_internet_access": draw(st.booleans())}
    return REFERENCE.apply_update(None, {"network": network}, resolve_all)


@st.composite
def _patch_cases(draw: st.DrawFn) -> tuple[Network | None, dict[str, Any], str]:
    current = draw(_currents())
    kind = draw(st.sampled_from(("absent", "null", "object")))
    body: dict[str, Any] = {}
    if draw(st.booleans()):
        body["name"] = "renamed"
    if draw(st.booleans()):
        body["exposed_ports"] = [8080]
    if kind == "null":
        body["network"] = None
    elif kind == "object":
        network = draw(networks())
        drop = draw(st.sets(st.sampled_from(KEYS)))
        body["network"] = {key: value for key, value in network.items() if key not in drop}
    return current, body, kind


def _patch(engine: TensorLakeEngine, case: tuple[Network | None, dict[str, Any], str]) -> None:
    current, body, kind = case
    want = REFERENCE.apply_update(current, body, resolve_all)
    got = engine.apply_update(current, body, resolve_all)
    if kind == "absent":
        expect(got == current, f"no network key, but the policy became {got!r}")
    elif kind == "null":
        expect(got is None, f"network null, but the policy is {got!r}")
    expect(got == want, f"apply_update returned {got!r}, the reference gives {want!r}")


def check_patch_tristate(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check the PATCH tri-state: absent keeps, null clears, an object replaces with defaults."""
    return run_property("patch_tristate", _patch_cases(), _patch, engine, max_examples, derandomize, shrink)


@st.composite
def _unresolvable_cases(draw: st.DrawFn) -> tuple[Network | None, Network, str]:
    network = draw(networks())
    name = draw(domains(unicode=False))
    network = with_entry(network, draw(st.sampled_from(("allow_out", "deny_out"))), name)
    return draw(_currents()), network, name


def _unresolvable(engine: TensorLakeEngine, case: tuple[Network | None, Network, str]) -> None:
    current, network, name = case
    snapshot = repr(current)
    asked: list[str] = []

    def resolve(host: str) -> list[str]:
        asked.append(host)
        return [] if host == name else list(RESOLVED)

    rejected = raises(lambda: engine.apply_update(current, {"network": network}, resolve))
    expect(rejected, f"{name!r} does not resolve but the update was accepted")
    expect(repr(current) == snapshot, "a rejected update modified the current policy")
    allow, deny = canonical(network)
    no_names = {
        "allow_internet_access": network.get("allow_internet_access", True),
        "allow_out": list(dict.fromkeys([e for e in allow if e.startswith("*.") or is_address(e)] + ["*." + name])),
        "deny_out": [e for e in deny if is_address(e)],
    }
    asked.clear()
    got = engine.apply_update(current, {"network": no_names}, resolve_none)
    expect(got == no_names, f"a policy without hostnames was not applied as is: {got!r}")
    expect(not any(a.startswith("*") for a in asked), f"wildcards were sent to the resolver: {asked}")


def check_unresolvable_rejected(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that an unresolvable hostname rejects the update and that wildcards are never resolved."""
    return run_property(
        "unresolvable_rejected", _unresolvable_cases(), _unresolvable, engine, max_examples, derandomize, shrink
    )


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
        expect(engine.allows_dns(allow, ip), f"allow_out {cidr} did not let DNS reach resolver {ip}")
        expect(not engine.allows_dns(deny, ip), f"deny_out {cidr} did not block DNS to resolver {ip}")
    for ip in outside:
        expect(not engine.allows_egress(allow, None, ip), f"allow_out {cidr} covered {ip}")
        expect(engine.allows_egress(deny, None, ip), f"deny_out {cidr} covered {ip}")
        expect(engine.allows_dns(allow, ip) == internet, f"allow_out {cidr} changed DNS to resolver {ip}")


def check_cidr_bounds(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that an IPv4/CIDR entry covers exactly its first to last address, for egress and DNS."""
    cases = st.tuples(cidrs, st.booleans())
    return run_property("cidr_bounds", cases, _cidr_bounds, engine, max_examples, derandomize, shrink)
