"""The shipped cassettes of the real opensandbox-server 1.1.1: each replays on the mock with known deviations only.

Regenerate them with ``python -m harness.recording.flows --provider opensandbox --upstream real-opensandbox
--out tests/fixtures/cassettes/opensandbox-server-1.1.1`` (needs ``.venv-oss``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.differential.deviations import KNOWN_DEVIATIONS
from harness.recording.flows import FLOWS
from harness.recording.replay import Replayer, serve_target
from mockserver.core.cassette import read_cassette
from mockserver.core.redact import REDACTED

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cassettes" / "opensandbox-server-1.1.1"
KEY = "fixture-key"


def test_there_is_one_cassette_per_sdk_flow() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.jsonl")) == sorted(FLOWS["opensandbox"])


@pytest.mark.parametrize("flow", FLOWS["opensandbox"])
def test_each_fixture_replays_on_the_mock_with_known_deviations_only(flow: str) -> None:
    cassette = read_cassette(FIXTURES / f"{flow}.jsonl")
    assert cassette.header.provider == "opensandbox" and "opensandbox-server 1.1.1" in cassette.header.note
    assert all(e.request.header("open-sandbox-api-key") == REDACTED for e in cassette)
    with serve_target("mock", "opensandbox", KEY) as url:
        report = Replayer(url, api_key=KEY).replay(cassette, flow)
    assert report.ok, report.render()
    assert set(report.deviations()) <= {KNOWN_DEVIATIONS[0]}
    assert len(report.known) == sum(
        1 for e in cassette if "/endpoints/" in e.path and "server_proxy=true" not in e.query
    )
