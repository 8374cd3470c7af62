"""Contract: the target's OpenSandbox API answers every request as the mock's own state model predicts.

One test per rule group of :data:`harness.machines.opensandbox.machine.OPERATIONS` (``lifecycle``, ``pause-resume``,
``renew``, ``endpoints``, ``execd``, ``egress-policy``, ``faults``, ``expiry``, ``proxy-headers`` and
``state-machine``, which runs every rule together), each reported as its own operation. ``proxy-headers`` is
skipped, with the reason, where no app behind a sandbox's port reports the request it received. ``faults`` and
``expiry`` need the ``/_mock`` admin API of a target the run may reset (a URL target only with
``--allow-reset``); on the ``mock`` target the machine drives the in-process threaded mock over its loopback URL.
A target whose sandboxes have no egress sidecar (:func:`harness.targets.sidecar.sidecar_missing`) skips
``egress-policy`` with that reason, and the other groups leave out the rules that talk to the sidecar (creates with
a policy still run).

Budget from the Hypothesis profile: ``state-machine`` runs ``max_examples`` programs, every other group
``max_examples // GROUP_SHARE`` (at least ``MIN_EXAMPLES``); programs are 10 steps long up to 100 examples,
40 above (``thorough``). A failure prints the shrunk program, ``@reproduce_failure`` and the seed
(``--hypothesis-seed``); see ``docs/opensandbox-contract.md``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from harness.machines.common import admin_session, contract_params
from harness.machines.opensandbox.machine import (
    ADMIN_OPERATIONS,
    OPERATIONS,
    make_machine,
)
from harness.machines.opensandbox.proxy_rules import NOTHING_BEHIND, PROXY_HEADERS
from harness.machines.opensandbox.run import (
    http_clients,
    machine_settings,
    run_machine,
)
from harness.strength import current
from harness.targets import Target
from harness.targets.sidecar import sidecar_missing
from mockserver.admin.client import AdminClient

PROVIDER = "opensandbox"
GROUP_SHARE = 4
MIN_EXAMPLES = 5


def _examples(operation: str) -> int:
    """Return this profile's number of programs for one rule group."""
    total = settings().max_examples
    return total if operation == "state-machine" else max(MIN_EXAMPLES, total // GROUP_SHARE)


def _params() -> list[object]:
    """Return one parameter per rule group, marked with its report operation and needs."""
    return contract_params(PROVIDER, OPERATIONS, ADMIN_OPERATIONS)


@pytest.fixture
def admin(sandproof_target: Target) -> Iterator[AdminClient | None]:
    """Yield the target's admin client (None without the admin API), restoring its clock mode and state after."""
    yield from admin_session(sandproof_target, PROVIDER)


@pytest.mark.parametrize("operation", _params())
def test_opensandbox_api_matches_the_model(
    operation: str, sandproof_target: Target, admin: AdminClient | None, request: pytest.FixtureRequest
) -> None:
    """Run the rule group's state machine against the target; every answer must match the model."""
    url = sandproof_target.url(PROVIDER)
    api_key = sandproof_target.api_key(PROVIDER)
    no_sidecar = sidecar_missing(url, api_key)
    if no_sidecar is not None and operation == "egress-policy":
        pytest.skip(no_sidecar)
    if no_sidecar is not None:
        print(f"rules that talk to the egress sidecar left out: {no_sidecar}")
    machine = make_machine(
        http_clients(url, api_key=api_key), admin=admin, operations=[operation], sidecar=no_sidecar is None
    )
    replay = (
        f"pytest '{request.node.path}::{request.node.name}' --sandproof-target={sandproof_target.spec} "
        f"--hypothesis-profile={settings.get_current_profile_name()}"
    )
    run_machine(machine, settings=machine_settings(max_examples=_examples(operation)), replay=replay)
    book = current()
    if operation == "proxy-headers" and book is not None and PROXY_HEADERS.key not in book.by_contract:
        pytest.skip(NOTHING_BEHIND)
