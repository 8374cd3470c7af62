"""Engine-generic property checks for TensorLake egress engines, with the reference engine as the oracle.

An engine is any object following ``contracts.tensorlake_adapter.TensorLakeEngine`` (plain JSON values in
and out). Every ``check_*`` function takes an engine and returns a ``CheckResult``; ``run_checks`` runs them
all (or a chosen subset) and returns one result per check::

    from harness.policy_tensorlake import run_checks
    failures = [r for r in run_checks(my_engine) if not r.passed]

Fixed-example checks come first (the networking docs' table and examples), then Hypothesis properties that
are either stated directly (deny precedence, monotonicity, wildcard/apex, case, IDNA) or differential
against the reference (decisions, normalisation, validation, PATCH). The generators favour collisions:
hosts are built on top of the policy's own domains and addresses sit on the edges of its CIDRs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import idna
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st

from contracts.tensorlake_adapter import TensorLakeEngine, reference_engine

__all__ = [
    "CHECKS",
    "EXAMPLE_CHECKS",
    "PROPERTY_CHECKS",
    "CheckFailed",
    "CheckResult",
    "allow_entries",
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
    "check_seed_examples",
    "check_seed_table",
    "check_unresolvable_rejected",
    "check_validation_agrees",
    "check_wildcard_apex",
    "cidrs",
    "decorated_networks",
    "deny_entries",
    "destinations",
    "domains",
    "egress_cases",
    "ipv4s",
    "networks",
    "raw_networks",
    "resolve_all",
    "resolve_none",
    "resolver_cases",
    "run_checks",
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


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: its name, whether it passed, and the (shrunk) failing input if not."""

    name: str
    passed: bool
    counterexample: str | None = None
    message: str | None = None


class CheckFailed(AssertionError):
    """An engine answered differently from what a check requires."""


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def resolve_all(name: str) -> list[str]:
    """Resolve every name to one documentation address."""
    return list(RESOLVED)


def resolve_none(name: str) -> list[str]:
    """Resolve no name at all."""
    return []


# --- strategies -------------------------------------------------------------------------------------------

_label = st.sampled_from(LABELS + UNICODE_LABELS)
_ascii_label = st.sampled_from(LABELS)
_index = st.integers(0, 255)
_ADDRESS_CHARS = frozenset("0123456789./")


@lru_cache
def domains(*, unicode: bool = True) -> st.SearchStrategy[str]:
    """Generate domains of 2-4 labels from a small vocabulary, so rules and hosts share suffixes."""
    return st.builds(
        lambda labels, tld: ".".join([*labels, tld]),
        st.lists(_label if unicode else _ascii_label, min_size=1, max_size=3),
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
def allow_entries() -> st.SearchStrategy[str]:
    """Generate canonical-looking ``allow_out`` entries of every kind."""
    return st.one_of(domains(), domains().map(lambda d: "*." + d), ipv4s, cidrs)


@lru_cache
def deny_entries() -> st.SearchStrategy[str]:
    """Generate ``deny_out`` entries (no wildcards)."""
    return st.one_of(domains(), ipv4s, cidrs)


@lru_cache
def networks(*, min_allow: int = 0) -> st.SearchStrategy[Network]:
    """Generate valid ``network`` objects, sometimes omitting keys, often with overlapping entries."""
    allow = st.lists(allow_entries(), min_size=min_allow, max_size=5)
    optional: dict[str, st.SearchStrategy[Any]] = {
        "allow_internet_access": st.booleans(),
        "deny_out": st.lists(deny_entries(), max_size=3),
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
    for _ in range(draw(_index) % 3):
        entries = [*network.get("allow_out", []), *network.get("deny_out", [])]
        if not entries:
            break
        entry = _pick(draw, entries)
        if _is_address(entry):
            start = int(ipaddress.IPv4Network(entry).network_address)
            related = str(ipaddress.IPv4Network((start, draw(st.sampled_from(PREFIXES))), strict=False))
        else:
            base = entry.removeprefix("*.")
            parent = base.partition(".")[2] if base.count(".") > 1 else base
            related = _pick(draw, ("*." + base, "*." + parent, parent, f"{draw(_ascii_label)}.{base}"))
        key = "allow_out" if related.startswith("*.") or draw(st.booleans()) else "deny_out"
        network[key] = [*network.get(key, []), related]
    return network


def _canonical(network: Network) -> tuple[list[str], list[str]]:
    config = REFERENCE.config(network)
    assert config is not None
    return list(config.allow_out), list(config.deny_out)


def _is_address(entry: str) -> bool:
    return set(entry) <= _ADDRESS_CHARS


def _near(entry: str) -> list[str]:
    """Addresses on both sides of each edge of an IPv4/CIDR entry, plus its middle."""
    if not _is_address(entry):
        return []
    net = ipaddress.IPv4Network(entry)
    first, last = int(net.network_address), int(net.broadcast_address)
    edges = (first - 1, first, (first + last) // 2, last, last + 1)
    return [str(ipaddress.IPv4Address(v % 2**32)) for v in edges]


def _recase(text: str, mask: int) -> str:
    return "".join(c.upper() if mask >> (i % 60) & 1 else c for i, c in enumerate(text))


def _pick(draw: st.DrawFn, items: Sequence[T]) -> T:
    return items[draw(_index) % len(items)]


@st.composite
def destinations(draw: st.DrawFn, network: Network) -> Destination:
    """Generate a (host, ip) destination that often hits the edges of ``network``'s rules."""
    allow, deny = _canonical(network)
    wild = [e[2:] for e in allow if e.startswith("*.")]
    exact = [e for e in allow + deny if not e.startswith("*.") and not _is_address(e)]
    near = [ip for entry in allow + deny for ip in _near(entry)]
    host: str | None = None
    how = draw(_index) % 10
    if how == 2 or (how > 2 and not wild and not exact):
        host = draw(domains())
    elif how > 2:
        host = _pick(draw, wild if wild and (how % 2 or not exact) else exact)
        shape = draw(_index) % 4
        if shape == 1:
            host = f"{draw(_ascii_label)}.{host}"
        elif shape == 2:
            host = f"{draw(_ascii_label)}.{draw(_ascii_label)}.{host}"
        elif shape == 3:
            host = host.partition(".")[2] or host
    if host is not None and draw(st.booleans()):
        host = _recase(host, draw(st.integers(0, 2**60)))
    ip: str | None = None
    how = draw(_index) % 5
    if near and (how > 1 or (host is None and how == 0)):
        ip = _pick(draw, near)
    elif how == 1 or host is None:
        ip = draw(ipv4s)
    return host, ip


@st.composite
def egress_cases(draw: st.DrawFn, min_allow: int = 0) -> tuple[Network, str | None, str | None]:
    """Generate a network together with a destination aimed at its rules."""
    network = draw(networks(min_allow=min_allow))
    host, ip = draw(destinations(network))
    return network, host, ip


@st.composite
def resolver_cases(draw: st.DrawFn) -> tuple[Network, str]:
    """Generate a network and a resolver address, often on the edge of one of its rules."""
    network = draw(networks())
    if draw(st.booleans()):
        network = {**network, "allow_internet_access": draw(st.booleans())}
    allow, deny = _canonical(network)
    near = [ip for entry in allow + deny for ip in _near(entry)]
    use_near = draw(st.booleans())
    if near and use_near:
        return network, _pick(draw, near)
    return network, draw(ipv4s)


def _aimed_entry(draw: st.DrawFn, host: str | None, ip: str | None, *, wildcard: bool) -> str:
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
    return _pick(draw, options)


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
    how = draw(_index) % 6
    if how == 0:
        return draw(st.sampled_from([None, [], "network", 3]))
    if how in (1, 2):
        key = draw(st.sampled_from(("allow_out", "deny_out")))
        entries = list(network.get(key, []))
        entries.insert(draw(_index) % (len(entries) + 1), draw(st.sampled_from(_TRICKY)))
        network[key] = entries
    elif how == 3:
        network["deny_out"] = [*network.get("deny_out", []), "*." + draw(domains())]
    elif how == 4:
        key = draw(st.sampled_from(KEYS))
        network[key] = draw(st.sampled_from([None, 0, 1, "true", "example.com", {}, [5], [None], [["x"]]]))
    elif draw(st.booleans()):
        network[draw(st.sampled_from(("allowOut", "bogus", "network")))] = []
    return network


def _decorate(entry: str, how: str) -> str:
    is_address = _is_address(entry)
    if how == "upper" and not is_address:
        return _recase(entry, 0x2AAAAAAAAAAAAAA)
    if how == "dot" and not is_address:
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
            entries = [_decorate(e, draw(hows)) for e in network[key]]
            duplicate = draw(st.booleans())
            if entries and duplicate:
                entries.append(_decorate(draw(st.sampled_from(network[key])), draw(hows)))
            network[key] = entries
    return network


# --- running ----------------------------------------------------------------------------------------------

_SUPPRESSED = [
    HealthCheck.too_slow,
    HealthCheck.filter_too_much,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
    HealthCheck.nested_given,
]


def _property(
    name: str,
    strategy: st.SearchStrategy[T],
    body: Callable[[TensorLakeEngine, T], None],
    engine: TensorLakeEngine,
    max_examples: int,
    derandomize: bool,
    shrink: bool,
) -> CheckResult:
    failure: list[str] = []

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=_SUPPRESSED,
        verbosity=Verbosity.quiet,
        print_blob=False,
        phases=(Phase.explicit, Phase.generate, Phase.shrink) if shrink else (Phase.explicit, Phase.generate),
    )
    @given(strategy)
    def run(case: T) -> None:
        try:
            body(engine, case)
        except Exception as exc:
            failure[:] = [repr(case), f"{type(exc).__name__}: {exc}"]
            raise

    try:
        run()
    except Exception as exc:
        if failure:
            return CheckResult(name, False, failure[0], failure[1])
        return CheckResult(name, False, None, f"{type(exc).__name__}: {exc}")
    return CheckResult(name, True)


def _examples(name: str, engine: TensorLakeEngine, body: Callable[[TensorLakeEngine], None]) -> CheckResult:
    try:
        body(engine)
    except Exception as exc:
        return CheckResult(name, False, getattr(exc, "example", None), f"{type(exc).__name__}: {exc}")
    return CheckResult(name, True)


class _ExampleFailed(CheckFailed):
    def __init__(self, example: str, message: str) -> None:
        super().__init__(f"{message} [{example}]")
        self.example = example


def _egress(engine: TensorLakeEngine, network: Network | None, host: str | None, ip: str | None, want: bool) -> None:
    got = engine.allows_egress(network, host, ip)
    if got is not want:
        example = f"network={network!r} host={host!r} ip={ip!r}"
        raise _ExampleFailed(example, f"allows_egress returned {got}, expected {want}")


def _dns(engine: TensorLakeEngine, network: Network | None, resolver: str, want: bool) -> None:
    got = engine.allows_dns(network, resolver)
    if got is not want:
        raise _ExampleFailed(
            f"network={network!r} resolver={resolver!r}", f"allows_dns returned {got}, expected {want}"
        )


def _with(network: Network, key: str, entry: str) -> Network:
    return {**network, key: [*network.get(key, []), entry]}


def _raises(call: Callable[[], object]) -> bool:
    try:
        call()
    except ValueError:
        return True
    return False


# --- fixed examples from the networking docs ----------------------------------------------------------------

_WEB = "93.184.215.14"


def _seed_table(e: TensorLakeEngine) -> None:
    rows: Sequence[Network] = (
        {"allow_internet_access": True, "allow_out": [], "deny_out": []},
        {"allow_internet_access": True, "allow_out": ["api.example.com", "10.0.0.0/8"]},
        {"allow_internet_access": False, "allow_out": ["api.example.com", "10.0.0.0/8"]},
        {"allow_internet_access": False, "allow_out": [], "deny_out": []},
    )
    open_row, allow_true, allow_false, closed = rows
    _egress(e, open_row, "example.com", _WEB, True)
    _egress(e, open_row, None, "8.8.8.8", True)
    _dns(e, open_row, "8.8.8.8", True)
    for row in (allow_true, allow_false):
        _egress(e, row, "api.example.com", _WEB, True)
        _egress(e, row, None, "10.1.2.3", True)
        _egress(e, row, "other.org", _WEB, False)
        _egress(e, row, None, "8.8.8.8", False)
        _egress(e, row, "example.com", _WEB, False)
    _dns(e, allow_true, "8.8.8.8", True)
    _dns(e, allow_false, "8.8.8.8", False)
    _dns(e, allow_false, "10.0.0.2", True)
    listed = {"allow_internet_access": False, "allow_out": ["api.example.com", "8.8.8.8"]}
    _dns(e, listed, "8.8.8.8", True)
    _dns(e, listed, "1.1.1.1", False)
    for row in (closed, {"allow_internet_access": False}, {"allow_internet_access": False, "deny_out": ["x.org"]}):
        _egress(e, row, "example.com", _WEB, False)
        _egress(e, row, None, "10.1.2.3", False)
        _dns(e, row, "8.8.8.8", False)
        _dns(e, row, "10.0.0.2", False)


_INVALID = (
    {"allow_out": ["2001:db8::1"]},
    {"allow_out": ["10.0.0.0/33"]},
    {"allow_out": ["10.0.0.1/8"]},
    {"allow_out": ["999.1.1.1"]},
    {"allow_out": ["api.*.example.com"]},
    {"allow_out": ["*"]},
    {"allow_out": [""]},
    {"allow_out": [7]},
    {"deny_out": ["*.example.com"]},
    {"allow_out": ["example.com"], "deny": []},
    {"allow_out": "example.com"},
    {"allow_internet_access": "false"},
)


def _seed_examples(e: TensorLakeEngine) -> None:
    for bad in _INVALID:
        if not _raises(lambda bad=bad: e.validate(bad)):  # type: ignore[misc]
            raise _ExampleFailed(f"network={bad!r}", "validate accepted an invalid policy")
    _egress(e, {"allow_out": ["Example.COM."]}, "EXAMPLE.com", None, True)
    _egress(e, {"allow_out": ["*.Example.com"]}, "Api.EXAMPLE.com", None, True)
    _egress(e, {"allow_out": ["bücher.example"]}, "xn--bcher-kva.example", None, True)
    _egress(e, {"allow_out": ["xn--bcher-kva.example"]}, "BÜCHER.example", None, True)
    wild = {"allow_out": ["*.example.com"]}
    _egress(e, wild, "api.example.com", None, True)
    _egress(e, wild, "v1.api.example.com", None, True)
    _egress(e, wild, "example.com", None, False)
    docs = {"allow_internet_access": True, "allow_out": ["example.com", "*.example.com", "203.0.113.10", "10.0.0.0/8"]}
    _egress(e, docs, "example.com", _WEB, True)
    _egress(e, docs, "api.example.com", _WEB, True)
    _egress(e, docs, None, "203.0.113.10", True)
    _egress(e, docs, None, "203.0.113.11", False)
    _egress(e, docs, None, "10.255.255.255", True)
    _egress(e, docs, None, "11.0.0.0", False)
    _egress(e, docs, None, "9.255.255.255", False)
    _egress(e, docs, "example.org", _WEB, False)
    _dns(e, docs, "8.8.8.8", True)
    deny = {"deny_out": ["example.com"]}
    _egress(e, deny, "example.com", _WEB, False)
    _egress(e, deny, "api.openai.com", "162.159.140.245", True)
    _egress(e, {"allow_out": ["example.com"], "deny_out": ["example.com"]}, "example.com", _WEB, False)
    _egress(e, None, "example.com", _WEB, True)
    _dns(e, None, "8.8.8.8", True)
    resolver_denied = {"allow_internet_access": False, "allow_out": ["10.0.0.0/8"], "deny_out": ["10.0.0.2"]}
    _dns(e, resolver_denied, "10.0.0.2", False)
    _dns(e, resolver_denied, "10.0.0.3", True)
    current = {"allow_internet_access": True, "allow_out": ["api.example.com"], "deny_out": []}
    full = {"allow_internet_access": True, "allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}
    no_names = {"allow_internet_access": True, "allow_out": ["*.example.com", "10.0.0.0/8"], "deny_out": []}
    patches: Sequence[tuple[Network | None, Network, Callable[[str], list[str]], Network | None]] = (
        (current, {"name": "renamed"}, resolve_all, current),
        (current, {"network": None}, resolve_all, None),
        ({**full, "allow_internet_access": False}, {"network": {}}, resolve_all, {**no_names, "allow_out": []}),
        (
            None,
            {"network": {"allow_internet_access": False}},
            resolve_all,
            {**no_names, "allow_internet_access": False, "allow_out": []},
        ),
        (current, {"network": {"allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}}, resolve_all, full),
        (None, {"network": {"allow_out": ["*.example.com", "10.0.0.0/8"]}}, resolve_none, no_names),
    )
    for before, body, resolve, after in patches:
        got = e.apply_update(before, body, resolve)
        if got != after:
            raise _ExampleFailed(
                f"current={before!r} body={body!r}", f"apply_update returned {got!r}, expected {after!r}"
            )
    if not _raises(lambda: e.apply_update(current, {"network": {"allow_out": ["nx.invalid"]}}, resolve_none)):
        raise _ExampleFailed("allow_out=['nx.invalid'] with a failing resolver", "the update was not rejected")


def check_seed_table(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check the docs' four-row allow_internet_access x allow_out table, DNS column included."""
    return _examples("seed_table", engine, _seed_table)


def check_seed_examples(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check the docs' examples: wildcard and apex, deny over allow, no policy, the PATCH tri-state."""
    return _examples("seed_examples", engine, _seed_examples)


# --- properties -------------------------------------------------------------------------------------------


def _egress_agrees(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None]) -> None:
    network, host, ip = case
    want = REFERENCE.allows_egress(network, host, ip)
    got = engine.allows_egress(network, host, ip)
    _expect(got == want, f"allows_egress returned {got}, the reference says {want}")


def check_egress_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check egress decisions against the reference on policies and destinations aimed at each other."""
    return _property("egress_agrees", egress_cases(), _egress_agrees, engine, max_examples, derandomize, shrink)


def _dns_agrees(engine: TensorLakeEngine, case: tuple[Network, str]) -> None:
    network, resolver = case
    want = REFERENCE.allows_dns(network, resolver)
    got = engine.allows_dns(network, resolver)
    _expect(got == want, f"allows_dns returned {got}, the reference says {want}")


def check_dns_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check DNS decisions against the reference, resolvers placed on the edges of the policy's CIDRs."""
    return _property("dns_agrees", resolver_cases(), _dns_agrees, engine, max_examples, derandomize, shrink)


@st.composite
def _aimed_cases(
    draw: st.DrawFn, *, min_allow: int = 0, wildcard: bool = False, aimed_only: bool = False
) -> tuple[Network, str | None, str | None, str]:
    network, host, ip = draw(egress_cases(min_allow))
    if aimed_only or draw(_index) % 3:
        entry = _aimed_entry(draw, host, ip, wildcard=wildcard)
    else:
        entry = draw(allow_entries() if wildcard else deny_entries())
    return network, host, ip, entry


def _deny_precedence(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    both = _with(_with(network, "allow_out", entry), "deny_out", entry)
    _expect(not engine.allows_egress(both, host, ip), f"{entry!r} is in allow_out and deny_out but was allowed")
    if ip is not None and _is_address(entry):
        _expect(not engine.allows_dns(both, ip), f"resolver {ip} is covered by deny_out {entry!r} but DNS was allowed")


def check_deny_precedence(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that a destination matched by both allow_out and deny_out is blocked (DNS included)."""
    cases = _aimed_cases(aimed_only=True)
    return _property("deny_precedence", cases, _deny_precedence, engine, max_examples, derandomize, shrink)


def _deny_monotone(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    more = _with(network, "deny_out", entry)
    if engine.allows_egress(more, host, ip):
        _expect(engine.allows_egress(network, host, ip), f"adding deny_out {entry!r} allowed the destination")
    if ip is not None and engine.allows_dns(more, ip):
        _expect(engine.allows_dns(network, ip), f"adding deny_out {entry!r} allowed DNS to {ip}")


def check_deny_never_allows_more(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that adding a deny_out entry never allows a destination or resolver that was blocked."""
    return _property(
        "deny_never_allows_more", _aimed_cases(), _deny_monotone, engine, max_examples, derandomize, shrink
    )


def _allow_monotone(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None, str]) -> None:
    network, host, ip, entry = case
    more = _with(network, "allow_out", entry)
    if engine.allows_egress(network, host, ip):
        _expect(engine.allows_egress(more, host, ip), f"adding allow_out {entry!r} blocked the destination")
    if ip is not None and engine.allows_dns(network, ip):
        _expect(engine.allows_dns(more, ip), f"adding allow_out {entry!r} blocked DNS to {ip}")


def check_allow_never_allows_less(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that adding an entry to a non-empty allow_out never blocks what was allowed."""
    cases = _aimed_cases(min_allow=1, wildcard=True)
    return _property("allow_never_allows_less", cases, _allow_monotone, engine, max_examples, derandomize, shrink)


def _wildcard_apex(engine: TensorLakeEngine, case: tuple[str, str, str, bool, str | None]) -> None:
    domain, p, q, internet, ip = case
    network = {"allow_internet_access": internet, "allow_out": ["*." + domain]}
    _expect(engine.allows_egress(network, f"{p}.{domain}", ip), f"*.{domain} did not match {p}.{domain}")
    _expect(engine.allows_egress(network, f"{q}.{p}.{domain}", ip), f"*.{domain} did not match {q}.{p}.{domain}")
    _expect(not engine.allows_egress(network, domain, ip), f"*.{domain} matched the apex {domain}")
    with_apex = _with(network, "allow_out", domain)
    _expect(engine.allows_egress(with_apex, domain, ip), f"the apex entry {domain} did not match {domain}")


def check_wildcard_apex(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that *.d matches names any depth below d but never d itself."""
    cases = st.tuples(domains(), _ascii_label, _ascii_label, st.booleans(), st.one_of(st.none(), ipv4s))
    return _property("wildcard_apex", cases, _wildcard_apex, engine, max_examples, derandomize, shrink)


@st.composite
def _case_cases(draw: st.DrawFn) -> tuple[Network, str, str | None, int]:
    network, host, ip = draw(egress_cases())
    allow, deny = _canonical(network)
    wild = [e[2:] for e in allow if e.startswith("*.")]
    exact = [e for e in allow + deny if not e.startswith("*.") and not _is_address(e)]
    choice = draw(_index) % 4
    if choice < 3 and exact and (choice < 2 or not wild):
        host = _pick(draw, exact)
    elif choice < 3 and wild:
        host = f"{draw(_ascii_label)}.{_pick(draw, wild)}"
    if host is None:
        host = draw(domains())
    return network, host.lower(), ip, draw(st.integers(1, 2**60))


def _case_insensitive(engine: TensorLakeEngine, case: tuple[Network, str, str | None, int]) -> None:
    network, host, ip, mask = case
    base = engine.allows_egress(network, host, ip)
    shouted = _recase(host, mask)
    _expect(engine.allows_egress(network, shouted, ip) == base, f"{shouted!r} and {host!r} were judged differently")
    loud = {k: [_decorate(e, "upper") for e in v] if isinstance(v, list) else v for k, v in network.items()}
    _expect(engine.allows_egress(loud, host, ip) == base, "upper-casing the policy's domains changed the decision")


def check_case_insensitive(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that letter case in hosts and in domain entries never changes a decision."""
    return _property("case_insensitive", _case_cases(), _case_insensitive, engine, max_examples, derandomize, shrink)


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
    _expect(engine.allows_egress({"allow_out": [written]}, puny, None), f"{written!r} did not match {puny!r}")
    _expect(engine.allows_egress({"allow_out": [puny]}, written, None), f"{puny!r} did not match {written!r}")
    _expect(
        engine.allows_egress({"allow_out": ["*." + written]}, f"{p}.{puny}", None),
        f"*.{written} did not match {p}.{puny}",
    )
    _expect(not engine.allows_egress({"deny_out": [written]}, puny, None), f"deny_out {written!r} missed {puny!r}")
    out = engine.apply_update(None, {"network": {"allow_out": [written, "*." + written]}}, resolve_all)
    want = [puny, "*." + puny]
    _expect(out is not None and out.get("allow_out") == want, f"normalised allow_out is {out!r}, expected {want}")


def check_idna(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that non-ASCII names are IDNA-encoded and match their punycode spelling both ways."""
    cases = st.tuples(_unicode_domains, _ascii_label, st.booleans())
    return _property("idna", cases, _idna, engine, max_examples, derandomize, shrink)


@st.composite
def _normalisation_cases(draw: st.DrawFn) -> tuple[Network, str | None, str | None]:
    network = draw(decorated_networks())
    host, ip = draw(destinations(network))
    return network, host, ip


def _normalisation(engine: TensorLakeEngine, case: tuple[Network, str | None, str | None]) -> None:
    network, host, ip = case
    want = REFERENCE.apply_update(None, {"network": network}, resolve_all)
    got = engine.apply_update(None, {"network": network}, resolve_all)
    _expect(got == want, f"normalised to {got!r}, the reference gives {want!r}")
    again = engine.apply_update(None, {"network": got}, resolve_all)
    _expect(again == got, f"normalising {got!r} again gave {again!r}")
    _expect(
        engine.allows_egress(network, host, ip) == engine.allows_egress(got, host, ip),
        "the normalised policy decides differently from the original",
    )


def check_normalisation(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check normalisation (case, dots, spaces, ports, duplicates) against the reference, and its round trip."""
    return _property("normalisation", _normalisation_cases(), _normalisation, engine, max_examples, derandomize, shrink)


def _validation(engine: TensorLakeEngine, raw: object) -> None:
    want = _raises(lambda: REFERENCE.validate(raw))  # type: ignore[arg-type]
    got = _raises(lambda: engine.validate(raw))  # type: ignore[arg-type]
    verdict = {True: "rejected", False: "accepted"}
    _expect(got == want, f"the engine {verdict[got]} it, the reference {verdict[want]} it")


def check_validation_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that the engine rejects exactly the policies the reference rejects."""
    return _property("validation_agrees", raw_networks(), _validation, engine, max_examples, derandomize, shrink)


@st.composite
def _currents(draw: st.DrawFn) -> Network | None:
    """A current policy in normalised form with a non-empty allow_out, or (one time in four) None."""
    if draw(_index) % 4 == 0:
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
        _expect(got == current, f"no network key, but the policy became {got!r}")
    elif kind == "null":
        _expect(got is None, f"network null, but the policy is {got!r}")
    _expect(got == want, f"apply_update returned {got!r}, the reference gives {want!r}")


def check_patch_tristate(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check the PATCH tri-state: absent keeps, null clears, an object replaces with defaults."""
    return _property("patch_tristate", _patch_cases(), _patch, engine, max_examples, derandomize, shrink)


@st.composite
def _unresolvable_cases(draw: st.DrawFn) -> tuple[Network | None, Network, str]:
    network = draw(networks())
    name = draw(domains(unicode=False))
    network = _with(network, draw(st.sampled_from(("allow_out", "deny_out"))), name)
    return draw(_currents()), network, name


def _unresolvable(engine: TensorLakeEngine, case: tuple[Network | None, Network, str]) -> None:
    current, network, name = case
    snapshot = repr(current)
    asked: list[str] = []

    def resolve(host: str) -> list[str]:
        asked.append(host)
        return [] if host == name else list(RESOLVED)

    rejected = _raises(lambda: engine.apply_update(current, {"network": network}, resolve))
    _expect(rejected, f"{name!r} does not resolve but the update was accepted")
    _expect(repr(current) == snapshot, "a rejected update modified the current policy")
    allow, deny = _canonical(network)
    no_names = {
        "allow_internet_access": network.get("allow_internet_access", True),
        "allow_out": list(dict.fromkeys([e for e in allow if e.startswith("*.") or _is_address(e)] + ["*." + name])),
        "deny_out": [e for e in deny if _is_address(e)],
    }
    asked.clear()
    got = engine.apply_update(current, {"network": no_names}, resolve_none)
    _expect(got == no_names, f"a policy without hostnames was not applied as is: {got!r}")
    _expect(not any(a.startswith("*") for a in asked), f"wildcards were sent to the resolver: {asked}")


def check_unresolvable_rejected(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that an unresolvable hostname rejects the update and that wildcards are never resolved."""
    return _property(
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
        _expect(engine.allows_egress(allow, None, ip), f"allow_out {cidr} did not cover {ip}")
        _expect(not engine.allows_egress(deny, None, ip), f"deny_out {cidr} did not cover {ip}")
        _expect(engine.allows_dns(allow, ip), f"allow_out {cidr} did not let DNS reach resolver {ip}")
        _expect(not engine.allows_dns(deny, ip), f"deny_out {cidr} did not block DNS to resolver {ip}")
    for ip in outside:
        _expect(not engine.allows_egress(allow, None, ip), f"allow_out {cidr} covered {ip}")
        _expect(engine.allows_egress(deny, None, ip), f"deny_out {cidr} covered {ip}")
        _expect(engine.allows_dns(allow, ip) == internet, f"allow_out {cidr} changed DNS to resolver {ip}")


def check_cidr_bounds(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check that an IPv4/CIDR entry covers exactly its first to last address, for egress and DNS."""
    cases = st.tuples(cidrs, st.booleans())
    return _property("cidr_bounds", cases, _cidr_bounds, engine, max_examples, derandomize, shrink)


CHECKS: dict[str, Callable[..., CheckResult]] = {
    "seed_table": check_seed_table,
    "seed_examples": check_seed_examples,
    "wildcard_apex": check_wildcard_apex,
    "cidr_bounds": check_cidr_bounds,
    "egress_agrees": check_egress_agrees,
    "dns_agrees": check_dns_agrees,
    "patch_tristate": check_patch_tristate,
    "case_insensitive": check_case_insensitive,
    "idna": check_idna,
    "deny_precedence": check_deny_precedence,
    "validation_agrees": check_validation_agrees,
    "unresolvable_rejected": check_unresolvable_rejected,
    "normalisation": check_normalisation,
    "deny_never_allows_more": check_deny_never_allows_more,
    "allow_never_allows_less": check_allow_never_allows_less,
}
EXAMPLE_CHECKS = ("seed_table", "seed_examples")
PROPERTY_CHECKS = tuple(name for name in CHECKS if name not in EXAMPLE_CHECKS)


def run_checks(
    engine: TensorLakeEngine,
    *,
    max_examples: int = 60,
    derandomize: bool = True,
    only: Iterable[str] | None = None,
    fail_fast: bool = False,
    shrink: bool = True,
) -> list[CheckResult]:
    """Run the checks (all, or the names in ``only``, in that order) against ``engine``; one result each.

    ``derandomize`` makes runs repeatable; ``fail_fast`` stops at the first failing check; ``shrink=False``
    reports the first failing input found instead of a minimal one (faster).
    """
    names = list(CHECKS) if only is None else list(only)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise KeyError(f"unknown check(s): {', '.join(unknown)}")
    results: list[CheckResult] = []
    for name in names:
        result = CHECKS[name](engine, max_examples=max_examples, derandomize=derandomize, shrink=shrink)
        results.append(result)
        if fail_fast and not result.passed:
            break
    return results
