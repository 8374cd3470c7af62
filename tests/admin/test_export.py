"""The journal exported as HAR and as a cassette; the cassette replays clean against a fresh mock."""

from __future__ import annotations

from pathlib import Path

import httpx

from harness.recording.replay import Replayer, serve_target
from mockserver.core import VirtualClock
from mockserver.core.cassette import read_cassette
from mockserver.opensandbox import OpenSandboxMock

KEY = "export-key"
CREATE = {"image": {"uri": "python:3.11"}, "entrypoint": ["tail", "-f", "/dev/null"], "resourceLimits": {"cpu": "1"}}


def _session(url: str) -> str:
    with httpx.Client(base_url=url, headers={"OPEN-SANDBOX-API-KEY": KEY}) as http:
        sid = str(http.post("/v1/sandboxes", json={**CREATE, "metadata": {"team": "a"}}).json()["id"])
        assert http.get(f"/v1/sandboxes/{sid}").status_code == 200
        assert http.get("/v1/sandboxes", params={"metadata": "team=a"}).status_code == 200
        assert http.get("/v1/sandboxes/nope").status_code == 404
        assert http.delete(f"/v1/sandboxes/{sid}").status_code == 204
    return sid


def test_the_journal_exports_as_har_with_credentials_redacted() -> None:
    mock = OpenSandboxMock(api_key=KEY, clock=VirtualClock("wall"))
    with mock.server() as srv:
        _session(srv.url)
        answer = httpx.get(f"{srv.url}/_mock/journal/export", params={"format": "har"})
        assert answer.status_code == 200 and answer.headers["content-disposition"].endswith('.har"')
        refused = httpx.get(f"{srv.url}/_mock/journal/export", params={"format": "pcap"})
        assert (refused.status_code, refused.json()["code"]) == (400, "invalid_query")
    log = answer.json()["log"]
    assert log["version"] == "1.2" and log["creator"]["name"] == "sandproof"
    lines = [
        (e["request"]["method"], e["request"]["url"].removeprefix(srv.url), e["response"]["status"])
        for e in log["entries"]
    ]
    assert [(m, s) for m, _, s in lines] == [("POST", 202), ("GET", 200), ("GET", 200), ("GET", 404), ("DELETE", 204)]
    assert lines[2][1] == "/v1/sandboxes?metadata=team%3Da"
    assert log["entries"][2]["request"]["queryString"] == [{"name": "metadata", "value": "team=a"}]
    assert KEY not in answer.text


def test_the_exported_cassette_replays_clean_on_a_fresh_mock(tmp_path: Path) -> None:
    mock = OpenSandboxMock(api_key=KEY, clock=VirtualClock("wall"))
    with mock.server() as srv:
        _session(srv.url)
        exported = httpx.get(f"{srv.url}/_mock/journal/export", params={"format": "cassette"}).text
    path = tmp_path / "journal.jsonl"
    path.write_text(exported)
    cassette = read_cassette(path)
    assert cassette.header.provider == "opensandbox" and len(cassette) == 5
    with serve_target("mock", "opensandbox", KEY) as url:
        report = Replayer(url, api_key=KEY).replay(cassette, path.name)
    assert report.ok, report.render()
    assert len(report.known) + sum(1 for r in report.results if not r.differences) == 5
