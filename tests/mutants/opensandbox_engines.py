"""Deliberately wrong OpenSandbox policy engines: each must fail at least one contract check.

``caught_by`` names the check aimed at a mutant; a choice mutant (``choice`` says why) differs only where the
OpenSandbox documents are silent and is caught by a ``choice`` check, which fails only a ``--strict`` run.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import idna

from contracts.opensandbox import NetworkPolicy, NetworkRule, canonical_host, parse_rules
from contracts.opensandbox_adapter import OpenSandboxReferenceEngine

Json = dict[str, Any]


class Mutant(OpenSandboxReferenceEngine):
    """Reference behaviour except for one seeded fault; ``caught_by`` names a check that exposes it."""

    caught_by = ""
    choice = ""
    #: The boundary neighbour (of :mod:`harness.policy.boundaries`) the mutant gets wrong, if it is one.
    neighbour = ""


class _ScanEngine(Mutant):
    """Scan the rules in order with switchable matching mistakes; validation stays the reference's."""

    suffix_without_dot = False
    exact_matches_below = False
    exact_matches_prefix = False
    wildcard_one_label = False
    keeps_trailing_dot = False

    def _matches(self, rule: NetworkRule, name: str) -> bool:
        if not rule.is_wildcard:
            below = self.exact_matches_below and name.endswith("." + rule.target)
            return name == rule.target or below or (self.exact_matches_prefix and name.startswith(rule.target))
        if self.suffix_without_dot:
            return name.endswith(rule.suffix) and name != rule.suffix
        if self.wildcard_one_label:
            return name.endswith("." + rule.suffix) and "." not in name[: -len(rule.suffix) - 1]
        return rule.matches(name)

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Scan the parsed rules; the first matching one decides."""
        parsed = NetworkPolicy.from_json(policy)
        name = canonical_host(host)
        if self.keeps_trailing_dot and host.endswith("."):
            name += "."
        for rule in parsed.egress:
            if self._matches(rule, name):
                return rule.action == "allow"
        return parsed.effective_default == "allow"


class SuffixWithoutDot(_ScanEngine):
    """``*.example.com`` matches any name ending in ``example.com``: ``badexample.com`` too."""

    caught_by = "boundary_names"
    neighbour = "same suffix without the dot"
    suffix_without_dot = True


class ExactMatchesSubdomains(_ScanEngine):
    """An FQDN target ``example.com`` also matches the names below it."""

    caught_by = "boundary_names"
    neighbour = "one label deeper"
    exact_matches_below = True


class ExactMatchesPrefix(_ScanEngine):
    """An FQDN target matches any name starting with it (``example.com.evil.org``)."""

    caught_by = "boundary_names"
    neighbour = "the name followed by more labels"
    exact_matches_prefix = True


class WildcardOneLabel(_ScanEngine):
    """``*.example.com`` matches ``api.example.com`` but not ``v1.eu.api.example.com``."""

    caught_by = "boundary_wildcard_depth"
    choice = "the egress documents never say how many labels below its domain a wildcard matches"
    neighbour = "many labels deeper"
    wildcard_one_label = True


class TrailingDotKept(_ScanEngine):
    """A host's trailing dot is kept, so ``example.com.`` is not ``example.com``."""

    caught_by = "boundary_spelling"
    choice = "the egress documents do not say whether a trailing dot changes a host"
    neighbour = "trailing dot"
    keeps_trailing_dot = True


class UnicodeNamesAccepted(Mutant):
    """Targets and hosts in Unicode are accepted and converted to punycode instead of refused."""

    caught_by = "boundary_spelling"
    choice = "the egress documents do not say whether a Unicode target or host is refused or converted"
    neighbour = "Unicode spelling"

    @staticmethod
    def _puny(text: object) -> object:
        if isinstance(text, str) and not text.isascii():
            return idna.encode(text.lower(), uts46=True).decode("ascii")
        return text

    def _policy(self, policy: Json | None) -> Json | None:
        if not isinstance(policy, dict) or not isinstance(policy.get("egress"), list):
            return policy
        rules = [{**r, "target": self._puny(r.get("target"))} if isinstance(r, dict) else r for r in policy["egress"]]
        return {**policy, "egress": rules}

    def validate(self, policy: Json) -> None:
        """Validate the policy with its Unicode targets converted."""
        super().validate(self._policy(policy))  # type: ignore[arg-type]

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Decide with Unicode targets and hosts converted."""
        return super().allows_egress(self._policy(policy), str(self._puny(host)))


class AddressTargetCoversItsSubnet(Mutant):
    """An IP target also matches every address of its /24."""

    caught_by = "boundary_addresses"
    choice = "IP targets are sandproof's choice; the egress documents support neither IP nor CIDR targets"
    neighbour = "one below the first address"

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Let an IP target match any host address in the same /24."""
        parsed = NetworkPolicy.from_json(policy)
        name = canonical_host(host)
        for rule in parsed.egress:
            if rule.matches(name) or _same_slash24(rule.target, name):
                return rule.action == "allow"
        return parsed.effective_default == "allow"


def _same_slash24(target: str, host: str) -> bool:
    try:
        a, b = ipaddress.IPv4Address(target), ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return int(a) >> 8 == int(b) >> 8


class PortSuffixIgnored(Mutant):
    """A ``:port`` suffix on a target or a host is dropped instead of refused."""

    caught_by = "boundary_port"
    choice = "the egress documents do not say whether a target or a host may carry a :port suffix"
    neighbour = "port suffix"

    @staticmethod
    def _bare(text: object) -> object:
        if isinstance(text, str) and text.count(":") == 1 and text.rsplit(":", 1)[1].isdigit():
            return text.rsplit(":", 1)[0]
        return text

    def _policy(self, policy: Json | None) -> Json | None:
        if not isinstance(policy, dict) or not isinstance(policy.get("egress"), list):
            return policy
        rules = [{**r, "target": self._bare(r.get("target"))} if isinstance(r, dict) else r for r in policy["egress"]]
        return {**policy, "egress": rules}

    def validate(self, policy: Json) -> None:
        """Validate the policy with port suffixes dropped."""
        super().validate(self._policy(policy))  # type: ignore[arg-type]

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Decide with port suffixes dropped from targets and the host."""
        return super().allows_egress(self._policy(policy), str(self._bare(host)))


class WildcardMatchesApex(Mutant):
    """``*.example.com`` also matches ``example.com``."""

    caught_by = "wildcard_apex"
    choice = "the egress documents name *.example.com but never say whether it matches example.com"
    neighbour = "apex"

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Scan rules, letting a wildcard match its apex too."""
        parsed = NetworkPolicy.from_json(policy)
        name = canonical_host(host)
        for rule in parsed.egress:
            if rule.matches(name) or (rule.is_wildcard and name == rule.suffix):
                return rule.action == "allow"
        return parsed.effective_default == "allow"


class LastWinsWithinPatch(Mutant):
    """For a duplicate target inside one patch the last rule wins."""

    caught_by = "merge_first_wins_within_patch"

    def merge(self, policy: Json | None, rules: list[Json]) -> Json:
        """Merge after keeping each target's last occurrence in the patch."""
        return super().merge(policy, list(reversed(rules)))


class MergeChangesDefault(Mutant):
    """A merge forces ``defaultAction`` to deny."""

    caught_by = "merge_keeps_default_action"

    def merge(self, policy: Json | None, rules: list[Json]) -> Json:
        """Merge, then overwrite the default action."""
        return {**super().merge(policy, rules), "defaultAction": "deny"}


class ExistingRulesWin(Mutant):
    """Existing rules keep priority: new rules are appended after them."""

    caught_by = "merge_incoming_rules_win"

    def merge(self, policy: Json | None, rules: list[Json]) -> Json:
        """Append unseen incoming targets after the existing rules."""
        base = NetworkPolicy.from_json(policy)
        held = {rule.target for rule in base.egress}
        extra = tuple(rule for rule in parse_rules(rules) if rule.target not in held)
        return NetworkPolicy(base.effective_default, base.egress + extra).to_json()


class DeleteRemovesEverything(Mutant):
    """DELETE drops every rule, whatever the targets."""

    caught_by = "delete_unknown_is_identity"

    def delete(self, policy: Json | None, targets: list[str]) -> Json:
        """Return the policy with no rules left."""
        base = NetworkPolicy.from_json(policy)
        return NetworkPolicy(base.effective_default, ()).to_json()


class CaseSensitive(Mutant):
    """Targets and hosts are compared exactly as spelled."""

    caught_by = "case_and_trailing_dot_ignored"
    choice = "the egress documents do not say whether targets and hosts compare without letter case"
    neighbour = "letter case"

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Scan the raw rules with case-sensitive string comparison."""
        parsed = NetworkPolicy.from_json(policy)
        for raw in (policy or {}).get("egress") or []:
            target = str(raw["target"])
            wildcard = target.startswith("*.")
            if host == target or (wildcard and host.endswith(target[1:])):
                return bool(raw["action"] == "allow")
        return parsed.effective_default == "allow"


class DefaultDenyOnEmpty(Mutant):
    """A missing or empty policy denies everything, like the sidecar's own parser default."""

    caught_by = "empty_policy_allows_all"

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Treat an absent default action as deny even without rules."""
        parsed = NetworkPolicy.from_json(policy)
        if parsed.is_empty:
            return False
        return super().allows_egress(policy, host)


class AcceptsAnyAction(Mutant):
    """Validation accepts any action spelling (``Allow``, ``reject`` ...)."""

    caught_by = "validate_spec"

    def validate(self, policy: Json) -> None:
        """Validate after coercing every rule's action to allow."""
        if isinstance(policy, dict) and isinstance(policy.get("egress"), list):
            policy = {
                **policy,
                "egress": [
                    {**rule, "action": "allow"} if isinstance(rule, dict) and "action" in rule else rule
                    for rule in policy["egress"]
                ],
            }
        super().validate(policy)


class DeleteCaseSensitive(Mutant):
    """DELETE compares targets as spelled, so ``A.com`` does not remove ``a.com``."""

    caught_by = "delete_form"
    choice = "the egress documents do not say whether DELETE matches a target written in another letter case"

    def delete(self, policy: Json | None, targets: list[str]) -> Json:
        """Drop raw rules whose spelling is listed verbatim."""
        base = NetworkPolicy.from_json(policy)
        raw = list((policy or {}).get("egress") or [])
        kept = tuple(NetworkRule(r["action"], r["target"]) for r in raw if r["target"] not in targets)
        if len(kept) == len(raw):
            return base.to_json()
        return NetworkPolicy(base.effective_default, kept).to_json()


MUTANTS: tuple[Mutant, ...] = (
    WildcardMatchesApex(),
    LastWinsWithinPatch(),
    MergeChangesDefault(),
    ExistingRulesWin(),
    DeleteRemovesEverything(),
    CaseSensitive(),
    DefaultDenyOnEmpty(),
    AcceptsAnyAction(),
    DeleteCaseSensitive(),
    SuffixWithoutDot(),
    ExactMatchesSubdomains(),
    ExactMatchesPrefix(),
    WildcardOneLabel(),
    TrailingDotKept(),
    UnicodeNamesAccepted(),
    AddressTargetCoversItsSubnet(),
    PortSuffixIgnored(),
)
