"""Example tests written against the sandproof pytest plugin (documented in docs/harness.md).

The first two drive the real OpenSandbox SDK against the mock, over a socket and in process; the last two
are contracts that run against whatever ``--sandproof-target`` names and are skipped when it cannot serve
them.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig

from harness.reporting.report import register_deviation
from harness.targets import RunningMock, Target

register_deviation(
    "opensandbox",
    "execd",
    "a direct request to a sandbox that is not running answers 502 at once",
    "a real paused container would hang and a deleted one refuse the connection; tests should not wait",
)


@pytest.mark.sdk("opensandbox", "create-run-kill")
def test_sdk_runs_a_command_on_the_mock(opensandbox_mock: RunningMock) -> None:
    """The SDK finds the mock through the env vars the fixture set; the journal shows what it sent."""

    async def flow() -> str:
        sandbox = await Sandbox.create("python:3.11", connection_config=ConnectionConfig())
        try:
            result = await sandbox.commands.run("echo hello")
            return "".join(line.text for line in result.logs.stdout)
        finally:
            await sandbox.kill()

    assert asyncio.run(flow()) == "hello\n"
    opensandbox_mock.mock.journal.assert_called("POST", "/v1/sandboxes", times=1)


@pytest.mark.sdk("opensandbox", "list")
def test_sdk_in_process_through_the_asgi_transport(opensandbox_asgi: httpx.ASGITransport) -> None:
    """No socket at all: the SDK's single shared transport goes straight into the mock's ASGI app."""
    config = ConnectionConfig(domain="opensandbox.test", transport=opensandbox_asgi, disable_metrics=True)

    async def flow() -> int:
        from opensandbox import SandboxManager
        from opensandbox.models.sandboxes import SandboxFilter

        manager = await SandboxManager.create(connection_config=config)
        try:
            return len((await manager.list_sandbox_infos(SandboxFilter())).sandbox_infos)
        finally:
            await manager.close()

    assert asyncio.run(flow()) == 0


@pytest.mark.contract("opensandbox", "list")
def test_list_answers_a_json_page(sandproof_target: Target) -> None:
    """Any OpenSandbox server lists sandboxes as JSON (runs against mock and opensandbox:URL targets)."""
    key = sandproof_target.api_key("opensandbox")
    response = httpx.get(
        sandproof_target.url("opensandbox") + "/v1/sandboxes",
        headers={"OPEN-SANDBOX-API-KEY": key} if key else {},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert isinstance(response.json().get("items"), list)


@pytest.mark.contract("opensandbox", "list", requires=("api", "admin"))
def test_list_surfaces_an_injected_503(sandproof_target: Target) -> None:
    """With the /_mock admin API a contract can inject faults (skipped on servers without it)."""
    admin = sandproof_target.admin_client("opensandbox")
    url = sandproof_target.url("opensandbox") + "/v1/sandboxes"
    key = sandproof_target.api_key("opensandbox") or ""
    try:
        admin.add_fault(method="GET", path="/v1/sandboxes", status=503, times=1)
        assert httpx.get(url, headers={"OPEN-SANDBOX-API-KEY": key}, timeout=10).status_code == 503
        assert httpx.get(url, headers={"OPEN-SANDBOX-API-KEY": key}, timeout=10).status_code == 200
    finally:
        admin.clear_faults()
        admin.close()
