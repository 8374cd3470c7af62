"""Deliberately wrong TensorLake egress engines: each must be caught by ``harness.policy.tensorlake.checks``.

Every mutant follows the JSON engine protocol and differs from the reference in one plausible way. Most wrap
the reference and bend one answer; the matching bugs live in ``_ScanEngine``, a small linear-scan engine
whose knobs switch individual mistakes on. ``caught_by`` names the check aimed at it. A mutant that differs
only where the networking docs are silent is a choice mutant: ``choice`` says why, and only a ``choice`` check
(failing a ``--strict`` run) catches it.
"""

from __future__ import annotations

import ipaddress
from typing import Any, ClassVar

import idna

from contracts.tensorlake_adapter import Resolver, TensorLakeReferenceEngine

Network = dict[str, Any]


class Mutant(TensorLakeReferenceEngine):
    """A reference engine with one deliberate defect, described by ``defect``."""

    defect: ClassVar[str] = ""
    caught_by: ClassVar[str] = ""
    choice: ClassVar[str] = ""
    #: The boundary neighbour (of :mod:`harness.policy.boundaries`) the mutant gets wrong, if it is one.
    neighbour: ClassVar[str] = ""

    def canonical(self, network: Network) -> Network:
        """Return the reference's normalised form of a valid ``network``."""
        config = self.config(network)
        assert config is not None
        return config.to_json()


class _ScanEngine(Mutant):
    """Linear-scan egress decisions with switchable matching mistakes (DNS and PATCH stay correct)."""

    wildcard_matches_apex: ClassVar[bool] = False
    wildcard_one_label: ClassVar[bool] = False
    case_sensitive: ClassVar[bool] = False
    apply_idna: ClassVar[bool] = True
    cidr_excludes_last: ClassVar[bool] = False
    cidr_excludes_first: ClassVar[bool] = False
    cidr_slack_below: ClassVar[int] = 0
    cidr_slack_above: ClassVar[int] = 0
    suffix_without_dot: ClassVar[bool] = False
    exact_matches_below: ClassVar[bool] = False
    exact_matches_prefix: ClassVar[bool] = False
    keeps_trailing_dot: ClassVar[bool] = False

    def _entries(self, entries: list[str]) -> list[str]:
        if self.apply_idna:
            return entries
        plain = []
        for entry in entries:
            base = entry.removeprefix("*.")
            plain.append(entry[: len(entry) - len(base)] + (idna.decode(base) if "xn--" in base else base))
        return plain

    def _host(self, host: str) -> str:
        host = host if self.case_sensitive else host.lower()
        host = host if self.keeps_trailing_dot else host.removesuffix(".")
        if self.apply_idna and not host.isascii():
            host = idna.encode(host, uts46=True).decode("ascii")
        return host

    def _matches(self, entry: str, host: str | None, ip: str | None) -> bool:
        if set(entry) <= set("0123456789./"):
            if ip is None:
                return False
            network, address = ipaddress.IPv4Network(entry), ipaddress.IPv4Address(ip)
            if self.cidr_excludes_last and "/" in entry and address == network.broadcast_address:
                return False
            if self.cidr_excludes_first and "/" in entry and address == network.network_address:
                return False
            low = int(network.network_address) - self.cidr_slack_below
            return low <= int(address) <= int(network.broadcast_address) + self.cidr_slack_above
        if host is None:
            return False
        if not entry.startswith("*."):
            below = self.exact_matches_below and host.endswith("." + entry)
            return host == entry or below or (self.exact_matches_prefix and host.startswith(entry))
        base = entry[2:]
        if host == base:
            return self.wildcard_matches_apex
        if not host.endswith(("" if self.suffix_without_dot else ".") + base):
            return False
        return not self.wildcard_one_label or "." not in host[: -len(base) - 1]

    def allows_egress(self, network: Network | None, host: str | None, ip: str | None) -> bool:
        """Scan the rules in order."""
        if network is None:
            return True
        policy = self.canonical(network)
        name = None if host is None else self._host(host)
        allow, deny = self._entries(policy["allow_out"]), self._entries(policy["deny_out"])
        if any(self._matches(entry, name, ip) for entry in deny):
            return False
        if allow:
            return any(self._matches(entry, name, ip) for entry in allow)
        return bool(policy["allow_internet_access"])


class WildcardMatchesApex(_ScanEngine):
    """``*.example.com`` also matches ``example.com``."""

    defect = "wildcard matches the apex"
    caught_by = "wildcard_apex"
    neighbour = "apex"
    wildcard_matches_apex = True


class WildcardOneLabel(_ScanEngine):
    """``*.example.com`` matches ``api.example.com`` but not ``v1.api.example.com``."""

    defect = "wildcard matches one label only"
    caught_by = "wildcard_apex"
    neighbour = "many labels deeper"
    wildcard_one_label = True


class CaseSensitive(_ScanEngine):
    """Host names are compared without case folding."""

    defect = "case-sensitive host matching"
    caught_by = "case_insensitive"
    neighbour = "letter case"
    choice = "the networking docs never say whether hosts and entries compare without letter case"
    case_sensitive = True


class NoIdna(_ScanEngine):
    """Non-ASCII names are compared as Unicode, never converted to IDNA."""

    defect = "IDNA not applied"
    caught_by = "idna"
    neighbour = "punycode spelling"
    choice = "the networking docs say nothing of non-ASCII names or their punycode spelling"
    apply_idna = False


class SuffixWithoutDot(_ScanEngine):
    """``*.example.com`` matches any name ending in ``example.com``: ``badexample.com`` too."""

    defect = "wildcard is a suffix match without the dot"
    caught_by = "boundary_names"
    neighbour = "same suffix without the dot"
    suffix_without_dot = True


class ExactMatchesSubdomains(_ScanEngine):
    """An exact entry ``example.com`` also matches the names below it (``api.example.com``)."""

    defect = "an exact entry covers its subdomains"
    caught_by = "boundary_names"
    neighbour = "one label deeper"
    exact_matches_below = True


class ExactMatchesPrefix(_ScanEngine):
    """An exact entry matches any name starting with it (``example.com.evil.org``)."""

    defect = "an exact entry is a prefix match"
    caught_by = "boundary_names"
    neighbour = "the name followed by more labels"
    exact_matches_prefix = True


class TrailingDotKept(_ScanEngine):
    """A host's trailing dot is kept, so ``example.com.`` is not ``example.com``."""

    defect = "a trailing dot makes a host another name"
    caught_by = "boundary_spelling"
    choice = "the networking docs never say whether a trailing dot changes a name"
    neighbour = "trailing dot"
    keeps_trailing_dot = True


class CidrExcludesNetworkAddress(_ScanEngine):
    """The first (network) address of a CIDR range is treated as outside it."""

    defect = "CIDR range misses its first address"
    caught_by = "boundary_addresses"
    neighbour = "first address"
    cidr_excludes_first = True


class CidrIncludesOneBelow(_ScanEngine):
    """A CIDR range also covers the address just below its first (``>`` written ``>=`` one too low)."""

    defect = "CIDR range covers one address below it"
    caught_by = "boundary_addresses"
    neighbour = "one below the first address"
    cidr_slack_below = 1


class CidrIncludesOneAbove(_ScanEngine):
    """A CIDR range also covers the address just above its last."""

    defect = "CIDR range covers one address above it"
    caught_by = "boundary_addresses"
    neighbour = "one above the last address"
    cidr_slack_above = 1


class PortSuffixLiteral(Mutant):
    """A hostname entry with a ``:port`` suffix is compared with the suffix, so it never matches a host."""

    defect = "a :port suffix makes the entry match nothing"
    caught_by = "boundary_port"
    neighbour = "port suffix"

    def allows_egress(self, network: Network | None, host: str | None, ip: str | None) -> bool:
        """Decide with every port-suffixed name entry replaced by a name no host has."""
        if network is not None:
            network = {
                **network,
                **{
                    key: [_unmatchable(e) for e in network[key]]
                    for key in ("allow_out", "deny_out")
                    if isinstance(network.get(key), list)
                },
            }
        return super().allows_egress(network, host, ip)


def _unmatchable(entry: object) -> object:
    if isinstance(entry, str) and ":" in entry and not entry[:1].isdigit():
        return entry.replace(":", "-port-")
    return entry


class DenyDoesNotWin(Mutant):
    """``deny_out`` is ignored whenever ``allow_out`` is non-empty, so allow wins over deny."""

    defect = "deny does not win over allow"
    caught_by = "deny_precedence"

    def allows_egress(self, network: Network | None, host: str | None, ip: str | None) -> bool:
        """Drop deny_out when allow_out has entries."""
        if network is not None and network.get("allow_out"):
            network = {**network, "deny_out": []}
        return super().allows_egress(network, host, ip)


def _shift_prefixes(network: Network, delta: int) -> Network:
    def shift(entry: str) -> str:
        if "/" not in entry:
            return entry
        address, _, prefix = entry.partition("/")
        bits = min(32, max(0, int(prefix) + delta))
        return str(ipaddress.IPv4Network((address, bits), strict=False))

    return {
        **network,
        "allow_out": [shift(e) for e in network["allow_out"]],
        "deny_out": [shift(e) for e in network["deny_out"]],
    }


class CidrPrefixOffByOne(Mutant):
    """A ``/n`` CIDR is matched as ``/(n-1)``, covering twice the addresses."""

    defect = "CIDR prefix off by one"
    caught_by = "cidr_bounds"
    neighbour = "one above the last address"

    def allows_egress(self, network: Network | None, host: str | None, ip: str | None) -> bool:
        """Decide on the widened policy."""
        if network is not None:
            network = _shift_prefixes(self.canonical(network), -1)
        return super().allows_egress(network, host, ip)

    def allows_dns(self, network: Network | None, resolver_ip: str) -> bool:
        """Decide on the widened policy."""
        if network is not None:
            network = _shift_prefixes(self.canonical(network), -1)
        return super().allows_dns(network, resolver_ip)


class CidrExcludesBroadcast(_ScanEngine):
    """The last address of a CIDR range is treated as outside it."""

    defect = "CIDR range misses its last address"
    caught_by = "cidr_bounds"
    neighbour = "last address"
    cidr_excludes_last = True


class DnsAllowedWithoutInternet(Mutant):
    """DNS to the resolver is allowed in the (false, non-empty) row even when the resolver is not listed."""

    defect = "DNS allowed where the table blocks it"
    caught_by = "row_no_internet"

    def allows_dns(self, network: Network | None, resolver_ip: str) -> bool:
        """Treat allow_internet_access=false like true once allow_out is non-empty."""
        if network is not None and network.get("allow_out"):
            network = {**network, "allow_internet_access": True}
        return super().allows_dns(network, resolver_ip)


class DnsOpenWhenBlocked(Mutant):
    """DNS stays open in the (false, empty) row, which blocks all egress."""

    defect = "DNS allowed in the block-all row"
    caught_by = "row_blocked"

    def allows_dns(self, network: Network | None, resolver_ip: str) -> bool:
        """Allow DNS whenever allow_out is empty."""
        if network is not None and not network.get("allow_out"):
            return True
        return super().allows_dns(network, resolver_ip)


class DnsBlockedDespiteInternet(Mutant):
    """The (true, non-empty) row blocks DNS unless the resolver is listed, as if the flag were false."""

    defect = "DNS blocked where the table allows it"
    caught_by = "row_allow_internet"

    def allows_dns(self, network: Network | None, resolver_ip: str) -> bool:
        """Treat allow_internet_access=true like false once allow_out is non-empty."""
        if network is not None and network.get("allow_out"):
            network = {**network, "allow_internet_access": False}
        return super().allows_dns(network, resolver_ip)


class DnsIgnoresDeny(Mutant):
    """A ``deny_out`` entry covering the resolver does not block DNS."""

    defect = "deny_out does not apply to DNS"
    caught_by = "deny_precedence"

    def allows_dns(self, network: Network | None, resolver_ip: str) -> bool:
        """Decide DNS without deny_out."""
        if network is not None:
            network = {**network, "deny_out": []}
        return super().allows_dns(network, resolver_ip)


class InternetFlagIgnored(Mutant):
    """``allow_internet_access=false`` with an empty ``allow_out`` still lets traffic out."""

    defect = "block-all row lets egress out"
    caught_by = "egress_agrees"

    def allows_egress(self, network: Network | None, host: str | None, ip: str | None) -> bool:
        """Read allow_internet_access as always true."""
        if network is not None:
            network = {**network, "allow_internet_access": True}
        return super().allows_egress(network, host, ip)


class PatchNullIgnored(Mutant):
    """``{"network": null}`` keeps the current policy instead of clearing it."""

    defect = "PATCH null ignored"
    caught_by = "patch_tristate"

    def apply_update(self, current: Network | None, patch_body: Network, resolve: Resolver) -> Network | None:
        """Treat null like an absent key."""
        if "network" in patch_body and patch_body["network"] is None:
            patch_body = {k: v for k, v in patch_body.items() if k != "network"}
        return super().apply_update(current, patch_body, resolve)


class OmittedNetworkClears(Mutant):
    """A PATCH without a ``network`` key clears the policy."""

    defect = "omitted network clears the policy"
    caught_by = "patch_tristate"

    def apply_update(self, current: Network | None, patch_body: Network, resolve: Resolver) -> Network | None:
        """Treat an absent key like null."""
        if "network" not in patch_body:
            return None
        return super().apply_update(current, patch_body, resolve)


class PatchMergesMissingKeys(Mutant):
    """Keys missing from the new policy are taken from the current one instead of the defaults."""

    defect = "PATCH object merged instead of replaced"
    caught_by = "patch_tristate"

    def apply_update(self, current: Network | None, patch_body: Network, resolve: Resolver) -> Network | None:
        """Fill the new policy's missing keys from ``current``."""
        network = patch_body.get("network")
        if current is not None and isinstance(network, dict):
            patch_body = {**patch_body, "network": {**current, **network}}
        return super().apply_update(current, patch_body, resolve)


class UnresolvableAccepted(Mutant):
    """Hostnames are never resolved, so an unresolvable name is accepted."""

    defect = "unresolvable hostname accepted"
    caught_by = "unresolvable_rejected"

    def apply_update(self, current: Network | None, patch_body: Network, resolve: Resolver) -> Network | None:
        """Resolve nothing."""
        return super().apply_update(current, patch_body, lambda name: ["192.0.2.1"])


class WildcardsResolved(Mutant):
    """Wildcard entries are resolved too (as their base name) and reject the update when they fail."""

    defect = "wildcards resolved"
    caught_by = "wildcards_not_resolved"
    choice = "the docs reject unresolvable hostnames but do not say whether wildcard entries are resolved"

    def apply_update(self, current: Network | None, patch_body: Network, resolve: Resolver) -> Network | None:
        """Resolve the base name of every wildcard before applying."""
        network = patch_body.get("network")
        if isinstance(network, dict):
            for entry in self.canonical(network)["allow_out"]:
                if entry.startswith("*.") and not resolve(entry):
                    raise ValueError(f"{entry} does not resolve")
        return super().apply_update(current, patch_body, resolve)


class WildcardAllowedInDeny(Mutant):
    """``deny_out`` accepts wildcard entries (and ignores them)."""

    defect = "wildcard accepted in deny_out"
    caught_by = "documented_forms"

    def _strip(self, network: Any) -> Any:
        if isinstance(network, dict) and isinstance(network.get("deny_out"), list):
            deny = [e for e in network["deny_out"] if not (isinstance(e, str) and e.strip().startswith("*."))]
            return {**network, "deny_out": deny}
        return network

    def validate(self, network: Network) -> None:
        """Validate with wildcard deny entries removed."""
        super().validate(self._strip(network))


MUTANTS: tuple[Mutant, ...] = (
    WildcardMatchesApex(),
    WildcardOneLabel(),
    CaseSensitive(),
    NoIdna(),
    DenyDoesNotWin(),
    CidrPrefixOffByOne(),
    CidrExcludesBroadcast(),
    SuffixWithoutDot(),
    ExactMatchesSubdomains(),
    ExactMatchesPrefix(),
    TrailingDotKept(),
    CidrExcludesNetworkAddress(),
    CidrIncludesOneBelow(),
    CidrIncludesOneAbove(),
    PortSuffixLiteral(),
    DnsAllowedWithoutInternet(),
    DnsOpenWhenBlocked(),
    DnsBlockedDespiteInternet(),
    DnsIgnoresDeny(),
    InternetFlagIgnored(),
    PatchNullIgnored(),
    OmittedNetworkClears(),
    PatchMergesMissingKeys(),
    UnresolvableAccepted(),
    WildcardsResolved(),
    WildcardAllowedInDeny(),
)
