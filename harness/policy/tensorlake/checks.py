"""Engine-generic property checks for TensorLake egress engines, with the reference engine as the oracle.

An engine is any object following ``contracts.tensorlake_adapter.TensorLakeEngine`` (plain JSON values in
and out). Every ``check_*`` function takes an engine and returns a ``CheckResult``; ``run_checks`` runs them
all (or a chosen subset) and returns one result per check::

    from harness.policy.tensorlake.checks import run_checks
    failures = [r for r in run_checks(my_engine) if not r.passed]

Fixed-example checks come first (the networking docs' table and examples), then Hypothesis properties that
are either stated directly (deny precedence, monotonicity, wildcard/apex, case, IDNA) or differential
against the reference (decisions, normalisation, validation, PATCH). The generators favour collisions:
hosts are built on top of the policy's own domains and addresses sit on the edges of its CIDRs.

The strategies live in :mod:`harness.policy.tensorlake.strategies`, the checks in :mod:`harness.policy.tensorlake.examples`
and :mod:`harness.policy.tensorlake.properties`; this module gathers them and runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.examples import check_seed_examples, check_seed_table
from harness.policy.tensorlake.properties import (
    check_allow_never_allows_less,
    check_case_insensitive,
    check_cidr_bounds,
    check_deny_never_allows_more,
    check_deny_precedence,
    check_dns_agrees,
    check_egress_agrees,
    check_idna,
    check_normalisation,
    check_patch_tristate,
    check_unresolvable_rejected,
    check_validation_agrees,
    check_wildcard_apex,
)
from harness.policy.tensorlake.runner import CheckFailed, CheckResult
from harness.policy.tensorlake.strategies import (
    allow_entries,
    cidrs,
    decorated_networks,
    deny_entries,
    destinations,
    domains,
    egress_cases,
    ipv4s,
    networks,
    raw_networks,
    resolve_all,
    resolve_none,
    resolver_cases,
)

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
