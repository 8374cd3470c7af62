"""``sandproof record`` and ``sandproof replay`` from the command line (dispatched by ``sandproof.cli``)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from harness.differential.real_server import free_port
from harness.recording.cli import record_main
from mockserver.core.cassette import read_cassette
from mockserver.opensandbox import OpenSandboxMock
from sandproof.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cassettes" / "opensandbox-server-1.1.1"


def test_replay_of_the_shipped_cassettes_against_the_mock_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(FIXTURES), "--target", "mock", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and all(line.endswith("0 with unexplained differences") for line in lines)


def test_an_unexplained_difference_exits_1_and_is_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = (FIXTURES / "delete.jsonl").read_text().splitlines()
    edited = [json.loads(line) for line in lines]
    last = edited[-1]
    last["response"]["body"]["text"] = last["response"]["body"]["text"].replace("DOCKER::", "K8S::")
    path = tmp_path / "delete.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in edited))
    assert main(["replay", str(path), "--target", "mock"]) == 1
    out = capsys.readouterr().out
    assert "1 with unexplained differences" in out and 'body.code: real "K8S::SANDBOX_NOT_FOUND"' in out


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not a cassette\n")
    assert main(["replay", str(junk), "--target", "mock"]) == 2
    assert main(["replay", str(tmp_path / "empty-dir"), "--target", "mock"]) == 2
    assert main(["replay", str(FIXTURES / "get.jsonl"), "--target", "ftp://nowhere"]) == 2
    assert "junk.jsonl" in capsys.readouterr().err


def test_record_serves_until_stopped_and_writes_the_cassette(tmp_path: Path) -> None:
    out = tmp_path / "recorded.jsonl"
    port = free_port()
    stop = threading.Event()
    mock = OpenSandboxMock(api_key="k")
    with mock.server() as upstream:
        argv = ["--upstream", upstream.url, "--provider", "opensandbox", "--port", str(port), "--out", str(out)]
        status: list[int] = []
        thread = threading.Thread(target=lambda: status.append(record_main(argv, stop=stop)))
        thread.start()
        try:
            reply = _retry_get(f"http://127.0.0.1:{port}/v1/sandboxes", {"OPEN-SANDBOX-API-KEY": "k"})
        finally:
            stop.set()
            thread.join(timeout=20)
    assert reply.status_code == 200 and status == [0]
    cassette = read_cassette(out)
    assert cassette.header.upstream == upstream.url and cassette.header.preserve_host
    assert [e.line for e in cassette] == ["GET /v1/sandboxes"]


def test_record_refuses_a_bad_upstream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = threading.Event()
    stop.set()
    argv = ["--upstream", "nowhere", "--provider", "opensandbox", "--port", "0", "--out", str(tmp_path / "c.jsonl")]
    assert record_main(argv, stop=stop) == 2
    assert "absolute" in capsys.readouterr().err


def _retry_get(url: str, headers: dict[str, str]) -> httpx.Response:
    for _ in range(200):
        try:
            return httpx.get(url, headers=headers, trust_env=False)
        except httpx.ConnectError:
            threading.Event().wait(0.05)
    raise AssertionError(f"{url} never answered")
