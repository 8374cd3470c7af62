"""Acceptance: NeMo Gym 0.7.0's ``OpenSandboxProvider`` against ``sandproof serve``, faults armed over HTTP only.

``sandproof serve`` runs as a subprocess on free ports. The test reaches it only over HTTP: the provider
through the lifecycle API and execd, the test through ``/_mock/faults/catalogue`` (arming named faults) and
``/_mock/journal`` (what the provider sent). There is no Python access to the mock object.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.serving import served_opensandbox

from .conftest import run

KEY = "a-key-of-my-own-ci"


@pytest.fixture(scope="module")
def gym() -> ModuleType:
    """Import the provider; fail loudly (never skip) when NeMo Gym is missing."""
    try:
        return importlib.import_module("nemo_gym.sandbox.providers.opensandbox")
    except Exception as exc:
        pytest.fail(f"nemo_gym 0.7.0 cannot be imported ({type(exc).__name__}: {exc})")


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """Run ``sandproof serve`` on free ports; yield the OpenSandbox mock's URL."""
    with served_opensandbox() as url:
        yield url


@pytest.fixture
def admin(served: str) -> Iterator[httpx.Client]:
    """Return a client of the served mock's admin API, on a fresh state."""
    with httpx.Client(base_url=f"{served}/_mock", timeout=10) as client:
        assert client.post("/reset").status_code == 200
        yield client


def arm(admin: httpx.Client, name: str, **params: Any) -> dict[str, Any]:
    """Arm a named fault over HTTP and return what was armed."""
    resp = admin.post(f"/faults/catalogue/{name}", json=params)
    assert resp.status_code == 201, resp.text
    armed: dict[str, Any] = resp.json()
    return armed


def journal(admin: httpx.Client, **query: Any) -> list[dict[str, Any]]:
    """Return the served mock's journal entries matching ``query`` (without bodies)."""
    entries: list[dict[str, Any]] = admin.get("/journal", params={**query, "brief": 1}).json()
    return entries


def provider(gym: ModuleType, url: str, **overrides: dict[str, Any]) -> Any:
    """Build the provider the way the NeMo Gym notes recommend for tests, pointed at the served mock."""
    blocks: dict[str, dict[str, Any]] = {
        "connection": {
            "domain": url.split("://", 1)[1],
            "protocol": "http",
            "api_key": KEY,
            "transport_backend": "httpx",
            "request_timeout_s": 10,
        },
        "create": {"retries": 0, "connect_poll_s": 0.2},
        "operations": {"retries": 1, "retry_delay_s": 0.05, "retry_max_delay_s": 0.1, "pause_resume_timeout_s": 10},
        "attribution": {"team": "t", "user": "u", "workload": "w", "run": "served-1"},
    }
    for name, values in overrides.items():
        blocks[name] = {**blocks.get(name, {}), **values}
    return gym.OpenSandboxProvider(**blocks)


def spec() -> Any:
    from nemo_gym.sandbox.providers.base import SandboxSpec

    return SandboxSpec(image="python:3.11")


def test_a_pending_pod_is_waited_out(gym: ModuleType, served: str, admin: httpx.Client) -> None:
    arm(admin, "pending_pod", times=4)

    async def scenario() -> None:
        p = provider(gym, served)
        handle = await p.create(spec())
        assert (await p.exec(handle, "echo ready")).stdout == "ready\n"
        await p.close(handle)
        await p.aclose()

    run(scenario())
    refused = journal(admin, method="GET", path="/v1/sandboxes/*/endpoints/*", status=404)
    assert len(refused) == 4


@pytest.mark.parametrize(
    ("wording", "reported"),
    [("docker-1.1.1", "unreachable through 2 submissions"), ("docker-oomkilled-flag", "Sandbox was OOM-killed")],
)
def test_oom_on_the_next_exec(gym: ModuleType, served: str, admin: httpx.Client, wording: str, reported: str) -> None:
    async def scenario() -> None:
        p = provider(gym, served)
        handle = await p.create(spec())
        arm(admin, "oom_on_next_exec", sandbox_id=handle.sandbox_id, wording=wording)
        with pytest.raises(gym.provider.SandboxBackendUnreachableError, match=reported):
            await p.exec(handle, "echo x")
        from nemo_gym.sandbox.providers.base import SandboxStatus

        assert await p.status(handle) == SandboxStatus.ERROR
        await p.close(handle)
        await p.aclose()

    run(scenario())
    assert [e["status"] for e in journal(admin, method="POST", path="/direct/*/44772/command")][-2:] == [502, 502]


def test_a_pause_that_ends_in_failed(gym: ModuleType, served: str, admin: httpx.Client) -> None:
    from nemo_gym.sandbox.providers.base import SandboxStatus

    async def scenario() -> None:
        p = provider(gym, served)
        handle = await p.create(spec())
        arm(admin, "fail_next_transition", sandbox_id=handle.sandbox_id, operation="pause")
        with pytest.raises(RuntimeError, match="entered error while pausing"):
            await p.pause(handle)
        assert await p.status(handle) == SandboxStatus.ERROR
        arm(admin, "recover", sandbox_id=handle.sandbox_id)
        assert await p.status(handle) == SandboxStatus.RUNNING
        await p.close(handle)
        await p.aclose()

    run(scenario())


def test_inspect_shows_the_limits_the_provider_asked_for_and_the_oom_kill(
    gym: ModuleType, served: str, admin: httpx.Client
) -> None:
    """The diagnostics a later provider reads (``resource_allocation``, the opt-in inspect OOM evidence; neither
    is in 0.7.0): the limits 0.7.0 sends, and ``OOMKilled: True`` where the status words only "exit code 137"."""
    from nemo_gym.sandbox.providers.base import SandboxResources, SandboxSpec

    async def scenario() -> str:
        p = provider(gym, served)
        handle = await p.create(SandboxSpec(image="python:3.11", resources=SandboxResources(cpu=2, memory_mib=768)))
        arm(admin, "oom_on_next_exec", sandbox_id=handle.sandbox_id, wording="docker-1.1.1")
        with pytest.raises(gym.provider.SandboxBackendUnreachableError, match="unreachable through"):
            await p.exec(handle, "echo x")
        await p.aclose()
        return str(handle.sandbox_id)

    sandbox_id = run(scenario())
    with httpx.Client(base_url=served, headers={"OPEN-SANDBOX-API-KEY": KEY}, timeout=10) as api:
        inspect = api.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/inspect").text.split("\n")
    assert "  CPU:          2.00 cores" in inspect and "  Memory:       768 MiB" in inspect
    assert "OOMKilled:      True" in inspect and "Exit Code:      137" in inspect


def test_a_pause_that_never_ends_times_out(gym: ModuleType, served: str, admin: httpx.Client) -> None:
    """NG-F11: a sandbox that stays Pausing makes the provider's pause raise its TimeoutError."""
    from nemo_gym.sandbox.providers.base import SandboxStatus

    async def scenario() -> None:
        p = provider(gym, served, operations={"pause_resume_timeout_s": 1})
        handle = await p.create(spec())
        arm(admin, "stall_next_transition", sandbox_id=handle.sandbox_id, operation="pause")
        with pytest.raises(TimeoutError, match=r"Timed out waiting for OpenSandbox sandbox .* to pause after 1s"):
            await p.pause(handle)
        assert await p.status(handle) not in (SandboxStatus.PAUSED, SandboxStatus.ERROR)
        await p.close(handle)
        await p.aclose()

    run(scenario())
    polls = journal(admin, method="GET", path="/v1/sandboxes/*")
    assert len(polls) >= 2  # it kept polling the Pausing sandbox


def test_renewals_that_keep_failing_fail_the_next_operation(gym: ModuleType, served: str, admin: httpx.Client) -> None:
    """NG-F12: the renewal task gives up; the next exec raises without sending anything."""
    from nemo_gym.sandbox.providers.base import SandboxSpec

    async def scenario() -> None:
        p = provider(gym, served, create={"renew_interval_s": 0.05})
        arm(admin, "renew_fails")
        handle = await p.create(SandboxSpec(image="python:3.11", ttl_s=600))
        for _ in range(200):  # the task gives up after operations.retries + 1 failed renewals
            if len(journal(admin, method="POST", path="/v1/sandboxes/*/renew-expiration")) >= 2:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        sent = len(journal(admin, path="/direct/*"))
        with pytest.raises(RuntimeError, match="OpenSandbox lifetime renewal failed"):
            await p.exec(handle, "echo never")
        assert len(journal(admin, path="/direct/*")) == sent  # refused before sending
        with pytest.raises(RuntimeError, match="OpenSandbox lifetime renewal failed"):
            await p.close(handle)
        await p.aclose()

    run(scenario())
    assert {e["status"] for e in journal(admin, method="POST", path="/v1/sandboxes/*/renew-expiration")} == {500}
    assert journal(admin, method="DELETE", status=204)  # close still deleted it


def test_an_empty_endpoint(gym: ModuleType, served: str, admin: httpx.Client) -> None:
    async def scenario() -> None:
        p = provider(gym, served)
        handle = await p.create(spec())
        arm(admin, "empty_endpoint", sandbox_id=handle.sandbox_id, port="8080")
        with pytest.raises(RuntimeError, match=r"returned an empty endpoint for sandbox .* port 8080"):
            await p.endpoint(handle, 8080)
        await p.close(handle)
        await p.aclose()

    run(scenario())


def test_a_command_running_for_three_polls(gym: ModuleType, served: str, admin: httpx.Client) -> None:
    background = {"background_exec": True, "background_poll_initial_s": 0.01, "background_poll_interval_s": 0.01}

    async def scenario() -> None:
        p = provider(gym, served, operations=background)
        handle = await p.create(spec())
        arm(admin, "command_running_for_polls", sandbox_id=handle.sandbox_id, polls=3)
        done = await p.exec(handle, "echo polled")
        assert (done.stdout, done.return_code) == ("polled\n", 0)
        await p.close(handle)
        await p.aclose()

    run(scenario())
    entries = admin.get("/journal", params={"method": "GET", "path": "/direct/*/44772/command/status/*"}).json()
    polls = [json.loads(e["response_body"]) for e in entries]
    ours = [poll["running"] for poll in polls if poll["content"] == "echo polled"]
    assert ours == [True, True, True, False]  # three polls said running, then the finished record
