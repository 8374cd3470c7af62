"""The field-by-field wire diff between two cassettes of one flow (what an SDK upgrade changes)."""

from __future__ import annotations

import json
from dataclasses import replace

from harness.recording.wire_diff import diff_cassettes, flatten, render_changes
from mockserver.core.cassette import BodyText, Cassette, CassetteHeader, Exchange, Message

HEADER = CassetteHeader("opensandbox", "http://127.0.0.1:1", "http://127.0.0.1:2", True, "2026-01-01T00:00:00Z")


def _exchange(seq: int, method: str, path: str, body: object = None, reply: object = None, **headers: str) -> Exchange:
    return Exchange(
        seq=seq,
        started=seq,
        elapsed=0.01,
        method=method,
        path=path,
        query="",
        request=Message(
            {"host": "127.0.0.1:2", "date": f"d{seq}", "user-agent": "SDK/1.0", **headers},
            BodyText("" if body is None else json.dumps(body)),
        ),
        status=202 if method == "POST" else 200,
        response=Message({"content-type": "application/json"}, BodyText("" if reply is None else json.dumps(reply))),
    )


def _flow(sandbox: str, *, agent: str = "SDK/1.0", create: object = None, polls: int = 1) -> Cassette:
    made = {"id": sandbox, "createdAt": "2026-01-01T00:00:00Z", "status": {"state": "Running"}}
    exchanges = [
        _exchange(1, "POST", "/v1/sandboxes", create or {"image": {"uri": "python"}, "timeout": 600}, made),
        *(_exchange(2 + i, "GET", f"/v1/sandboxes/{sandbox}", None, made) for i in range(polls)),
    ]
    return Cassette(
        HEADER,
        tuple(
            replace(e, request=replace(e.request, headers={**e.request.headers, "user-agent": agent}))
            for e in exchanges
        ),
    )


def test_flatten_names_every_leaf() -> None:
    assert flatten({"a": {"b": [1, {"c": None}]}, "d": {}}) == {
        "a.b.length": 2,
        "a.b.0": 1,
        "a.b.1.c": None,
        "d": {},
    }


def test_same_flow_with_other_ids_and_times_has_no_change() -> None:
    a = _flow("11111111-aaaa-4bbb-8ccc-000000000001")
    b = _flow("22222222-aaaa-4bbb-8ccc-000000000002")
    assert diff_cassettes(a, b) == []
    assert render_changes("create", []) == ["create: no change on the wire"]


def test_an_upgrade_shows_each_changed_field_header_and_call_count() -> None:
    old = _flow("11111111-aaaa-4bbb-8ccc-000000000001")
    new = _flow(
        "22222222-aaaa-4bbb-8ccc-000000000002",
        agent="SDK/2.0",
        create={"image": {"uri": "python"}, "timeout": 900, "secureAccess": False},
        polls=2,
    )
    described = [c.describe() for c in diff_cassettes(old, new)]
    assert described == [
        'POST /v1/sandboxes  request.header.user-agent: "SDK/1.0" -> "SDK/2.0"',
        "POST /v1/sandboxes  request.body.timeout: 600 -> 900",
        'POST /v1/sandboxes  request.body.secureAccess: "<absent>" -> false',
        "GET /v1/sandboxes/<sandbox#1>  calls: 1 -> 2",
        'GET /v1/sandboxes/<sandbox#1>  request.header.user-agent: "SDK/1.0" -> "SDK/2.0"',
    ]
    lines = render_changes("create", diff_cassettes(old, new))
    assert lines[0] == "create: 5 changes on the wire" and len(lines) == 6


def test_repeated_changes_are_folded() -> None:
    old = _flow("11111111-aaaa-4bbb-8ccc-000000000001", polls=3)
    new = _flow("22222222-aaaa-4bbb-8ccc-000000000002", polls=3, agent="SDK/3")
    changes = diff_cassettes(old, new)
    assert [(c.call, c.times) for c in changes] == [("POST /v1/sandboxes", 1), ("GET /v1/sandboxes/<sandbox#1>", 3)]
    assert changes[1].describe().endswith("(x3)")
