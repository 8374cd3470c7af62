"""An OpenSandbox SDK session that runs commands (execd streams, a background command's status and logs, files)
replays clean against a fresh mock: execution ids are learnt and mapped, event times and durations are
placeholders, each endpoint's secure-access token is the target's own; what is left can be ``--ignore``d."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.recording import cli
from harness.recording.flows import record_flows
from harness.recording.replay import Replayer
from mockserver.core import VirtualClock
from mockserver.core.cassette import BodyText, Cassette, read_cassette
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.model.auth import ANY_KEY

pytestmark = pytest.mark.timeout(120)
KEY = "replay-key"


@pytest.fixture(scope="module")
def any_key_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Record the commands flow on a mock that takes any key (as ``sandproof serve`` does): tokens per endpoint."""
    out = tmp_path_factory.mktemp("commands")
    mock = OpenSandboxMock(api_key=ANY_KEY, clock=VirtualClock("wall", start=time.time()))
    with mock.server() as server:
        outcomes = record_flows("opensandbox", server.url, out, api_key="recording-key", names=["commands"])
    assert [o.error for o in outcomes] == [""]
    return outcomes[0].cassette


def _replay_on_fresh(cassette: Cassette, *ignore: str, any_key: bool = True) -> tuple[str, bool, int]:
    mock = OpenSandboxMock(api_key=ANY_KEY if any_key else KEY, clock=VirtualClock("wall", start=time.time()))
    with mock.server() as server:
        report = Replayer(server.url, api_key=KEY, ignore=ignore).replay(cassette, "commands")
    return report.render(), report.ok, len(report.known)


def test_a_command_session_replays_clean_on_a_fresh_mock(any_key_session: Path) -> None:
    cassette = read_cassette(any_key_session)
    streams = [e for e in cassette if e.response.header("content-type").startswith("text/event-stream")]
    assert len(streams) == 3 and all('"type":"init"' in e.response.body.text for e in streams)
    by_id = [e for e in cassette if "/command/status/" in e.path or e.path.endswith("/logs")]
    assert len(by_id) == 2 and all(e.status == 200 for e in by_id)  # they name the background execution's id
    assert all(e.request.header("opensandbox-secure-access") == "<redacted>" for e in cassette if "/direct/" in e.path)
    rendered, ok, known = _replay_on_fresh(cassette)
    assert ok and known == 0, rendered
    assert rendered.startswith("replay commands against http://127.0.0.1:") and f"{len(cassette)} identical" in rendered


def test_the_replay_still_sees_a_different_command_output(any_key_session: Path) -> None:
    cassette = read_cassette(any_key_session)
    index = next(i for i, e in enumerate(cassette.exchanges) if "hello world" in e.response.body.text)
    exchange = cassette.exchanges[index]
    text = exchange.response.body.text.replace("hello world", "goodbye world")
    edited = replace(exchange, response=replace(exchange.response, body=BodyText(text)))
    rendered, ok, _ = _replay_on_fresh(
        Cassette(cassette.header, (*cassette.exchanges[:index], edited, *cassette.exchanges[index + 1 :]))
    )
    assert not ok and '.text: real "goodbye world\\n" != candidate "hello world\\n"' in rendered, rendered


def test_what_remains_is_ignored_by_jsonpath(any_key_session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = read_cassette(any_key_session)
    rendered, ok, _ = _replay_on_fresh(cassette, any_key=False)  # a single-key server hands out no tokens
    assert not ok and 'body.headers: real {"OpenSandbox-Secure-Access":"<redacted>"}' in rendered, rendered
    rendered, ok, known = _replay_on_fresh(cassette, "$.body.headers", any_key=False)
    assert ok and known == 2 and "(2 by --ignore)" in rendered.splitlines()[0], rendered
    assert "[--ignore $.body.headers" in rendered
    args = [str(any_key_session), "--target", "mock", "--api-key", KEY, "-q"]
    assert cli.replay_main(args) == 1
    assert cli.replay_main([*args, "--ignore", "$.body.headers"]) == 0
    assert cli.replay_main([*args, "--ignore", "body.headers"]) == 2
    assert "a JSONPath starts with $" in capsys.readouterr().err


def test_each_endpoint_keeps_its_own_token() -> None:
    from harness.recording.rewrite import IdMap, replay_headers

    ids = IdMap()
    for sandbox, token in (("sandboxaaaa1", "tok-a"), ("sandboxbbbb2", "tok-b")):
        ids.learn(
            {"endpoint": f"127.0.0.1:1/direct/{sandbox}/44772", "headers": {"OpenSandbox-Secure-Access": "<redacted>"}},
            {"endpoint": f"127.0.0.1:2/direct/{sandbox}/44772", "headers": {"OpenSandbox-Secure-Access": token}},
            ids=False,
        )
    recorded = {"opensandbox-secure-access": "<redacted>"}
    for sandbox, token in (("sandboxaaaa1", "tok-a"), ("sandboxbbbb2", "tok-b")):
        path = f"/direct/{sandbox}/44772/command"
        sent = replay_headers("opensandbox", recorded, ids, api_key="k", drop_host=(), path=path)
        assert sent == [("opensandbox-secure-access", token)]
    elsewhere = replay_headers("opensandbox", recorded, ids, api_key="k", drop_host=(), path="/direct/other/1")
    assert elsewhere == [("opensandbox-secure-access", "tok-b")]  # no endpoint of its own: the latest token


def test_execution_ids_are_paired_from_init_events() -> None:
    from harness.recording.rewrite import IdMap

    ids = IdMap()
    ids.learn_stream(
        [{"type": "init", "text": "58e438ac2e1d6183"}, {"type": "stdout", "text": "abcdefgh12345678"}],
        [{"type": "init", "text": "d3a5392621277209"}, {"type": "stdout", "text": "zzzzzzzz12345678"}],
    )
    assert ids.forward == {"58e438ac2e1d6183": "d3a5392621277209"}
    assert json.loads(ids.to_recorded('{"id":"d3a5392621277209"}')) == {"id": "58e438ac2e1d6183"}
