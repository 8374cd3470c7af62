"""Contract: the target's network-policy engine passes every policy check of its provider.

With ``--target mock`` the engines are the reference adapters the mocks use; with ``policy:MODULE:ATTR`` it
is the loaded engine. The number of examples per check follows the Hypothesis profile (``max_examples``).
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import settings

from harness.targets import Target

CHECK_MODULES = {"tensorlake": "harness.policy.tensorlake.checks", "opensandbox": "harness.policy.opensandbox"}


def _describe(result: Any) -> str:
    """Return one failed check as a bullet line."""
    detail = getattr(result, "counterexample", None) or getattr(result, "message", None) or "failed"
    return f"- {result.name}: {detail}"


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
    results = checks.run_checks(engine, max_examples=settings().max_examples)
    assert results, f"harness.policy_{provider} ran no checks"
    failed = [r for r in results if not r.passed]
    names = ", ".join(r.name for r in failed)
    assert not failed, f"{len(failed)} of {len(results)} {provider} policy checks failed: {names}\n" + "\n".join(
        _describe(r) for r in failed
    )
