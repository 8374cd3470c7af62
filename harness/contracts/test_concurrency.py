"""Contract: concurrent clients see the target's sandboxes change atomically (every history is linearizable).

N clients (``--sandproof-concurrency=N``, ``sandproof check --concurrency N``; 4 by default, 0 skips) run
random operations on a few shared sandboxes at once and record when each request was sent and answered;
every sandbox's history must then be explainable by running the operations one at a time, each at an
instant inside its request, through the mock's own model (:mod:`harness.concurrency`). TensorLake: create,
GET, list, delete, and PATCH ``network`` in its three forms (a policy, ``null``, omitted); OpenSandbox:
create, GET, list, delete, and the egress sidecar's GET, PATCH (merge) and DELETE on ``/policy`` (left out where
the target's sandboxes have no sidecar: :func:`harness.targets.sidecar.sidecar_missing`). A 5xx answer says the
server failed without saying what took effect: the operation counts as lost (it may or may not have taken
effect), as a dropped connection does; the 5xx itself is for the API contracts to judge.

Budget from the Hypothesis profile: ``max(50, 1.5 * max_examples)`` operations per client (``ci``: 90).
With the ``/_mock`` admin API of a target the run may reset (the mock target, or a URL with ``--allow-reset``) the
target is reset and its clock held (manual) for the run, and error codes are compared too; otherwise the run
deletes what it created and touches nothing else. The seed is ``--hypothesis-seed`` when given,
else random; a failure prints it with the replay command and the witnesses (see ``docs/harness.md``). The outcome
is recorded under the provider's tagged contract (:data:`harness.concurrency.runner.CONTRACTS`, ``spec``). With
``--sandproof-report=DIR`` each provider's history and verdicts go to ``DIR/concurrency-<provider>.json``.
Under ``--sandproof-runtime=linux`` on the in-process mock target, every policy change that returned is
followed by an egress probe from inside the sandbox (:mod:`harness.concurrency.egress_probe`): a connection
to a destination the new policy denies that still succeeds fails the run.
"""

from __future__ import annotations

import secrets

import pytest
from hypothesis import settings

from harness.concurrency.runner import CONTRACTS, PROVIDERS, run_provider
from harness.concurrency.workload import EgressProbe
from harness.plugin import sandproof_state
from harness.strength import record
from harness.targets import Target
from harness.targets.sidecar import sidecar_missing

MIN_PER_CLIENT = 50
PER_EXAMPLE = 1.5


def operations_per_client() -> int:
    """Return this profile's operations per client."""
    return max(MIN_PER_CLIENT, int(PER_EXAMPLE * settings().max_examples))


def _seed() -> int:
    """Return ``--hypothesis-seed`` when given, else a fresh seed."""
    from hypothesis import core

    forced = core.global_force_seed
    return int(forced) if isinstance(forced, int) else secrets.randbits(32)


@pytest.mark.parametrize(
    "provider", [pytest.param(p, marks=pytest.mark.contract(p, "concurrency"), id=p) for p in PROVIDERS]
)
def test_concurrent_histories_are_linearizable(
    provider: str, sandproof_target: Target, request: pytest.FixtureRequest
) -> None:
    """Run the concurrent workload on the target; every sandbox's history must be linearizable."""
    clients = int(request.config.getoption("sandproof_concurrency"))
    if clients <= 0:
        pytest.skip("the concurrency contract is off (--sandproof-concurrency=0)")
    if sandproof_target.kind == "cloud":
        pytest.skip("the concurrency contract is not run against the real cloud (it creates sandboxes fast)")
    url = sandproof_target.url(provider)
    admin = sandproof_target.admin_client(provider) if sandproof_target.admin_writable(provider) else None
    state = sandproof_state(request.config)
    dump = state.report_dir / f"concurrency-{provider}.json" if state.report_dir is not None else None
    seed = _seed()
    no_sidecar = sidecar_missing(url, sandproof_target.api_key(provider)) if provider == "opensandbox" else None
    if no_sidecar is not None:
        print(f"the sidecar's /policy requests are left out: {no_sidecar}")
    probe: EgressProbe | None = None
    if state.runtime == "linux" and sandproof_target.kind == "mock" and not state.container:
        from harness.concurrency.egress_probe import LinuxEgressProbe

        probe = LinuxEgressProbe({provider: state.mocks().core(provider)})
    try:
        result = run_provider(
            provider,
            url,
            api_key=sandproof_target.api_key(provider),
            admin=admin,
            clients=clients,
            operations=clients * operations_per_client(),
            seed=seed,
            probe=probe,
            history_file=dump,
            sidecar=no_sidecar is None,
        )
    finally:
        if admin is not None:
            admin.close()
    request.node.user_properties += [
        ("operations", result.operations),
        ("histories", result.histories),
        ("violations", result.violations),
        ("unknown", result.unknown),
    ]
    replay = (
        f"pytest '{request.node.path}::{request.node.name}' --sandproof-target={sandproof_target.spec} "
        f"--sandproof-concurrency={clients} --hypothesis-seed={seed}"
    )
    print(result.summary())
    if probe is not None:
        counts = f"{getattr(probe, 'probes', 0)} probes, {getattr(probe, 'conclusive', 0)} conclusive"
        print(f"egress probes: {counts}, {len(result.probe_findings)} found a denied destination reachable")
        request.node.user_properties.append(("egress_probes", counts))
    witnesses = "\n\n".join(result.witnesses[:1] + result.probe_findings[:1]) or None
    record(CONTRACTS[provider], result.passed, witnesses, result.summary())
    assert result.histories > 0, f"the workload checked no sandbox history: {result.summary()}"
    assert result.passed, f"{result.report()}\n\nreplay (the thread interleaving will differ): {replay}"
