"""Replay: a mock replays its own recordings with no difference; a wrong target is caught and named.

The end-to-end round trip against the real opensandbox-server 1.1.1 is here too: its SDK flows are recorded
through the proxy and replayed against the OpenSandbox mock, where only the known deviations may differ.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from harness.differential.deviations import KNOWN_DEVIATIONS
from harness.differential.real_server import RealOpenSandboxServer, RealOpenSandboxUnavailable
from harness.recording.flows import FLOWS, record_flows
from harness.recording.replay import Replayer, ReplayReport, serve_target
from mockserver.core import FaultRule, VirtualClock
from mockserver.core.cassette import BodyText, Cassette, read_cassette
from mockserver.opensandbox import OpenSandboxMock

pytestmark = pytest.mark.timeout(240)
KEY = "replay-key"


def _replay(cassette: Cassette, name: str, mock: OpenSandboxMock | None = None) -> ReplayReport:
    if mock is None:
        with serve_target("mock", cassette.header.provider, KEY) as url:
            return Replayer(url, api_key=KEY).replay(cassette, name)
    with mock.server() as server:
        return Replayer(server.url, api_key=KEY).replay(cassette, name)


@pytest.fixture(scope="module")
def osb_cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Cassette]:
    """Record every OpenSandbox flow against a mock once for the module."""
    out = tmp_path_factory.mktemp("osb")
    with serve_target("mock", "opensandbox", "recording-key") as url:
        outcomes = record_flows("opensandbox", url, out, api_key="recording-key")
    assert [o.error for o in outcomes] == [""] * len(outcomes)
    return {o.name: read_cassette(o.cassette) for o in outcomes}


def test_the_mock_replays_its_own_recordings_identically(osb_cassettes: dict[str, Cassette]) -> None:
    assert set(osb_cassettes) == set(FLOWS["opensandbox"])
    for name, cassette in osb_cassettes.items():
        report = _replay(cassette, name)
        assert report.ok and not report.known, report.render()
        assert len(report.results) == len(cassette) > 3


def test_tensorlake_recordings_with_streams_replay_identically(tmp_path: Path) -> None:
    with serve_target("mock", "tensorlake", "tl-recording-key") as url:
        outcomes = record_flows("tensorlake", url, tmp_path, api_key="tl-recording-key")
    assert [o.error for o in outcomes] == ["", ""]
    commands = read_cassette(tmp_path / "commands.jsonl")
    assert any(e.streamed and e.response.header("content-type").startswith("text/event-stream") for e in commands)
    assert all(e.request.header("authorization") == "<redacted>" for e in commands if e.path.startswith("/sandboxes"))
    for outcome in outcomes:
        report = _replay(read_cassette(outcome.cassette), outcome.name)
        assert report.ok and not report.known, report.render()


def test_a_target_that_answers_differently_is_reported(osb_cassettes: dict[str, Cassette]) -> None:
    wrong = OpenSandboxMock(api_key=KEY, clock=VirtualClock("wall", start=time.time()))
    wrong.faults.add(
        FaultRule(
            method="GET",
            path="/v1/sandboxes/*",
            status=404,
            body={"code": "SANDBOX::NOT_FOUND", "message": "elsewhere"},
            times=None,
        )
    )
    report = _replay(osb_cassettes["delete"], "delete", wrong)
    assert not report.ok
    lines = report.render()
    assert "body.code" in lines and '"DOCKER::SANDBOX_NOT_FOUND"' in lines and '"SANDBOX::NOT_FOUND"' in lines
    statuses = [d for r in report.unexplained for d in r.differences if d.path == "status"]
    assert statuses and all((d.real, d.candidate) == (200, 404) for d in statuses)


def test_a_missing_field_is_a_difference_in_body_shape(osb_cassettes: dict[str, Cassette]) -> None:
    cassette = osb_cassettes["get"]
    index = next(i for i, e in enumerate(cassette.exchanges) if e.method == "GET" and e.path.count("/") == 3)
    exchange = cassette.exchanges[index]
    body = json.loads(exchange.response.body.text)
    body["extraRecordedField"] = 1
    del body["entrypoint"]
    changed = replace(exchange, response=replace(exchange.response, body=BodyText(json.dumps(body))))
    edited = Cassette(cassette.header, (*cassette.exchanges[:index], changed, *cassette.exchanges[index + 1 :]))
    report = _replay(edited, "get-edited")
    paths = {d.path for r in report.unexplained for d in r.differences}
    assert paths == {"body.extraRecordedField", "body.entrypoint"}


@pytest.fixture(scope="module")
def real_recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Cassette]]:
    """Record every SDK flow against the real opensandbox-server 1.1.1 (skipped when it is not installed)."""
    out = tmp_path_factory.mktemp("real")
    server = RealOpenSandboxServer(api_key="real-key")
    try:
        server.start()
    except RealOpenSandboxUnavailable as exc:
        pytest.skip(str(exc))
    try:
        outcomes = record_flows("opensandbox", server.url, out, api_key="real-key")
    finally:
        server.stop()
    assert [o.error for o in outcomes] == [""] * len(outcomes)
    yield {o.name: read_cassette(o.cassette) for o in outcomes}


def test_recording_the_real_server_and_replaying_on_the_mock_differs_only_by_known_deviations(
    real_recordings: dict[str, Cassette],
) -> None:
    met = []
    for name, cassette in real_recordings.items():
        report = _replay(cassette, name)
        assert report.ok, report.render()
        met += [d for d in report.deviations() if d not in met]
    assert met == [KNOWN_DEVIATIONS[0]]  # endpoint:direct* / body.endpoint: the mock's own direct endpoints
    endpoint = real_recordings["endpoints"]
    assert [e.status for e in endpoint] == [202] + [200] * (len(endpoint) - 2) + [204]
