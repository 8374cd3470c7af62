"""The diagnostics routes against what the real 1.1.1 server answered (``tests/opensandbox/diagnostics_cases``),
and what the mock fills them from: OOM kills, failures, the Kubernetes-like profile's transitions, the SDK."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opensandbox import SandboxManager
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import SandboxApiException

from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock

from ..conftest import run
from ..diagnostics_cases import DIAGNOSED_BODY, check_diagnostics, check_refusals

KEY = "sandproof-real-key"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[OpenSandboxMock, str]]:
    mock = OpenSandboxMock(api_key=KEY)
    with mock.server() as srv:
        yield mock, srv.url


@pytest.fixture
def client(served: tuple[OpenSandboxMock, str]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[1], headers={"OPEN-SANDBOX-API-KEY": KEY}) as c:
        yield c


def _create(client: httpx.Client) -> str:
    resp = client.post("/v1/sandboxes", json=DIAGNOSED_BODY)
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def test_diagnostics_answer_as_the_real_server(client: httpx.Client) -> None:
    check_diagnostics(client, _create(client))


def test_refusals_are_checked_in_the_real_servers_order(client: httpx.Client) -> None:
    check_refusals(client)


def test_an_oom_kill_shows_in_inspect_and_events(served: tuple[OpenSandboxMock, str], client: httpx.Client) -> None:
    """The Docker runtime's own OOM wording says only "exit code 137"; inspect carries ``OOMKilled: True``."""
    sandbox_id = _create(client)
    served[0].oom_kill(sandbox_id, "docker-1.1.1")
    inspect = client.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/inspect").text.split("\n")
    assert inspect[3:8] == [
        "Status:         exited",
        "Running:        False",
        "Paused:         False",
        "OOMKilled:      True",
        "Exit Code:      137",
    ]
    assert not inspect[9].endswith("0001-01-01T00:00:00Z")  # Finished At
    events = client.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/events").text.split("\n")
    assert events[4].startswith("Finished:   ")
    assert events[5:] == [
        "Event:      OOMKilled - container was killed due to out-of-memory",
        "Event:      Exited with code 137",
    ]


def test_an_ordinary_failure_is_exit_1_without_oom(served: tuple[OpenSandboxMock, str], client: httpx.Client) -> None:
    sandbox_id = _create(client)
    served[0].state.fail(sandbox_id, *served[0].profile.failed_status())
    inspect = client.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/inspect").text
    assert "OOMKilled:      False\nExit Code:      1\n" in inspect
    assert client.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/events").text.endswith(
        "\nEvent:      Exited with code 1"
    )


def test_kubernetes_events_are_the_sandboxes_transitions() -> None:
    """On the Kubernetes-like profile each state entered is one event line, as the runtime lists a pod's events."""
    mock = OpenSandboxMock(profile="kubernetes", clock=VirtualClock("manual"))

    async def flow() -> list[str]:
        async with httpx.AsyncClient(transport=mock.transport(), base_url="http://mock") as api:
            sandbox_id = (await api.post("/v1/sandboxes", json=DIAGNOSED_BODY)).json()["id"]
            mock.clock.advance(5)
            assert (await api.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 202
            mock.clock.advance(5)
            events = await api.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/events", params={"limit": "3"})
            stable = await api.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/events", params={"scope": "runtime"})
            assert stable.json()["content"].count("\n") == 3  # four transitions, every one
            return events.text.split("\n")

    lines = run(flow())
    reasons = [line.split()[3] for line in lines]
    assert reasons == ["POD_SCHEDULED", "POD_READY_WITH_IP", "PAUSING"]
    assert lines[0].startswith("[2026-") and " Normal   POD_SCHEDULED        Pod is scheduled" in lines[0]


def test_the_sdk_reads_the_stable_descriptor(served: tuple[OpenSandboxMock, str], client: httpx.Client) -> None:
    """``SandboxManager.get_diagnostic_logs``/``events`` parse the descriptor; an unknown id is the SDK's 404."""
    sandbox_id = _create(client)
    cfg = ConnectionConfig(domain=served[1].split("://", 1)[1], api_key=KEY, disable_metrics=True)

    async def flow() -> None:
        manager = await SandboxManager.create(connection_config=cfg)
        try:
            logs = await manager.get_diagnostic_logs(sandbox_id, "container")
            assert (logs.kind, logs.scope, logs.content, logs.truncated) == ("logs", "container", "(no logs)", False)
            events = await manager.get_diagnostic_events(sandbox_id, "all")
            assert events.content is not None and events.content.startswith("Container:  ")
            assert events.warnings == ["The current backend only contributes runtime events to the all scope."]
            with pytest.raises(SandboxApiException) as raised:
                await manager.get_diagnostic_logs("nope", "container")
            assert raised.value.status_code == 404
        finally:
            await manager.close()

    run(flow())
