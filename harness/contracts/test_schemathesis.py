"""Contract: every operation of the providers' OpenAPI documents answers as its document says (Schemathesis).

For each document in :data:`harness.openapi.runner.SPECS` whose provider the target covers, each operation is fuzzed
with positive requests and every response must pass ``not_a_server_error`` and the conformance checks (status
code documented, content type, response headers, response body schema). Documents with links also run link
scenarios (create → get, delete, pause, … by the new id). The execd and egress documents run in a sandbox
created for the test and reached through the lifecycle ``endpoints`` API.

Example counts follow the Hypothesis profile: each operation gets ``max_examples // OPERATION_SHARE`` cases and
each document ``max_examples // SCENARIO_SHARE`` scenarios (the ``ci`` profile: 5 and 15). Checks a target
fails for an accepted reason are listed in :data:`harness.openapi.runner.SCHEMA_DEVIATIONS` and excluded for exactly
those operations; the mock-only entries (what the mock does not emulate) apply only to sandproof mocks.
"""

from __future__ import annotations

import pytest

pytest.importorskip("schemathesis", reason="the OpenAPI contracts need schemathesis (pip install 'sandproof[harness]')")

from hypothesis import settings

from harness.openapi.runner import (
    CLOUD_SKIP,
    SPECS,
    SandboxUnavailable,
    bind_contract,
    operation_labels,
    register_schema_deviations,
    target_skip_reason,
)
from harness.targets import Target

OPERATION_SHARE = 12
SCENARIO_SHARE = 4
MIN_EXAMPLES = 5

register_schema_deviations()


def _examples(share: int) -> int:
    """Return this profile's example count for one operation or one document's scenarios."""
    return max(MIN_EXAMPLES, settings().max_examples // share)


def _operation_params() -> list[object]:
    """Return one parameter per document operation, marked with the document's provider and report row."""
    return [
        pytest.param(
            name,
            label,
            marks=pytest.mark.contract(spec.provider, spec.row),
            id=f"{name}:{label.replace(' ', ':')}",
        )
        for name, spec in SPECS.items()
        for label in operation_labels(name)
    ]


@pytest.mark.parametrize(("spec", "label"), _operation_params())
def test_operation_conforms(spec: str, label: str, sandproof_target: Target) -> None:
    """Fuzz one operation and check every response against the document."""
    reason = target_skip_reason(spec, label, sandproof_target)
    if reason is not None:
        pytest.skip(reason)
    try:
        with bind_contract(spec, sandproof_target) as contract:
            contract.run_operation(label, _examples(OPERATION_SHARE))
            assert contract.calls > 0, f"{label}: no request was sent"
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(name, marks=pytest.mark.contract(spec.provider, spec.row), id=f"{name}:links")
        for name, spec in SPECS.items()
        if spec.stateful_paths
    ],
)
def test_linked_operations_conform(spec: str, sandproof_target: Target) -> None:
    """Run link scenarios (create, then act on the new resource) and check every response."""
    if sandproof_target.kind == "cloud":
        pytest.skip(CLOUD_SKIP)
    try:
        with bind_contract(spec, sandproof_target) as contract:
            contract.run_stateful(_examples(SCENARIO_SHARE))
            assert contract.calls > 0, f"{spec}: the link scenarios sent no request"
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
