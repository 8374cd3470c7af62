"""What a replay rewrites: ids learnt from answers, times, credentials; how calls are classified."""

from __future__ import annotations

from datetime import timedelta

import pytest

from harness.recording.rewrite import IdMap, classify, replay_headers, shift_times
from mockserver.core.redact import REDACTED

REC = "11111111-aaaa-4bbb-8ccc-000000000001"
TGT = "22222222-aaaa-4bbb-8ccc-000000000002"


def test_ids_are_learnt_at_the_same_place_and_rewritten_both_ways() -> None:
    ids = IdMap()
    ids.learn(
        {"id": REC, "status": {"state": "Running"}, "n": "short"},
        {"id": TGT, "status": {"state": "Running"}, "n": "other"},
    )
    ids.learn({"sandbox_id": "recordedsandbox01"}, {"sandbox_id": "replayedsandbox02"})
    ids.learn({"id": "abc"}, {"id": "xyz"})  # too short to be an id: never rewritten
    assert ids.forward == {REC: TGT, "recordedsandbox01": "replayedsandbox02"}
    assert ids.to_target(f"/v1/sandboxes/{REC}/pause") == f"/v1/sandboxes/{TGT}/pause"
    assert ids.to_recorded(f'{{"id": "{TGT}"}}') == f'{{"id": "{REC}"}}'
    assert ids.template(f"/v1/sandboxes/{REC}/x") == "/v1/sandboxes/{id}/x"


def test_listings_teach_tokens_but_no_ids() -> None:
    ids = IdMap()
    ids.learn(
        {"items": [{"id": REC}], "headers": {"X-EXECD-ACCESS-TOKEN": REDACTED}},
        {"items": [{"id": TGT}], "headers": {"X-EXECD-ACCESS-TOKEN": "tok-live"}},
        ids=False,
    )
    assert ids.forward == {} and ids.tokens == {"x-execd-access-token": "tok-live"}


@pytest.mark.parametrize(
    ("method", "path", "query", "body", "key"),
    [
        ("POST", "/v1/sandboxes", "", {"image": {}}, "create:valid"),
        ("POST", "/v1/sandboxes", "", {"networkPolicy": {"defaultAction": "deny"}}, "create:network-policy"),
        ("GET", "/v1/sandboxes", "metadata=a%3Db", None, "list:valid"),
        ("GET", f"/v1/sandboxes/{REC}", "", None, "get:valid"),
        ("DELETE", f"/v1/sandboxes/{REC}", "", None, "delete:valid"),
        ("POST", f"/v1/sandboxes/{REC}/renew-expiration", "", {}, "renew:valid"),
        ("POST", f"/v1/sandboxes/{REC}/pause", "", None, "pause:valid"),
        ("GET", f"/v1/sandboxes/{REC}/endpoints/44772", "use_server_proxy=false", None, "endpoint:direct-execd"),
        ("GET", f"/v1/sandboxes/{REC}/endpoints/18080", "", None, "endpoint:direct-egress"),
        ("GET", f"/v1/sandboxes/{REC}/endpoints/8080", "use_server_proxy=false", None, "endpoint:direct-http"),
        ("GET", f"/v1/sandboxes/{REC}/endpoints/8080", "use_server_proxy=true", None, "endpoint:server-proxy"),
        ("GET", f"/v1/sandboxes/{REC}/metrics", "", None, "GET /v1/sandboxes/{id}/metrics"),
        ("POST", f"/v1/sandboxes/{REC}/odd", "", None, "POST /v1/sandboxes/{id}/odd"),
    ],
)
def test_opensandbox_calls_get_the_differential_keys(
    method: str, path: str, query: str, body: object, key: str
) -> None:
    ids = IdMap({REC: TGT})
    operation = classify("opensandbox", method, path, query, body, ids)
    assert operation.key == key
    assert operation.sandbox_id == (REC if REC in path else None)


def test_other_providers_are_keyed_by_method_and_path() -> None:
    ids = IdMap({"recordedsandbox01": "x" * 17})
    created = classify("tensorlake", "POST", "/sandboxes", "", {}, ids)
    assert (created.key, created.is_create) == ("POST /sandboxes", True)
    got = classify("tensorlake", "GET", "/sandboxes/recordedsandbox01", "", None, ids)
    assert (got.key, got.sandbox_id, got.is_create) == ("GET /sandboxes/{id}", "recordedsandbox01", False)


def test_times_move_and_keep_their_style() -> None:
    later = timedelta(days=1, microseconds=250)
    body = {
        "expiresAt": "2026-01-01T00:00:00.000001+00:00",
        "z": "2026-01-01T00:00:00Z",
        "micro": "2026-01-01T00:00:00.123456Z",
        "naive": "2026-01-01T00:00:00",
        "plus2": "2026-01-01T02:00:00+02:00",
        "text": "not 2026-01-01T00:00:00Z",
        "n": 3,
    }
    assert shift_times(body, later) == {
        "expiresAt": "2026-01-02T00:00:00.000251+00:00",
        "z": "2026-01-02T00:00:00Z",
        "micro": "2026-01-02T00:00:00.123706Z",
        "naive": "2026-01-02T00:00:00",
        "plus2": "2026-01-02T02:00:00+02:00",
        "text": "not 2026-01-01T00:00:00Z",
        "n": 3,
    }
    assert shift_times(body, timedelta(0)) is body


def test_credentials_are_the_replays_own_and_the_recorders_host_is_dropped() -> None:
    ids = IdMap({"recordedsandbox01": "replayedsandbox02"}, {"x-execd-access-token": "tok"})
    recorded = {
        "host": "127.0.0.1:9000",
        "open-sandbox-api-key": REDACTED,
        "x-execd-access-token": REDACTED,
        "cookie": REDACTED,
        "content-length": "12",
        "x-sandbox": "recordedsandbox01",
    }
    sent = replay_headers("opensandbox", recorded, ids, api_key="k", drop_host=["127.0.0.1:9000"])
    assert sent == [("open-sandbox-api-key", "k"), ("x-execd-access-token", "tok"), ("x-sandbox", "replayedsandbox02")]
    tl = replay_headers(
        "tensorlake",
        {"host": "recordedsandbox01.local", "authorization": REDACTED},
        ids,
        api_key="k",
        drop_host=["127.0.0.1:9000"],
    )
    assert tl == [("host", "replayedsandbox02.local"), ("authorization", "Bearer k")]
