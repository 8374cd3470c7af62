"""A server the run did not start: the preflight's one-line errors, a tenant of its own, read-only admin use, and
the state an ``--allow-reset`` run puts back (sandboxes, faults, and a running clock at the time it would show)."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from harness.targets import TargetError, parse_target
from harness.targets.live import ReadOnlyAdminClient, put_back, save
from mockserver.admin.client import AdminClient
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.model.auth import ANY_KEY
from mockserver.tensorlake import TensorLakeMock

KEY = "the-right-key"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _preflight_error(spec: str, env: dict[str, str]) -> str:
    with pytest.raises(TargetError) as caught:
        parse_target(spec, env).preflight()
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("provider", ["opensandbox", "tensorlake"])
def test_each_setup_mistake_is_one_line(provider: str) -> None:
    env_name = {"opensandbox": "OPEN_SANDBOX_API_KEY", "tensorlake": "TENSORLAKE_API_KEY"}[provider]
    mock = OpenSandboxMock(api_key=KEY) if provider == "opensandbox" else TensorLakeMock(api_keys=[KEY])
    with mock.server() as server:
        missing = _preflight_error(f"{provider}:{server.url}", {})
        assert "wants an API key (401" in missing and missing.endswith(f"): set {env_name}"), missing
        wrong = _preflight_error(f"{provider}:{server.url}", {env_name: "not-the-key"})
        assert f"refused the key in {env_name} (401 " in wrong and wrong.endswith("set the key it expects"), wrong
        for suffix in ("/v1", "/v1/"):
            message = _preflight_error(f"{provider}:{server.url}{suffix}", {env_name: KEY})
            assert message.endswith(f"the URL ends in /v1, but the suite adds /v1 itself; use {provider}:{server.url}")
        right = parse_target(f"{provider}:{server.url}", {env_name: KEY})
        right.preflight()
        assert right.api_key(provider) == KEY  # a pinned key: no tenant of its own
    unreachable = _preflight_error(f"{provider}:http://127.0.0.1:{_free_port()}", {env_name: KEY})
    assert f"cannot reach the {provider} server at http://127.0.0.1:" in unreachable and "ConnectError" in unreachable


def test_a_server_that_is_not_the_api_is_named() -> None:
    mock = TensorLakeMock(api_keys=[KEY])
    with mock.server() as server:
        message = _preflight_error(f"opensandbox:{server.url}", {"OPEN_SANDBOX_API_KEY": KEY})
    assert "GET /v1/sandboxes at " in message and "answered 404: is it an opensandbox server?" in message


def test_a_server_taking_any_key_gets_a_tenant_of_the_runs_own() -> None:
    mock = OpenSandboxMock(api_key=ANY_KEY)
    with mock.server() as server:
        target = parse_target(f"opensandbox:{server.url}", {"OPEN_SANDBOX_API_KEY": "users-key"})
        target.preflight()
        own = target.api_key("opensandbox")
        assert own is not None and own != "users-key" and own.startswith("sandproof-check-")
        assert "as a tenant of its own" in target.describe()
        mine = httpx.post(
            f"{server.url}/v1/sandboxes",
            headers={"OPEN-SANDBOX-API-KEY": own},
            json={"image": {"uri": "python:3.11"}, "timeout": 600, "resourceLimits": {}, "entrypoint": ["sleep"]},
        )
        assert mine.status_code == 202
        users = httpx.get(f"{server.url}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "users-key"}).json()
        assert users["items"] == []  # the run's sandbox is not in the user's tenant


def test_the_admin_client_of_a_server_not_started_by_the_run_only_reads() -> None:
    mock = OpenSandboxMock(api_key=KEY)
    with mock.server() as server:
        user = AdminClient(server.url)
        user.add_fault(method="GET", path="/v1/sandboxes/users-own", status=503)
        target = parse_target(f"opensandbox:{server.url}", {"OPEN_SANDBOX_API_KEY": KEY})
        client = target.admin_client("opensandbox")
        assert isinstance(client, ReadOnlyAdminClient)
        assert client.now() > 0 and len(client.faults()) == 1 and client.snapshot()["provider"] == "opensandbox"
        for call in (
            client.reset,
            client.clear_faults,
            client.clear_journal,
            lambda: client.advance(5),
            lambda: client.set_clock_mode("manual"),
            lambda: client.add_fault(method="GET", path="/x", status=500),
            lambda: client.remove_fault(1),
            lambda: client.set_dns({"a.example": ["10.0.0.1"]}),
            lambda: client.restore({}),
            lambda: client.seed(1),
        ):
            with pytest.raises(TargetError, match=r"refusing to .* --allow-reset"):
                call()
        assert len(user.faults()) == 1 and mock.clock.mode == "auto"
        client.close()
        allowed = parse_target(f"opensandbox:{server.url}", {}).configure(allow_reset=True)
        writable = allowed.admin_client("opensandbox")
        assert not isinstance(writable, ReadOnlyAdminClient)
        writable.close()
        user.close()


def test_an_allow_reset_run_puts_the_state_back_with_the_clock_running_on() -> None:
    mock = OpenSandboxMock(api_key=KEY, clock=VirtualClock("wall", start=time.time()))
    headers = {"OPEN-SANDBOX-API-KEY": KEY}
    body = {"image": {"uri": "python:3.11"}, "timeout": 3600, "resourceLimits": {}, "entrypoint": ["sleep"]}
    with mock.server() as server:
        user = AdminClient(server.url)
        kept = httpx.post(f"{server.url}/v1/sandboxes", headers=headers, json=body).json()["id"]
        user.add_fault(method="GET", path="/v1/sandboxes/users-own", status=503, times=2)
        target = parse_target(f"opensandbox:{server.url}", {"OPEN_SANDBOX_API_KEY": KEY}).configure(allow_reset=True)
        before = user.now() - time.time()
        with target:
            run = target.admin_client("opensandbox")
            run.reset()
            run.set_clock_mode("manual")
            run.advance(7200)
            run.add_fault(method="GET", path="/v1/sandboxes/the-runs", status=500)
            assert user.sandboxes() == [] and user.now() - time.time() > 7000
            run.close()
        clock = httpx.get(f"{server.url}/_mock/clock").json()
        assert clock["mode"] == "wall" and abs((clock["now"] - time.time()) - before) < 1.0
        assert [s["id"] for s in user.sandboxes()] == [kept]
        faults = user.faults()
        assert [(f["path"], f["times"]) for f in faults] == [("/v1/sandboxes/users-own", 2)]
        assert httpx.get(f"{server.url}/v1/sandboxes/{kept}", headers=headers).status_code == 200
        user.close()


def test_put_back_keeps_a_manual_clock_where_it_stood() -> None:
    mock = OpenSandboxMock(api_key=KEY, clock=VirtualClock("manual", start=1_800_000_000.0))
    with mock.server() as server:
        client = AdminClient(server.url)
        saved = save(client)
        client.advance(3600)
        client.set_clock_mode("auto")
        put_back(client, saved)
        assert httpx.get(f"{server.url}/_mock/clock").json() == {"mode": "manual", "now": 1_800_000_000.0}
        client.close()
