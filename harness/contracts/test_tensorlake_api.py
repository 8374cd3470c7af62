"""Contract: the target's TensorLake API answers every request as the mock's own state model predicts.

One test per rule group of :data:`harness.machines.tensorlake.machine.OPERATIONS` (``lifecycle``, ``update``,
``ports-ingress``, ``suspend-resume``, ``egress-probe``, ``faults``, ``timeouts`` and ``state-machine``, which
runs every rule together), each reported as its own operation. ``faults`` and ``timeouts`` need the ``/_mock``
admin API of a target the run may reset (a URL target only with ``--allow-reset``). On the ``mock`` target the machine drives the in-process threaded mock over its loopback URL; on
``tensorlake-cloud`` it drives the real service (lifecycle calls go to the ``sandbox.`` host, as the SDK's
do) and its egress probes run ``getent``/``curl`` inside real sandboxes.

Budget from the Hypothesis profile: ``state-machine`` runs ``max_examples // 2`` programs, every other group
``max_examples // GROUP_SHARE`` (at least ``MIN_EXAMPLES``); programs are 10 steps long up to 100 examples,
30 above (``thorough``). A failure prints the shrunk program, ``@reproduce_failure`` and the seed with the
command line that replays it. A ``tensorlake:URL`` target gets the key in ``TENSORLAKE_API_KEY`` (the preflight
stops the run when the server wants one and it is not set), or a key of the run's own when the server takes
any key (a sandproof mock: the run is then a tenant of its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import settings

from harness.machines.common import admin_session, contract_params
from harness.machines.tensorlake.machine import (
    ADMIN_OPERATIONS,
    DEFAULT_KEY,
    OPERATIONS,
    make_machine,
)
from harness.machines.tensorlake.run import (
    http_clients,
    machine_settings,
    run_machine,
)
from harness.targets import Target
from mockserver.admin.client import AdminClient

PROVIDER = "tensorlake"
GROUP_SHARE = 4
MIN_EXAMPLES = 5


def _examples(operation: str) -> int:
    """Return this profile's number of programs for one rule group."""
    total = settings().max_examples
    share = 2 if operation == "state-machine" else GROUP_SHARE
    return max(MIN_EXAMPLES, total // share)


def _params() -> list[object]:
    """Return one parameter per rule group, marked with its report operation and needs."""
    return contract_params(PROVIDER, OPERATIONS, ADMIN_OPERATIONS)


def lifecycle_url(target: Target) -> str:
    """Return the base URL of the lifecycle API: the ``sandbox.`` host for the cloud, else the target's URL."""
    url = target.url(PROVIDER)
    if target.kind != "cloud":
        return url
    parts = urlsplit(url)
    host = parts.netloc.removeprefix("api.")
    return urlunsplit((parts.scheme, f"sandbox.{host}", parts.path, "", ""))


@pytest.fixture
def admin(sandproof_target: Target) -> Iterator[AdminClient | None]:
    """Yield the target's admin client (None without the admin API), restoring its clock mode and state after."""
    yield from admin_session(sandproof_target, PROVIDER)


@pytest.mark.parametrize("operation", _params())
def test_tensorlake_api_matches_the_model(
    operation: str, sandproof_target: Target, admin: AdminClient | None, request: pytest.FixtureRequest
) -> None:
    """Run the rule group's state machine against the target; every answer must match the model."""
    machine = make_machine(
        http_clients(lifecycle_url(sandproof_target), api_key=sandproof_target.api_key(PROVIDER) or DEFAULT_KEY),
        admin=admin,
        operations=[operation],
    )
    run_machine(
        machine,
        settings=machine_settings(max_examples=_examples(operation)),
        replay=f"pytest {request.node.nodeid} --sandproof-target={sandproof_target.spec}",
    )
