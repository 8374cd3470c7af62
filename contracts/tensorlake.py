"""Reference model of TensorLake sandbox egress: the ``network`` policy, decisions and the PATCH tri-state.

Sources: the networking docs (``harness/specs/seeds/tensorlake-networking.md``, authoritative on semantics) and
``docs/sources/reference/tensorlake-wire.md`` §5. Where they are silent the choice is marked *chosen*.

Policy shape: ``{"allow_internet_access": bool, "allow_out": [str], "deny_out": [str]}``, missing keys
defaulting to ``true``, ``[]``, ``[]``; ``None`` (no policy) leaves egress unrestricted.

Entries (``allow_out``, ``deny_out``):

* A domain, a leading-wildcard domain (``*.example.com``, ``allow_out`` only), an IPv4 address or an IPv4
  CIDR. IPv6, a ``*`` anywhere but a whole leading label, empty strings, malformed addresses and CIDRs
  (including host bits set, e.g. ``10.0.0.1/8``) and non-string entries are rejected, as are unknown keys.
* Domains are lowercased, one trailing dot is dropped and non-ASCII names are IDNA-encoded; ``a.b/32`` is
  written as the bare address. Duplicates after normalisation are removed, first occurrence kept.
* *Chosen:* surrounding whitespace is stripped. An optional ``:port`` suffix (1-65535) is accepted and
  dropped, because the SDK documents that it "is accepted but does not make the rule port-specific".

Decisions:

* ``deny_out`` wins over ``allow_out``. Hostname rules judge the name the client asked for (they follow DNS,
  so any address that name resolved to is covered); IPv4/CIDR rules judge the address connected to.
* ``*.example.com`` matches ``api.example.com`` and ``v1.api.example.com`` but never ``example.com``.
* The four-row table: ``allow_out`` empty -> ``allow_internet_access`` switches all egress on or off (and
  DNS with it); ``allow_out`` non-empty -> default-deny, only listed destinations are reachable, and
  ``allow_internet_access`` only decides whether DNS to the sandbox's resolvers is implicitly allowed
  (``true``) or allowed only when the resolver's IP is itself covered by an ``allow_out`` entry (``false``).
* *Chosen:* a ``deny_out`` IPv4/CIDR entry covering a resolver blocks DNS to it in every row, even when
  ``allow_out`` also covers it (the SDK's ``NetworkConfig`` docstring says deny precedence applies to the
  resolver too). Domain entries never affect DNS. ``decide_dns`` is about the sandbox's configured
  resolvers; DNS to any other server is ordinary egress to that address.

PATCH (``apply_network_update``): key absent keeps the policy, ``null`` clears it, an object replaces it
whole. Every exact hostname in ``allow_out`` and ``deny_out`` must resolve or the update is rejected with
``unresolvable_host`` and nothing changes. *Chosen:* wildcard entries are not resolved: a wildcard names no
single host, and the enforcement follows the DNS answers of matching names as they are looked up.

Decisions use per-config indexes (domain suffix dicts and per-prefix-length CIDR dicts, see ``_domains`` and
``_cidr``) built once and cached on the config; ``contracts._naive`` holds the linear scan that checks them.
A long list that is already canonical (as ``to_json`` writes it) is checked as a whole and indexed in the same
pass (``_bulk``); any other list takes ``classify_entry`` entry by entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contracts._cidr import CidrIndex, is_ipv4_shaped, parse_ipv4, parse_ipv4_network
from contracts._domains import DomainIndex, normalize_domain, normalize_query_host
from contracts.errors import PolicyError

__all__ = [
    "CODES",
    "Decision",
    "EntryKind",
    "NetworkConfig",
    "PolicyError",
    "PolicyIndex",
    "allow_reason",
    "apply_network_update",
    "classify_entry",
    "decide_dns",
    "decide_egress",
    "deny_reason",
    "dns_verdict",
    "egress_verdict",
    "prepare_destination",
    "resolvable_hostnames",
]

INVALID_TYPE = "invalid_type"
UNKNOWN_KEY = "unknown_key"
NON_STRING_ENTRY = "non_string_entry"
EMPTY_ENTRY = "empty_entry"
IPV6_NOT_SUPPORTED = "ipv6_not_supported"
INVALID_PORT = "invalid_port"
INVALID_IP = "invalid_ip"
INVALID_CIDR = "invalid_cidr"
INVALID_WILDCARD = "invalid_wildcard"
WILDCARD_IN_DENY = "wildcard_in_deny"
INVALID_DOMAIN = "invalid_domain"
INVALID_PATCH = "invalid_patch"
UNRESOLVABLE_HOST = "unresolvable_host"

CODES: frozenset[str] = frozenset(
    {
        INVALID_TYPE,
        UNKNOWN_KEY,
        NON_STRING_ENTRY,
        EMPTY_ENTRY,
        IPV6_NOT_SUPPORTED,
        INVALID_PORT,
        INVALID_IP,
        INVALID_CIDR,
        INVALID_WILDCARD,
        WILDCARD_IN_DENY,
        INVALID_DOMAIN,
        INVALID_PATCH,
        UNRESOLVABLE_HOST,
    }
)

KEYS = ("allow_internet_access", "allow_out", "deny_out")

EntryKind = Literal["domain", "wildcard", "ip", "cidr"]
ListName = Literal["allow_out", "deny_out"]

REASON_NO_POLICY = "no network policy: egress unrestricted"
REASON_OPEN = "allow_internet_access=true with empty allow_out: egress open"
REASON_BLOCKED = "allow_internet_access=false with empty allow_out: all egress blocked, DNS included"
REASON_DEFAULT_DENY = "allow_out is non-empty and no entry matched: default-deny"
REASON_DNS_IMPLICIT = "allow_internet_access=true with non-empty allow_out: DNS to the resolvers allowed"
REASON_DNS_NOT_LISTED = "allow_internet_access=false: DNS blocked, the resolver IP is not in allow_out"


def deny_reason(entry: str) -> str:
    """Return the reason of a decision made by the ``deny_out`` entry ``entry``."""
    return f"deny_out entry {entry!r}"


def allow_reason(entry: str) -> str:
    """Return the reason of a decision made by the ``allow_out`` entry ``entry``."""
    return f"allow_out entry {entry!r}"


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one connection or DNS query, with the rule or table row that decided it."""

    allowed: bool
    reason: str


def _fail(code: str, where: str, raw: str, why: str) -> PolicyError:
    return PolicyError(code, f"{where} {raw!r}: {why}")


def classify_entry(raw: object, where: ListName = "allow_out") -> tuple[EntryKind, str]:
    """Return the kind and canonical text of one ``allow_out``/``deny_out`` entry; raise PolicyError."""
    if not isinstance(raw, str):
        raise PolicyError(NON_STRING_ENTRY, f"{where} entry {raw!r}: entries must be strings")
    text = raw.strip()
    if not text:
        raise _fail(EMPTY_ENTRY, where, raw, "empty entry")
    if text.startswith("[") or text.count(":") > 1:
        raise _fail(IPV6_NOT_SUPPORTED, where, raw, "IPv6 is not supported; use IPv4 or a domain")
    if ":" in text:
        text, _, port = text.partition(":")
        if not (port.isascii() and port.isdigit() and port[0] != "0" and int(port) <= 65535):
            raise _fail(INVALID_PORT, where, raw, f"port suffix {port!r} is not an integer from 1 to 65535")
        if not text:
            raise _fail(EMPTY_ENTRY, where, raw, "nothing before the port")
    if "*" in text:
        if where == "deny_out":
            raise _fail(WILDCARD_IN_DENY, where, raw, "wildcards are only supported in allow_out")
        base = text[2:]
        if not text.startswith("*.") or "*" in base:
            raise _fail(INVALID_WILDCARD, where, raw, "only a whole leading label may be '*' (*.example.com)")
        try:
            return "wildcard", "*." + normalize_domain(base)
        except ValueError as exc:
            raise _fail(INVALID_WILDCARD, where, raw, f"bad domain after '*.': {exc}") from None
    if "/" in text:
        try:
            _, prefix = parse_ipv4_network(text)
        except ValueError as exc:
            raise _fail(INVALID_CIDR, where, raw, f"not an IPv4 CIDR: {exc}") from None
        if prefix == 32:
            return "ip", text.partition("/")[0]
        return "cidr", text
    if is_ipv4_shaped(text):
        if parse_ipv4(text) is None:
            raise _fail(INVALID_IP, where, raw, "not a dotted-quad IPv4 address")
        return "ip", text
    try:
        return "domain", normalize_domain(text)
    except ValueError as exc:
        raise _fail(INVALID_DOMAIN, where, raw, str(exc)) from None


def _normalize_entries(value: object, where: ListName) -> tuple[tuple[str, ...], tuple[DomainIndex, CidrIndex] | None]:
    """Return the canonical entries, with their indexes when a long, already canonical list gave them at once."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise PolicyError(INVALID_TYPE, f"{where} must be a list of strings, got {type(value).__name__}")
    from contracts._bulk import canonical_entries  # loaded with the first policy, not with the mocks

    bulk = canonical_entries(value, where)
    if bulk is not None:
        entries, domains, networks = bulk
        return entries, (domains, networks)
    seen: dict[str, None] = {}
    for raw in value:
        seen.setdefault(classify_entry(raw, where)[1], None)
    return tuple(seen), None


def _entry_kind(entry: str) -> EntryKind:
    """Return the kind of an entry that is already canonical."""
    if entry.startswith("*."):
        return "wildcard"
    if "/" in entry:
        return "cidr"
    if is_ipv4_shaped(entry):
        return "ip"
    return "domain"


@dataclass(frozen=True, slots=True)
class PolicyIndex:
    """The per-config lookup structures: domain suffix dicts and per-prefix-length CIDR dicts."""

    allow_domains: DomainIndex
    allow_ips: CidrIndex
    deny_domains: DomainIndex
    deny_ips: CidrIndex


def _build_indexes(entries: tuple[str, ...]) -> tuple[DomainIndex, CidrIndex]:
    exact: list[tuple[str, int]] = []
    wildcard: list[tuple[str, int]] = []
    networks: list[tuple[int, int, int]] = []
    for position, entry in enumerate(entries):
        kind = _entry_kind(entry)
        if kind == "domain":
            exact.append((entry, position))
        elif kind == "wildcard":
            wildcard.append((entry[2:], position))
        elif kind == "ip":
            address = parse_ipv4(entry)
            assert address is not None
            networks.append((address, 32, position))
        else:
            network, prefix = parse_ipv4_network(entry)
            networks.append((network, prefix, position))
    return DomainIndex(exact, wildcard), CidrIndex(networks)


@dataclass(frozen=True)
class NetworkConfig:
    """An immutable, validated and normalised TensorLake egress policy."""

    allow_internet_access: bool = True
    allow_out: tuple[str, ...] = ()
    deny_out: tuple[str, ...] = ()
    _index: PolicyIndex | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        """Validate and normalise the fields; raise PolicyError naming the offending entry."""
        if not isinstance(self.allow_internet_access, bool):
            raise PolicyError(
                INVALID_TYPE,
                f"allow_internet_access must be a boolean, got {self.allow_internet_access!r}",
            )
        allow_out, allow_index = _normalize_entries(self.allow_out, "allow_out")
        deny_out, deny_index = _normalize_entries(self.deny_out, "deny_out")
        object.__setattr__(self, "allow_out", allow_out)
        object.__setattr__(self, "deny_out", deny_out)
        if allow_index is not None or deny_index is not None:  # a long list came with its index: keep it
            allow_domains, allow_ips = allow_index or _build_indexes(allow_out)
            deny_domains, deny_ips = deny_index or _build_indexes(deny_out)
            object.__setattr__(self, "_index", PolicyIndex(allow_domains, allow_ips, deny_domains, deny_ips))

    @classmethod
    def from_json(cls, obj: object) -> NetworkConfig:
        """Build a config from a JSON ``network`` object, defaulting missing keys to (true, [], [])."""
        if not isinstance(obj, Mapping):
            raise PolicyError(INVALID_TYPE, f"network must be an object, got {type(obj).__name__}")
        unknown = sorted(str(key) for key in obj if key not in KEYS)
        if unknown:
            raise PolicyError(UNKNOWN_KEY, f"unknown network key(s): {', '.join(unknown)}")
        allow = obj.get("allow_out", [])
        deny = obj.get("deny_out", [])
        for name, value in (("allow_out", allow), ("deny_out", deny)):
            if not isinstance(value, list):
                raise PolicyError(INVALID_TYPE, f"{name} must be a list of strings, got {value!r}")
        return cls(obj.get("allow_internet_access", True), tuple(allow), tuple(deny))

    def to_json(self) -> dict[str, Any]:
        """Return the wire form, all three keys present."""
        return {
            "allow_internet_access": self.allow_internet_access,
            "allow_out": list(self.allow_out),
            "deny_out": list(self.deny_out),
        }

    def index(self) -> PolicyIndex:
        """Return the decision indexes, built on first use and cached on this config."""
        index = self._index
        if index is None:
            allow_domains, allow_ips = _build_indexes(self.allow_out)
            deny_domains, deny_ips = _build_indexes(self.deny_out)
            index = PolicyIndex(allow_domains, allow_ips, deny_domains, deny_ips)
            object.__setattr__(self, "_index", index)
        return index


def prepare_destination(host: str | None, ip: str | None) -> tuple[str | None, int | None]:
    """Return the canonical host name and the IPv4 integer of a destination; raise ValueError if unusable.

    An IPv4 literal given as ``host`` names no domain; it is used as the address when ``ip`` is None. An
    IPv6 ``ip`` is accepted but no IPv4/CIDR rule covers it.
    """
    if host is None and ip is None:
        raise ValueError("a destination needs a host, an ip or both")
    name: str | None = None
    if host is not None:
        literal = parse_ipv4(host) if host[-1:].isdigit() else None
        if literal is not None:
            if ip is None:
                return None, literal
        else:
            name = normalize_query_host(host)
    address: int | None = None
    if ip is not None:
        address = parse_ipv4(ip)
        if address is None and ":" not in ip:
            raise ValueError(f"ip {ip!r} is not an IPv4 or IPv6 address")
    return name, address


def _first(domains: DomainIndex, ips: CidrIndex, name: str | None, address: int | None) -> int | None:
    best = domains.first_match(name) if name is not None else None
    if address is not None:
        position = ips.first_match(address)
        if position is not None and (best is None or position < best):
            best = position
    return best


def egress_verdict(config: NetworkConfig, deny_entry: str | None, allow_entry: str | None) -> Decision:
    """Apply deny precedence and the four-row table to the first matching deny and allow entries."""
    if deny_entry is not None:
        return Decision(False, deny_reason(deny_entry))
    if config.allow_out:
        if allow_entry is not None:
            return Decision(True, allow_reason(allow_entry))
        return Decision(False, REASON_DEFAULT_DENY)
    if config.allow_internet_access:
        return Decision(True, REASON_OPEN)
    return Decision(False, REASON_BLOCKED)


def dns_verdict(config: NetworkConfig, deny_entry: str | None, allow_entry: str | None) -> Decision:
    """Apply the DNS column of the four-row table to the first deny and allow entries covering a resolver."""
    if deny_entry is not None:
        return Decision(False, deny_reason(deny_entry))
    if not config.allow_out:
        return Decision(True, REASON_OPEN) if config.allow_internet_access else Decision(False, REASON_BLOCKED)
    if config.allow_internet_access:
        return Decision(True, REASON_DNS_IMPLICIT)
    if allow_entry is not None:
        return Decision(True, allow_reason(allow_entry))
    return Decision(False, REASON_DNS_NOT_LISTED)


def decide_egress(config: NetworkConfig | None, *, host: str | None = None, ip: str | None = None) -> Decision:
    """Decide whether the sandbox may connect to ``ip`` after asking for ``host`` (either may be None).

    Hostname rules judge ``host`` (so every address it resolved to is covered), IPv4/CIDR rules judge
    ``ip``; ``deny_out`` wins, and the reason names the first listed entry that decided, or the table row.
    Costs one dict probe per label of ``host`` plus one per distinct CIDR prefix length (at most 33).
    """
    if config is None:
        return Decision(True, REASON_NO_POLICY)
    name, address = prepare_destination(host, ip)
    index = config.index()
    deny = _first(index.deny_domains, index.deny_ips, name, address)
    allow = _first(index.allow_domains, index.allow_ips, name, address) if deny is None else None
    return egress_verdict(
        config,
        None if deny is None else config.deny_out[deny],
        None if allow is None else config.allow_out[allow],
    )


def decide_dns(config: NetworkConfig | None, resolver_ip: str) -> Decision:
    """Decide whether the sandbox may send DNS queries to its configured resolver ``resolver_ip``.

    Allowed in both ``allow_internet_access=true`` rows; in the (false, non-empty) row only when an
    ``allow_out`` IPv4/CIDR entry covers the resolver; never in the (false, empty) row. A ``deny_out``
    IPv4/CIDR entry covering the resolver blocks DNS in every row (deny wins here too).
    """
    if config is None:
        return Decision(True, REASON_NO_POLICY)
    _, address = prepare_destination(None, resolver_ip)
    index = config.index()
    deny = index.deny_ips.first_match(address) if address is not None else None
    allow = index.allow_ips.first_match(address) if address is not None else None
    return dns_verdict(
        config,
        None if deny is None else config.deny_out[deny],
        None if allow is None else config.allow_out[allow],
    )


def resolvable_hostnames(config: NetworkConfig) -> tuple[str, ...]:
    """Return the exact hostnames of ``config`` (no wildcards, no addresses), allow_out first, deduplicated."""
    names: dict[str, None] = {}
    for entry in (*config.allow_out, *config.deny_out):
        if _entry_kind(entry) == "domain":
            names.setdefault(entry, None)
    return tuple(names)


def _resolves(name: str, resolve: Callable[[str], Iterable[str]]) -> bool:
    try:
        return bool(list(resolve(name)))
    except OSError:
        return False


def apply_network_update(
    current: NetworkConfig | None,
    patch_body: object,
    resolve: Callable[[str], Iterable[str]],
) -> NetworkConfig | None:
    """Return the policy after a ``PATCH /sandboxes/{id}`` body; raise PolicyError and change nothing if bad.

    ``network`` absent keeps ``current``; ``null`` clears it (None, unrestricted); an object replaces it with
    missing keys defaulting to (true, [], []). ``resolve`` returns a name's addresses, empty when the name
    does not resolve (an ``OSError`` counts as unresolvable); wildcard entries are not resolved.
    """
    if not isinstance(patch_body, Mapping):
        raise PolicyError(INVALID_PATCH, f"the PATCH body must be an object, got {type(patch_body).__name__}")
    if "network" not in patch_body:
        return current
    network = patch_body["network"]
    if network is None:
        return None
    updated = NetworkConfig.from_json(network)
    for name in resolvable_hostnames(updated):
        if not _resolves(name, resolve):
            raise PolicyError(UNRESOLVABLE_HOST, f"hostname {name!r} cannot be resolved; policy unchanged")
    return updated
