"""What a replay leaves out of the comparison: run-dependent numbers, and the paths ``--ignore`` names."""

from __future__ import annotations

import pytest

from harness.recording.normalise import IgnoreRule, volatile_placeholders


def test_epoch_times_and_execd_durations_become_placeholders() -> None:
    events = [
        {"type": "init", "text": "58e438ac2e1d6183", "timestamp": 1796176696070},
        {"type": "execution_complete", "execution_time": 2, "timestamp": 1796176696073},
        {"type": "stdout", "text": "3", "count": 4, "ok": True},
    ]
    assert volatile_placeholders({"created_at": 1, "events": events, "started_at": "2026-01-01T00:00:00Z"}) == {
        "created_at": "<epoch-ms>",
        "events": [
            {"type": "init", "text": "58e438ac2e1d6183", "timestamp": "<epoch-ms>"},
            {"type": "execution_complete", "execution_time": "<duration-ms>", "timestamp": "<epoch-ms>"},
            {"type": "stdout", "text": "3", "count": 4, "ok": True},
        ],
        "started_at": "2026-01-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    ("rule", "ignored", "kept"),
    [
        ("$.body..timestamp", ["body.0.timestamp", "body.timestamp", "body.a.b.timestamp"], ["body.0.text", "status"]),
        ("$.body[*].text", ["body.0.text", "body.12.text"], ["body.text", "body.0.type", "body.0.x.text"]),
        ("$.body.headers", ["body.headers", "body.headers.OpenSandbox-Secure-Access"], ["body.endpoint", "headers"]),
        ("$['header']['vary']", ["header.vary"], ["header.content-type", "body.vary"]),
        ("$.body.items[0].id", ["body.items.0.id"], ["body.items.1.id"]),
        ("$.*.code", ["body.code", "header.code"], ["body.x.code"]),
        ("$..code", ["body.code", "body.x.code", "code"], ["body.coder"]),
        ("$.status", ["status"], ["body.status", "body.status.state"]),
    ],
)
def test_an_ignore_rule_matches_its_paths_and_what_is_below_them(
    rule: str, ignored: list[str], kept: list[str]
) -> None:
    parsed = IgnoreRule.parse(rule)
    assert [p for p in ignored if not parsed.matches(p)] == []
    assert [p for p in kept if parsed.matches(p)] == []


@pytest.mark.parametrize("bad", ["body.code", "$.body[", "$.body..", "$...x", "$.a[?(@.x)]", "$$"])
def test_a_path_outside_the_subset_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="--ignore"):
        IgnoreRule.parse(bad)
