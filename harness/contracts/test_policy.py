"""Contract: the target's network-policy engine passes every policy check of its provider.

With ``--target mock`` the engines are the reference adapters the mocks use; with ``policy:MODULE:ATTR`` it
is the loaded engine. The number of examples per check follows the Hypothesis profile (``max_examples``).
Every check is tagged with its strength (:mod:`harness.strength`): ``spec`` and ``observed`` checks fail the
test, a ``choice`` check that does not hold is recorded as differing from sandproof's choice and fails it only
with ``--sandproof-strict``. The ``nemo-gym-network`` contract runs NeMo Gym's ``restrict_sandbox_network``
(the reference) with the target's engine judging the policies it builds.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import settings

from harness.policy import sandbox_network
from harness.strength import record_results, strict_mode
from harness.targets import Target

CHECK_MODULES = {"tensorlake": "harness.policy.tensorlake.checks", "opensandbox": "harness.policy.opensandbox"}


def _describe(result: Any) -> str:
    """Return one failed check as a bullet line."""
    detail = getattr(result, "counterexample", None) or getattr(result, "message", None) or "failed"
    return f"- {result.name} ({result.strength}): {detail}"


def _judge(results: Sequence[Any], what: str) -> None:
    """Record every result in the test's ledger and fail on the ones that fail the run under its mode."""
    assert results, f"{what} ran no checks"
    failed = record_results(results)
    names = ", ".join(r.name for r in failed)
    mode = " (strict)" if strict_mode() else ""
    assert not failed, f"{len(failed)} of {len(results)} {what} checks failed{mode}: {names}\n" + "\n".join(
        _describe(r) for r in failed
    )


@pytest.mark.parametrize(
    "provider",
    [
        pytest.param(p, marks=pytest.mark.contract(p, "network-policy", requires=("engine",)), id=p)
        for p in CHECK_MODULES
    ],
)
def test_policy_engine_passes_checks(provider: str, sandproof_target: Target) -> None:
    """Run every policy check against the target's engine and list the failures."""
    checks = importlib.import_module(CHECK_MODULES[provider])
    engine = sandproof_target.engine(provider)
    _judge(checks.run_checks(engine, max_examples=settings().max_examples), f"{provider} policy")


@pytest.mark.parametrize(
    "provider",
    [
        pytest.param(p, marks=pytest.mark.contract(p, "nemo-gym-network", requires=("engine",)), id=p)
        for p in CHECK_MODULES
    ],
)
def test_restrict_sandbox_network_is_enforced(provider: str, sandproof_target: Target) -> None:
    """Run the restrict_sandbox_network checks, the target's engine judging the policies it builds."""
    engine = sandproof_target.engine(provider)
    results = sandbox_network.run_checks(engine, max_examples=max(10, settings().max_examples // 4))
    _judge(results, f"{provider} restrict_sandbox_network")
