"""Deliberately wrong OpenSandbox policy engines: each must fail at least one contract check.

``caught_by`` names the check aimed at a mutant; a choice mutant (``choice`` says why) differs only where the
OpenSandbox documents are silent and is caught by a ``choice`` check, which fails only a ``--strict`` run.
"""

from __future__ import annotations

from typing import Any

from contracts.opensandbox import NetworkPolicy, NetworkRule, canonical_host, parse_rules
from contracts.opensandbox_adapter import OpenSandboxReferenceEngine

Json = dict[str, Any]


class Mutant(OpenSandboxReferenceEngine):
    """Reference behaviour except for one seeded fault; ``caught_by`` names a check that exposes it."""

    caught_by = ""
    choice = ""


class WildcardMatchesApex(Mutant):
    """``*.example.com`` also matches ``example.com``."""

    caught_by = "wildcard_apex"
    choice = "the egress documents name *.example.com but never say whether it matches example.com"

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
)
