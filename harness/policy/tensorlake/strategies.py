"""Hypothesis strategies for TensorLake ``network`` policies and destinations aimed at their rules.

The generators favour collisions: hosts are built on top of the policy's own domains and addresses sit on
the edges of its CIDRs. ``REFERENCE`` (the reference engine) canonicalises policies where a generator
needs their entries in normal form.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar

from hypothesis import strategies as st

from contracts.tensorlake_adapter import reference_engine

__all__ = [
    "KEYS",
    "LABELS",
    "PREFIXES",
    "REFERENCE",
    "RESOLVED",
    "TLDS",
    "UNICODE_LABELS",
    "Destination",
    "Network",
    "aimed_entry",
    "allow_entries",
    "ascii_labels",
    "canonical",
    "cidrs",
    "decorate",
    "decorated_networks",
    "deny_entries",
    "destinations",
    "domains",
    "egress_cases",
    "ipv4s",
    "is_address",
    "near_addresses",
    "networks",
    "pick",
    "raw_networks",
    "recase",
    "resolve_all",
    "resolve_none",
    "resolver_cases",
    "small_ints",
    "with_entry",
]

Network = dict[str, Any]
Destination = tuple[str | None, str | None]
T = TypeVar("T")

REFERENCE = reference_engine

LABELS = ("a", "b", "api", "v1", "cdn", "example")
UNICODE_LABELS = ("bücher", "пример")
TLDS = ("com", "org", "io")
PREFIXES = (0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 30, 31, 32)
KEYS = ("allow_internet_access", "allow_out", "deny_out")
RESOLVED = ["192.0.2.10"]


def resolve_all(name: str) -> list[str]:
    """Resolve every name to one documentation address."""
    return list(RESOLVED)


def resolve_none(name: str) -> list[str]:
    """Resolve no name at all."""
    return []


def with_entry(network: Network, key: str, entry: str) -> Network:
    """Return a copy of ``network`` with ``entry`` appended to its ``key`` list."""
    return {**network, key: [*network.get(key, []), entry]}


_label = st.sampled_from(LABELS + UNICODE_LABELS)
ascii_labels = st.sampled_from(LABELS)
small_ints = st.integers(0, 255)
_ADDRESS_CHARS = frozenset("0123456789./")


@lru_cache
def domains(*, unicode: bool = True) -> st.SearchStrategy[str]:
    """Generate domains of 2-4 labels from a small vocabulary, so rules and hosts share suffixes."""
    return st.builds(
        lambda labels, tld: ".".join([*labels, tld]),
        st.lists(_label if unicode else ascii_labels, min_size=1, max_size=3),
        st.sampled_from(TLDS),
    )


_structured_ipv4_ints = st.builds(
    lambda a, b, c, d: (a << 24) | (b << 16) | (c << 8) | d,
    st.sampled_from((10, 192, 203)),
    st.sampled_from((0, 1, 128, 255)),
    st.sampled_from((0, 1, 128, 255)),
    st.sampled_from((0, 1, 9, 10, 127, 128, 254, 255)),
)
_ipv4_ints = st.one_of(_structured_ipv4_ints, _structured_ipv4_ints, _structured_ipv4_ints, st.integers(0, 2**32 - 1))
ipv4s = _ipv4_ints.map(lambda value: str(ipaddress.IPv4Address(value)))
cidrs = st.builds(
    lambda value, prefix: str(ipaddress.IPv4Network((value, prefix), strict=False)),
    _ipv4_ints,
    st.sampled_from(PREFIXES),
)


@lru_cache
def allow_entries(*, unicode: bool = True) -> st.SearchStrategy[str]:
    """Generate canonical-looking ``allow_out`` entries of every kind (ASCII names only unless ``unicode``)."""
    names = domains(unicode=unicode)
    return st.one_of(names, names.map(lambda d: "*." + d), ipv4s, cidrs)


@lru_cache
def deny_entries(*, unicode: bool = True) -> st.SearchStrategy[str]:
    """Generate ``deny_out`` entries (no wildcards)."""
    return st.one_of(domains(unicode=unicode), ipv4s, cidrs)


@lru_cache
def networks(*, min_allow: int = 0, unicode: bool = True) -> st.SearchStrategy[Network]:
    """Generate valid ``network`` objects, sometimes omitting keys, often with overlapping entries.

    With ``unicode=False`` every name is lowercase ASCII: the forms the networking docs define, so a check
    drawing from it needs no choice of sandproof's (IDNA, case) to be decided.
    """
    allow = st.lists(allow_entries(unicode=unicode), min_size=min_allow, max_size=5)
    optional: dict[str, st.SearchStrategy[Any]] = {
        "allow_internet_access": st.booleans(),
        "deny_out": st.lists(deny_entries(unicode=unicode), max_size=3),
    }
    if min_allow:
        base = st.fixed_dictionaries({"allow_out": allow}, optional=optional)
    else:
        base = st.fixed_dictionaries({}, optional={**optional, "allow_out": allow})
    return base.flatmap(_overlapping)


@st.composite
def _overlapping(draw: st.DrawFn, network: Network) -> Network:
    """Add up to two entries overlapping existing ones: super/subnets, parent wildcards, child names."""
    network = dict(network)
    for _ in range(draw(small_ints) % 3):
        entries = [*network.get("allow_out", []), *network.get("deny_out", [])]
        if not entries:
            break
        entry = pick(draw, entries)
        if is_address(entry):
            start = int(ipaddress.IPv4Network(entry).network_address)
            related = str(ipaddress.IPv4Network((start, draw(st.sampled_from(PREFIXES))), strict=False))
        else:
            base = entry.removeprefix("*.")
            parent = base.partition(".")[2] if base.count(".") > 1 else base
            related = pick(draw, ("*." + base, "*." + parent, parent, f"{draw(ascii_labels)}.{base}"))
        key = "allow_out" if related.startswith("*.") or draw(st.booleans()) else "deny_out"
        network[key] = [*network.get(key, []), related]
    return network


def canonical(network: Network) -> tuple[list[str], list[str]]:
    """Return the reference's normalised ``allow_out`` and ``deny_out`` of a valid network."""
    config = REFERENCE.config(network)
    assert config is not None
    return list(config.allow_out), list(config.deny_out)


def is_address(entry: str) -> bool:
    """Tell whether an entry is an IPv4 address or CIDR rather than a domain."""
    return set(entry) <= _ADDRESS_CHARS


def near_addresses(entry: str) -> list[str]:
    """Addresses on both sides of each edge of an IPv4/CIDR entry, plus its middle."""
    if not is_address(entry):
        return []
    net = ipaddress.IPv4Network(entry)
    first, last = int(net.network_address), int(net.broadcast_address)
    edges = (first - 1, first, (first + last) // 2, last, last + 1)
    return [str(ipaddress.IPv4Address(v % 2**32)) for v in edges]


def recase(text: str, mask: int) -> str:
    """Upper-case the letters whose position is set in ``mask``."""
    return "".join(c.upper() if mask >> (i % 60) & 1 else c for i, c in enumerate(text))


def pick(draw: st.DrawFn, items: Sequence[T]) -> T:
    """Draw one of ``items``."""
    return items[draw(small_ints) % len(items)]


@st.composite
def destinations(draw: st.DrawFn, network: Network, *, plain: bool = False) -> Destination:
    """Generate a (host, ip) destination that often hits the edges of ``network``'s rules.

    With ``plain`` hosts are lowercase ASCII and never re-cased.
    """
    allow, deny = canonical(network)
    wild = [e[2:] for e in allow if e.startswith("*.")]
    exact = [e for e in allow + deny if not e.startswith("*.") and not is_address(e)]
    near = [ip for entry in allow + deny for ip in near_addresses(entry)]
    host: str | None = None
    how = draw(small_ints) % 10
    if how == 2 or (how > 2 and not wild and not exact):
        host = draw(domains(unicode=not plain))
    elif how > 2:
        host = pick(draw, wild if wild and (how % 2 or not exact) else exact)
        shape = draw(small_ints) % 4
        if shape == 1:
            host = f"{draw(ascii_labels)}.{host}"
        elif shape == 2:
            host = f"{draw(ascii_labels)}.{draw(ascii_labels)}.{host}"
        elif shape == 3:
            host = host.partition(".")[2] or host
    if host is not None and not plain and draw(st.booleans()):
        host = recase(host, draw(st.integers(0, 2**60)))
    ip: str | None = None
    how = draw(small_ints) % 5
    if near and (how > 1 or (host is None and how == 0)):
        ip = pick(draw, near)
    elif how == 1 or host is None:
        ip = draw(ipv4s)
    return host, ip


@st.composite
def egress_cases(draw: st.DrawFn, min_allow: int = 0, plain: bool = False) -> tuple[Network, str | None, str | None]:
    """Generate a network together with a destination aimed at its rules (lowercase ASCII with ``plain``)."""
    network = draw(networks(min_allow=min_allow, unicode=not plain))
    host, ip = draw(destinations(network, plain=plain))
    return network, host, ip


@st.composite
def resolver_cases(draw: st.DrawFn, plain: bool = False) -> tuple[Network, str]:
    """Generate a network and a resolver address, often on the edge of one of its rules."""
    network = draw(networks(unicode=not plain))
    if draw(st.booleans()):
        network = {**network, "allow_internet_access": draw(st.booleans())}
    allow, deny = canonical(network)
    near = [ip for entry in allow + deny for ip in near_addresses(entry)]
    use_near = draw(st.booleans())
    if near and use_near:
        return network, pick(draw, near)
    return network, draw(ipv4s)


def aimed_entry(draw: st.DrawFn, host: str | None, ip: str | None, *, wildcard: bool) -> str:
    """Draw an entry aimed at a destination: its name, a wildcard above it, its address, a CIDR around it."""
    options: list[str] = []
    if host is not None:
        name = host.lower()
        options.append(name)
        parent = name.partition(".")[2]
        if wildcard and "." in parent:
            options.append("*." + parent)
    if ip is not None:
        options.append(ip)
        prefix = draw(st.sampled_from(PREFIXES))
        options.append(str(ipaddress.IPv4Network((int(ipaddress.IPv4Address(ip)), prefix), strict=False)))
    return pick(draw, options)


_TRICKY = (
    "",
    "   ",
    "*",
    "*.",
    "a.*.com",
    "*example.com",
    "**.example.com",
    "*.*.example.com",
    "::1",
    "2001:db8::/32",
    "[::1]",
    "fe80::1%eth0",
    "10.0.0.1/8",
    "10.0.0.0/33",
    "10.0.0.0/",
    "10.0.0.0/-1",
    "256.0.0.1",
    "1.2.3",
    "01.2.3.4",
    "1.2.3.4.5",
    "exa mple.com",
    "-bad.com",
    "bad-.com",
    "a..b.com",
    ".example.com",
    "example.com..",
    "example.com:0",
    "example.com:70000",
    "example.com:",
    "x" * 64 + ".com",
    "Example.COM.",
    " api.example.com ",
    "api.example.com:443",
    "10.0.0.0/32",
    "bücher.example",
)


@st.composite
def raw_networks(draw: st.DrawFn) -> object:
    """Generate ``network`` values that are valid or have exactly one defect (entry, type or key)."""
    network: dict[str, Any] = dict(draw(networks()))
    how = draw(small_ints) % 6
    if how == 0:
        return draw(st.sampled_from([None, [], "network", 3]))
    if how in (1, 2):
        key = draw(st.sampled_from(("allow_out", "deny_out")))
        entries = list(network.get(key, []))
        entries.insert(draw(small_ints) % (len(entries) + 1), draw(st.sampled_from(_TRICKY)))
        network[key] = entries
    elif how == 3:
        network["deny_out"] = [*network.get("deny_out", []), "*." + draw(domains())]
    elif how == 4:
        key = draw(st.sampled_from(KEYS))
        network[key] = draw(st.sampled_from([None, 0, 1, "true", "example.com", {}, [5], [None], [["x"]]]))
    elif draw(st.booleans()):
        network[draw(st.sampled_from(("allowOut", "bogus", "network")))] = []
    return network


def decorate(entry: str, how: str) -> str:
    """Write an entry un-canonically: ``upper`` case, trailing ``dot``, ``space`` around it or a ``port``."""
    address = is_address(entry)
    if how == "upper" and not address:
        return recase(entry, 0x2AAAAAAAAAAAAAA)
    if how == "dot" and not address:
        return entry + "."
    if how == "space":
        return f"  {entry} "
    if how == "port" and "/" not in entry:
        return entry + ":443"
    return entry


@st.composite
def decorated_networks(draw: st.DrawFn) -> Network:
    """Generate valid networks written un-canonically: mixed case, dots, spaces, ports, duplicates."""
    network = draw(networks())
    hows = st.sampled_from(("", "upper", "dot", "space", "port"))
    for key in ("allow_out", "deny_out"):
        if key in network:
            entries = [decorate(e, draw(hows)) for e in network[key]]
            duplicate = draw(st.booleans())
            if entries and duplicate:
                entries.append(decorate(draw(st.sampled_from(network[key])), draw(hows)))
            network[key] = entries
    return network
