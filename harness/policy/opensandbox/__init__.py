"""Hypothesis-driven contract checks for any OpenSandbox network-policy engine speaking the JSON protocol.

An engine has ``kind``, ``validate(policy)``, ``allows_egress(policy, host)``, ``merge(policy, rules)`` and
``delete(policy, targets)`` (see ``contracts.opensandbox_adapter``). ``run_checks`` runs every check against
it and returns one :class:`harness.strength.CheckResult` per check, carrying the check's contract (strength
and source). The checks live in :mod:`harness.policy.opensandbox.checks`, the strategies in
:mod:`harness.policy.opensandbox.strategies`.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st

from harness.policy.opensandbox.checks import CHECKS, CONTRACTS, SUITE, Check
from harness.policy.opensandbox.strategies import (
    OpenSandboxEngine,
    hosts_near,
    invalid_policy_json,
    normal_form,
    policy_json,
    rule_json,
    target_json,
)
from harness.strength import CheckResult

__all__ = [
    "CHECKS",
    "CONTRACTS",
    "SUITE",
    "CheckResult",
    "OpenSandboxEngine",
    "hosts_near",
    "invalid_policy_json",
    "normal_form",
    "policy_json",
    "rule_json",
    "run_checks",
    "target_json",
]


def _run_check(name: str, check: Check, engine: OpenSandboxEngine, config: settings, at: int) -> CheckResult:
    """Run one check under Hypothesis and capture its minimal counterexample."""

    @config
    @seed(at)
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        check(engine, data)

    try:
        prop()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        return CheckResult(name, False, text if len(text) <= 2000 else text[:2000] + "…", contract=CONTRACTS[name])
    return CheckResult(name, True, contract=CONTRACTS[name])


def run_checks(
    engine: OpenSandboxEngine,
    max_examples: int = 100,
    checks: tuple[str, ...] | None = None,
    at_seed: int = 0,
    stop_on_failure: bool = False,
    strict: bool = False,
    shrink: bool = True,
) -> list[CheckResult]:
    """Run the named checks (all by default, in the order given) against ``engine`` and return their results.

    ``stop_on_failure`` stops at the first check that fails the run (under ``strict``, a differing choice too);
    ``shrink=False`` reports the first failing input found instead of a minimal one (faster).
    """
    config = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        derandomize=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, *((Phase.shrink,) if shrink else ())),
    )
    results: list[CheckResult] = []
    for name in checks if checks is not None else tuple(CHECKS):
        results.append(_run_check(name, CHECKS[name], engine, config, at_seed))
        if stop_on_failure and results[-1].fails_run(strict):
            break
    return results
