"""Engines that decide exactly like the reference but store policies as given: not wrong, only differently written.

They are the acceptance test of contract strength, kept beside the mutants. Every egress and DNS decision,
every accept or reject, is the reference's; only the stored form differs, which neither the providers'
documents nor any capture fixes. Under the default run they pass every check. Under ``--strict`` the
TensorLake one fails, and only on ``choice`` checks (the stored form); the OpenSandbox one passes even then,
because its merge and delete results are compared up to equivalence (live rules in order, effective default)
and it only keeps shadowed duplicates and the given spelling (``tests/harness/test_representation_engines.py``)::

    sandproof check --target policy:tests.mutants.representation_engines:tensorlake_as_given
    sandproof check --strict --target policy:tests.mutants.representation_engines:tensorlake_as_given
"""

from __future__ import annotations

from typing import Any

from contracts.opensandbox import NetworkPolicy, delete_targets, merge_rules, parse_rules, parse_targets
from contracts.opensandbox_adapter import OpenSandboxReferenceEngine
from contracts.tensorlake_adapter import Resolver, TensorLakeReferenceEngine

__all__ = ["OpenSandboxAsGiven", "TensorLakeAsGiven", "opensandbox_as_given", "tensorlake_as_given"]

Json = dict[str, Any]


class TensorLakeAsGiven(TensorLakeReferenceEngine):
    """The reference's decisions, but ``apply_update`` stores entries as given: no de-duplication, no IDNA.

    ``deny_out: ["a.com", "a.com"]`` stays two entries, ``bücher.com`` stays Unicode, ``Example.COM.`` keeps
    its case and dot; missing keys get their documented defaults. Validation and resolving are the reference's.
    """

    def apply_update(self, current: Json | None, patch_body: Json, resolve: Resolver) -> Json | None:
        """Validate and resolve like the reference, then store the given policy as written."""
        super().apply_update(current, patch_body, resolve)
        if "network" not in patch_body:
            return current
        given = patch_body["network"]
        if given is None:
            return None
        return {
            "allow_internet_access": given.get("allow_internet_access", True),
            "allow_out": list(given.get("allow_out", [])),
            "deny_out": list(given.get("deny_out", [])),
        }


def _raw_rules(policy: Json | None) -> list[Json]:
    return [dict(rule) for rule in (policy or {}).get("egress") or []]


class OpenSandboxAsGiven(OpenSandboxReferenceEngine):
    """The reference's decisions, but merge and delete keep rules as written and every duplicate rule.

    A merge puts the incoming rules, as given, before the existing ones (shadowed duplicates stay); a delete
    drops the rules whose target the reference would drop. ``defaultAction`` is written only where it was.
    """

    def merge(self, policy: Json | None, rules: list[Json]) -> Json:
        """Check the merge with the reference, then write incoming rules first, as given."""
        merge_rules(NetworkPolicy.from_json(policy), parse_rules(rules))
        out: Json = {"egress": [dict(rule) for rule in rules] + _raw_rules(policy)}
        if (policy or {}).get("defaultAction") is not None:
            out["defaultAction"] = policy["defaultAction"]  # type: ignore[index]
        elif policy and policy.get("egress"):
            out["defaultAction"] = "deny"
        else:
            out["defaultAction"] = "allow"  # merging into an empty (allow-all) policy keeps allowing
        return out

    def delete(self, policy: Json | None, targets: list[str]) -> Json:
        """Drop the rules the reference drops; keep every other rule as written."""
        base = NetworkPolicy.from_json(policy)
        after = delete_targets(base, parse_targets(targets))
        if after == base:
            return dict(policy or {})
        gone = set(parse_targets(targets))
        kept = [rule for rule, parsed in zip(_raw_rules(policy), base.egress, strict=True) if parsed.target not in gone]
        return {"defaultAction": base.effective_default, "egress": kept}


tensorlake_as_given = TensorLakeAsGiven()
opensandbox_as_given = OpenSandboxAsGiven()
