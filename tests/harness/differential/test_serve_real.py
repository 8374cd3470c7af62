"""The real server with sandproof's own execd behind each sandbox (``harness.differential.serve_real``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest

from harness.differential.execd import MockExecd
from harness.differential.real_server import RealOpenSandboxServer
from harness.differential.serve_real import build_parser, check_command, real_server
from harness.openapi.endpoints import Endpoint, served_by_stand_in
from harness.targets.sidecar import sidecar_missing

BODY = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "1Gi"},
}
POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "*"}]}


@pytest.fixture(scope="module")
def real() -> Iterator[RealOpenSandboxServer]:
    with real_server() as server:
        yield server


@pytest.fixture
def client(real: RealOpenSandboxServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=real.url, headers=real.headers, trust_env=False, timeout=30) as http:
        yield http


def _run(client: httpx.Client, sandbox_id: str, command: str) -> httpx.Response:
    return client.post(f"/v1/sandboxes/{sandbox_id}/proxy/44772/command", json={"command": command})


def test_each_sandbox_has_an_execd_of_its_own(real: RealOpenSandboxServer, client: httpx.Client) -> None:
    """Two sandboxes, two stand-ins: a file one writes is not the other's; the create's env reaches its commands."""
    first = client.post("/v1/sandboxes", json={**BODY, "env": {"WHO": "first"}}).json()["id"]
    second = client.post("/v1/sandboxes", json={**BODY, "networkPolicy": POLICY}).json()["id"]
    ran = _run(client, first, "echo one > /tmp/f")
    assert ran.status_code == 200, (ran.text, real.logs()[-3000:])
    assert _run(client, second, "echo two > /tmp/f").status_code == 200
    assert '"text":"one\\n"' in _run(client, first, "cat /tmp/f").text
    assert '"text":"first\\n"' in _run(client, first, "echo $WHO").text
    endpoint = client.get(f"/v1/sandboxes/{second}/endpoints/44772").json()["endpoint"]
    direct = httpx.post(f"http://{endpoint}/command", json={"command": "cat /tmp/f"}, trust_env=False)
    assert '"text":"two\\n"' in direct.text  # the direct endpoint reaches the same stand-in
    assert isinstance(real.execd, MockExecd) and set(real.execd.sandboxes) == {first, second}
    assert served_by_stand_in(Endpoint(f"http://{endpoint}", {}))
    for sandbox_id in (first, second):
        assert client.delete(f"/v1/sandboxes/{sandbox_id}").status_code == 204
    assert real.execd.sandboxes == {} and real.execd.mock.state.sandboxes == {}
    assert real.fake_docker.unhandled == []


def test_a_paused_sandboxs_execd_answers_502(client: httpx.Client) -> None:
    sandbox_id = client.post("/v1/sandboxes", json=BODY).json()["id"]
    assert client.post(f"/v1/sandboxes/{sandbox_id}/pause").status_code == 202
    assert _run(client, sandbox_id, "echo hi").status_code == 502
    assert client.post(f"/v1/sandboxes/{sandbox_id}/resume").status_code == 202
    assert _run(client, sandbox_id, "echo hi").status_code == 200
    client.delete(f"/v1/sandboxes/{sandbox_id}")


def test_no_sidecar_runs_so_the_sidecar_checks_skip(real: RealOpenSandboxServer, client: httpx.Client) -> None:
    """Create with a policy passes the readiness probe; the sidecar's API is not served, and the probe says so."""
    sandbox_id = client.post("/v1/sandboxes", json={**BODY, "networkPolicy": POLICY}).json()["id"]
    policy = client.get(f"/v1/sandboxes/{sandbox_id}/proxy/18080/policy")
    assert policy.status_code == 503 and policy.json()["code"] == "SANDPROOF::NO_EGRESS_SIDECAR"
    client.delete(f"/v1/sandboxes/{sandbox_id}")
    reason = sidecar_missing(real.url, real.api_key)
    assert reason is not None and "no egress sidecar answers" in reason


def test_the_command_line_checks_the_real_server_with_the_rest_of_its_arguments() -> None:
    args, rest = build_parser().parse_known_args(["--check", "--profile", "ci", "-k", "lifecycle"])
    assert args.check and rest == ["--profile", "ci", "-k", "lifecycle"]
    command = check_command("http://127.0.0.1:1", rest)
    assert command[:5] == [sys.executable, "-m", "harness.cli", "--target", "opensandbox:http://127.0.0.1:1"]
    assert command[5:] == rest


@pytest.mark.parametrize(("page", "status"), [(2**63 // 196 + 1, 200), (2**63 // 196 + 2, 500)])
def test_a_snapshot_page_past_sqlites_integers_is_a_500_on_both(client: httpx.Client, page: int, status: int) -> None:
    """The real server's snapshot store puts the offset in SQLite unguarded; the mock's model answers alike."""
    from mockserver.opensandbox import OpenSandboxMock

    params = {"pageSize": 196, "page": page}
    real = client.get("/v1/snapshots", params=params, headers={"Connection": "close"})
    mock = OpenSandboxMock(api_key="k")
    with mock.server() as served:
        answer = httpx.get(f"{served.url}/v1/snapshots", params=params, headers={"OPEN-SANDBOX-API-KEY": "k"})
    assert real.status_code == answer.status_code == status
    assert real.headers["content-type"].split(";")[0] == answer.headers["content-type"].split(";")[0]
