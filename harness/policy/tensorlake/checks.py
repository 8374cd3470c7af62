"""Engine-generic property checks for TensorLake egress engines, each tagged with its contract strength.

An engine is any object following ``contracts.tensorlake_adapter.TensorLakeEngine`` (plain JSON values in
and out). Every ``check_*`` function takes an engine and returns a ``CheckResult`` carrying its contract
(strength ``spec``, ``observed`` or ``choice`` and the source); ``run_checks`` runs them all (or a chosen
subset) and returns one result per check::

    from harness.policy.tensorlake.checks import run_checks
    failures = [r for r in run_checks(my_engine) if r.fails_run(strict=False)]

Fixed-example checks come first (the networking docs' table and examples, then every entry form against its
documented neighbours: :mod:`harness.policy.tensorlake.boundaries`), then Hypothesis properties: the
table rows stated directly, decisions against the reference, updates and validation, and the spellings the
docs leave to sandproof. The ``spec`` checks compare behaviour (accept or reject, the egress decision per
destination, the DNS decision per resolver); how a policy is stored is a ``choice``.

The strategies live in :mod:`harness.policy.tensorlake.strategies`; the checks in ``examples``, ``table``,
``properties``, ``updates`` and ``spelling``; this module gathers them and runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.boundaries import BOUNDARY_CHECKS
from harness.policy.tensorlake.examples import (
    check_choice_examples,
    check_dns_table,
    check_docs_examples,
    check_invalid_examples,
    check_tristate_examples,
)
from harness.policy.tensorlake.properties import (
    check_allow_never_allows_less,
    check_cidr_bounds,
    check_deny_never_allows_more,
    check_deny_precedence,
    check_dns_agrees,
    check_dns_cidr_resolver,
    check_egress_agrees,
    check_hostname_follows_dns,
    check_wildcard_apex,
)
from harness.policy.tensorlake.runner import CheckFailed, CheckResult, run_named
from harness.policy.tensorlake.spelling import check_case_insensitive, check_idna
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
from harness.policy.tensorlake.table import (
    check_row_allow_internet,
    check_row_blocked,
    check_row_no_internet,
    check_row_open,
)
from harness.policy.tensorlake.updates import (
    check_documented_forms,
    check_patch_tristate,
    check_port_suffix,
    check_stored_form,
    check_stored_policy_decides_alike,
    check_unresolvable_rejected,
    check_validation_agrees,
    check_wildcards_not_resolved,
)
from harness.strength import Contract

Check = Callable[..., CheckResult]

#: Every check, in run order; each carries its ``contract`` (see :func:`harness.strength.tagged`).
_ORDERED: tuple[Check, ...] = (
    check_dns_table,
    check_docs_examples,
    check_tristate_examples,
    check_invalid_examples,
    check_choice_examples,
    *BOUNDARY_CHECKS,
    check_row_open,
    check_row_allow_internet,
    check_row_no_internet,
    check_row_blocked,
    check_wildcard_apex,
    check_cidr_bounds,
    check_egress_agrees,
    check_dns_agrees,
    check_dns_cidr_resolver,
    check_deny_precedence,
    check_hostname_follows_dns,
    check_patch_tristate,
    check_stored_policy_decides_alike,
    check_port_suffix,
    check_documented_forms,
    check_unresolvable_rejected,
    check_deny_never_allows_more,
    check_allow_never_allows_less,
    check_case_insensitive,
    check_idna,
    check_stored_form,
    check_validation_agrees,
    check_wildcards_not_resolved,
)


def contract_of(check: Check) -> Contract:
    """Return the contract a check was tagged with."""
    contract: Contract = getattr(check, "contract")  # noqa: B009 (set by @tagged)
    return contract


CHECKS: dict[str, Check] = {contract_of(check).name: check for check in _ORDERED}
BOUNDARIES = tuple(contract_of(check).name for check in BOUNDARY_CHECKS)
EXAMPLE_CHECKS = ("dns_table", "docs_examples", "tristate_examples", "invalid_examples", "choice_examples", *BOUNDARIES)
PROPERTY_CHECKS = tuple(name for name in CHECKS if name not in EXAMPLE_CHECKS)
#: The contracts of the checks, by check name.
CONTRACTS: dict[str, Contract] = {name: contract_of(check) for name, check in CHECKS.items()}

__all__ = [
    "BOUNDARIES",
    "CHECKS",
    "CONTRACTS",
    "EXAMPLE_CHECKS",
    "PROPERTY_CHECKS",
    "CheckFailed",
    "CheckResult",
    "allow_entries",
    "cidrs",
    "contract_of",
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


def run_checks(
    engine: TensorLakeEngine,
    *,
    max_examples: int = 60,
    derandomize: bool = True,
    only: Iterable[str] | None = None,
    fail_fast: bool = False,
    strict: bool = False,
    shrink: bool = True,
) -> list[CheckResult]:
    """Run the checks (all, or the names in ``only``, in that order) against ``engine``; one result each.

    ``derandomize`` makes runs repeatable; ``fail_fast`` stops at the first check that fails the run (under
    ``strict``, a differing choice too); ``shrink=False`` reports the first failing input found instead of a
    minimal one (faster).
    """
    return run_named(
        CHECKS, engine, only, fail_fast=fail_fast, strict=strict,
        max_examples=max_examples, derandomize=derandomize, shrink=shrink,
    )  # fmt: skip
