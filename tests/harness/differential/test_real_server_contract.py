"""The OpenSandbox lifecycle contract, run against the real opensandbox-server 1.1.1 as well as the mock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from harness.differential.real_server import RealOpenSandboxServer
from harness.machines.opensandbox.machine import make_machine
from harness.machines.opensandbox.run import http_clients, machine_settings, run_machine

#: The groups a real server on a fake Docker engine can serve: no execd or egress sidecar runs there.
GROUPS = ("lifecycle", "pause-resume", "renew", "endpoints")


@pytest.fixture(scope="module")
def real() -> Iterator[RealOpenSandboxServer]:
    with RealOpenSandboxServer() as server:
        yield server


@pytest.mark.parametrize("group", GROUPS)
def test_real_server_passes_the_lifecycle_contract(real: RealOpenSandboxServer, group: str) -> None:
    machine = make_machine(http_clients(real.url, api_key=real.api_key), operations=[group], egress=False)
    run_machine(machine, settings=machine_settings(settings(max_examples=8, database=None), steps=6), seed=1)
