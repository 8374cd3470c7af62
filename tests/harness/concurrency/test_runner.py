"""The concurrency contract end to end: the mocks pass (in process and as ``sandproof serve``), the mutants fail."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.concurrency.runner import check_mock, kills_mutant, run_provider
from harness.concurrency.workload import ProbeRequest
from mockserver.admin.client import AdminClient
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock
from tests.mutants import concurrency_mocks

ROOT = Path(__file__).resolve().parents[3]
MOCKS = {"tensorlake": TensorLakeMock, "opensandbox": OpenSandboxMock}


@pytest.mark.parametrize("provider", list(MOCKS))
def test_the_in_process_mock_is_linearizable(provider: str) -> None:
    result = check_mock(MOCKS[provider]())  # the mutation runs' seed and size
    assert result.passed, result.report()
    assert result.operations == 300 and result.histories >= 5 and result.linearizable == result.histories
    assert result.checked > result.operations  # lists are checked once per sandbox they could see
    assert "0 not, 0 unknown" in result.summary()


@pytest.mark.parametrize("provider", list(MOCKS))
def test_without_the_admin_api_the_run_deletes_what_it_created(provider: str) -> None:
    mock = MOCKS[provider]()
    with mock.server() as server:
        result = run_provider(provider, server.url, api_key="k", admin=None, clients=3, operations=150, seed=5)
    assert result.passed and not result.strict, result.report()
    live = mock.model.sandboxes if isinstance(mock, TensorLakeMock) else mock.state.sandboxes
    assert not live


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served() -> Iterator[dict[str, str]]:
    """Start ``sandproof serve`` on free ports; yield the provider URLs; stop it."""
    ports = {"tensorlake": _free_port(), "opensandbox": _free_port()}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "sandproof.cli", "serve"]
    command += ["--tensorlake-port", str(ports["tensorlake"]), "--opensandbox-port", str(ports["opensandbox"])]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    urls = {provider: f"http://127.0.0.1:{port}" for provider, port in ports.items()}
    try:
        deadline = time.monotonic() + 30
        for url in urls.values():
            while True:
                try:
                    if httpx.get(f"{url}/_mock/clock", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"sandproof serve did not start: {process.stderr.read() if process.stderr else ''!r}"
                    )
                time.sleep(0.05)
        yield urls
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.parametrize("provider", list(MOCKS))
def test_sandproof_serve_is_linearizable(provider: str, served: dict[str, str], tmp_path: Path) -> None:
    admin = AdminClient(served[provider])
    dump = tmp_path / "history.json"
    try:
        result = run_provider(
            provider, served[provider], admin=admin, clients=4, operations=300, seed=9, history_file=dump
        )
    finally:
        admin.close()
    assert result.passed and result.strict, result.report()
    data = json.loads(dump.read_text())
    assert data["result"]["passed"] is True and len(data["operations"]) == 300
    assert set(data["verdicts"].values()) == {"linearizable"} and len(data["verdicts"]) == result.histories
    print(result.summary())


@pytest.mark.catalogue
@pytest.mark.parametrize("mutant", concurrency_mocks.MUTANTS, ids=concurrency_mocks.mutant_name)
def test_every_concurrency_mutant_is_killed(mutant: type[TensorLakeMock] | type[OpenSandboxMock]) -> None:
    result = check_mock(mutant())
    assert not result.passed and result.violations >= 1, result.summary()
    witness = result.witnesses[0]
    assert ": violation (" in witness and "longest linearizable prefix" in witness
    assert "no operation can come next" in witness
    print(f"{mutant.__name__}: {result.summary()}")


def test_the_mutation_judge_kills_a_mutant_and_spares_the_mock() -> None:
    assert kills_mutant("two-step", concurrency_mocks.TwoStepPatchTensorLake)
    assert not kills_mutant("mock", TensorLakeMock)


def test_an_egress_probe_runs_after_each_policy_change_and_its_findings_fail_the_run() -> None:
    calls: list[ProbeRequest] = []

    def probe(request: ProbeRequest) -> list[str]:
        calls.append(request)
        return [f"{request.sandbox_id}: 10.1.2.3:443 connected"] if request.policy is not None else []

    mock = TensorLakeMock()
    with mock.server() as server:
        admin = AdminClient(server.url)
        result = run_provider("tensorlake", server.url, admin=admin, clients=2, operations=80, seed=1, probe=probe)
        admin.close()
    assert calls and all(c.provider == "tensorlake" and c.returned_at > 0 for c in calls)
    assert result.violations == 0 and result.probe_findings
    assert not result.passed and "egress probe: " in result.report()
