"""The concurrency contract module through ``sandproof check``: a mock served by URL passes, a mutant fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from mockserver.asgi.server import MockServer
from mockserver.opensandbox import OpenSandboxMock
from mockserver.service import HttpMock
from mockserver.tensorlake import TensorLakeMock
from tests.mutants.concurrency_mocks import StaleEgressOpenSandbox, TwoStepPatchTensorLake


@pytest.mark.parametrize(
    ("factory", "status"),
    [(TensorLakeMock, 0), (TwoStepPatchTensorLake, 1), (OpenSandboxMock, 0), (StaleEgressOpenSandbox, 1)],
    ids=["tensorlake", "two-step-patch", "opensandbox", "stale-egress"],
)
def test_check_passes_the_mock_and_fails_a_mutant(
    factory: type[HttpMock],
    status: int,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TENSORLAKE_API_KEY", "sandproof-key")  # the preflight wants the key the server asks for
    mock = factory()
    with MockServer(mock.app) as server:
        target = f"{mock.provider}:{server.url}"
        argv = ["--target", target, "-k", "linearizable", "--concurrency", "4", "--profile", "ci", "-q"]
        argv.append("--allow-reset")  # the test started the server: reset, a held clock, error codes compared
        assert cli.main([*argv, "--report", str(tmp_path)]) == status
    out = capsys.readouterr().out
    dump = json.loads((tmp_path / f"concurrency-{mock.provider}.json").read_text())
    assert dump["result"]["operations"] == 360 and dump["result"]["clients"] == 4
    assert dump["result"]["passed"] is (status == 0)
    if status:
        assert f"{mock.provider}: 360 operations from 4 clients" in out
        assert ": violation (" in out and "longest linearizable prefix" in out
        assert "--sandproof-concurrency=4 --hypothesis-seed=" in out
        assert "sandproof check FAILED: 0 passed, 1 failed" in out
        assert "violation" in dump["verdicts"].values()
    else:
        assert "sandproof check PASSED: 1 passed, 0 failed" in out
        assert set(dump["verdicts"].values()) == {"linearizable"}
