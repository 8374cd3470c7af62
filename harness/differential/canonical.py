"""The canonical request programs of the differential runner, and the step builders they are written with."""

from __future__ import annotations

from typing import Any

from harness.differential.programs import Auth, Program, RelTime, Step

__all__ = [
    "BAD_LABELS",
    "BASE_CREATE",
    "CANONICAL_PROGRAMS",
    "DROP",
    "INVALID_CREATES",
    "create",
    "create_body",
    "on",
    "renew",
]

DROP = object()
BASE_CREATE: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "entrypoint": ["tail", "-f", "/dev/null"],
}


def create_body(**fields: Any) -> dict[str, Any]:
    """Return the SDK's default create body with `fields` changed (`DROP` removes a key)."""
    body = {**BASE_CREATE, **fields}
    return {k: v for k, v in body.items() if v is not DROP}


def create(variant: str = "valid", **fields: Any) -> Step:
    """Return a create step with a JSON body."""
    return Step("create", variant, body=create_body(**fields))


def on(operation: str, slot: int, variant: str = "valid", **kw: Any) -> Step:
    """Return a step on a sandbox slot."""
    return Step(operation, variant, sandbox=slot, **kw)


def renew(slot: int, variant: str, value: Any) -> Step:
    """Return a renew step with `{"expiresAt": value}`."""
    return on("renew", slot, variant, body={"expiresAt": value})


def _list(variant: str = "valid", auth: Auth = "ok", **params: str | list[str]) -> Step:
    """Return a list step with query parameters."""
    pairs: list[tuple[str, str]] = []
    for name, value in params.items():
        pairs += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
    return Step("list", variant, params=tuple(pairs), auth=auth)


BAD_LABELS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("label-value-amp", {"team": "x&y=z"}),
    ("label-value-space", {"team": "a b"}),
    ("label-value-long", {"team": "v" * 64}),
    ("label-value-dash", {"team": "-a"}),
    ("label-key-space", {"bad key": "v"}),
    ("label-key-reserved", {"opensandbox.io/x": "y"}),
    ("label-key-long", {"k" * 64: "v"}),
    ("label-key-prefix", {"Bad_Prefix/k": "v"}),
    ("label-value-int", {"team": 1}),
)

INVALID_CREATES: tuple[Step, ...] = (
    *(create(name, metadata=labels) for name, labels in BAD_LABELS),
    create("timeout-low", timeout=10),
    create("timeout-59", timeout=59),
    create("timeout-negative", timeout=-5),
    create("timeout-float", timeout=600.5),
    create("timeout-bool", timeout=True),
    create("no-resource-limits", resourceLimits=DROP),
    create("resource-limits-int", resourceLimits={"cpu": 1}),
    create("resource-limits-list", resourceLimits=[]),
    create("resource-limits-bogus", resourceLimits={"cpu": "lots"}),
    create("no-image", image=DROP),
    create("image-empty", image={"uri": ""}),
    create("image-string", image="python:3.11"),
    create("image-no-uri", image={}),
    create("image-and-snapshot", snapshotId="snap-1"),
    create("snapshot-unknown", image=DROP, snapshotId="sandproof-no-snapshot"),
    create("no-entrypoint", entrypoint=DROP),
    create("entrypoint-empty", entrypoint=[]),
    create("entrypoint-string", entrypoint="tail"),
    create("env-int", env={"A": 1}),
    create("env-reserved", env={"OPENSANDBOX_LIFECYCLE": "x"}),
    create("no-resource-limits-null", resourceLimits=None),
    create("metadata-list", metadata=[]),
    create(
        "network-policy", networkPolicy={"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
    ),
    create("network-policy-list", networkPolicy=[]),
    create("secure-access", secureAccess=True),
    create("extensions", extensions={"sandproof": "1"}),
    create("metadata-empty", metadata={}),
    create("lifecycle-hooks", lifecycle={}),
    Step("create", "body-list", body=[]),
    Step("create", "body-null", raw=b"null"),
    Step("create", "malformed-json", raw=b'{"image": {'),
    # text that is not Unicode: the real server answers these two; a lone surrogate elsewhere, and NaN or
    # Infinity anywhere, make it 500 (see docs/deviations.md), so they are the bad-input table's, not here
    Step(
        "create",
        "image-lone-surrogate",
        raw=b'{"image": {"uri": "\\ud800"}, "timeout": 600, "resourceLimits": {"cpu": "1"}, "entrypoint": ["tail"]}',
    ),
    Step("create", "body-not-utf8", raw=b'{"image": {"uri": "py\xfe"}, "timeout": 600}'),
    Step("create", "empty-body", raw=b""),
    Step("create", "no-content-type", body=create_body(), content_type=None),
    Step("create", "text-content-type", body=create_body(), content_type="text/plain"),
)

CANONICAL_PROGRAMS: tuple[Program, ...] = (
    Program(
        "lifecycle",
        (
            create(metadata={"team": "a", "purpose": "demo"}, env={"A": "1"}),
            on("get", 1),
            on("pause", 1),
            on("get", 1, "paused"),
            on("pause", 1, "already-paused"),
            on("resume", 1),
            on("get", 1, "resumed"),
            on("resume", 1, "already-running"),
            renew(1, "future", RelTime(3600)),
            on("get", 1, "renewed"),
            on("delete", 1),
            on("get", 1, "deleted"),
            on("delete", 1, "deleted"),
            on("pause", 1, "deleted"),
            on("resume", 1, "deleted"),
        ),
    ),
    Program(
        "list-filters-and-pagination",
        (
            create(metadata={"team": "a", "tier": "x"}),
            create(metadata={"team": "a", "tier": "y"}),
            create(metadata={"team": "b"}, timeout=None),
            _list(),
            _list("filter", metadata="team=a"),
            _list("filter", metadata="team=a&tier=x"),
            _list("filter", metadata="team=a", state="running"),
            _list("filter", state=["Paused", "Failed"]),
            on("pause", 2),
            _list("filter", state="PAUSED"),
            _list("filter", state=["running", "paused"], pageSize="2"),
            _list("page", pageSize="1", page="2"),
            _list("page", page="9"),
            _list("page", pageSize="200"),
            _list("filter", metadata="team=zzz"),
            _list("filter", metadata="a=b=c"),
            _list("filter", metadata=""),
            _list("filter", state="bogus"),
            _list("bad-metadata", metadata="=&&"),
            _list("bad-metadata", metadata="a"),
            _list("bad-page", pageSize="500"),
            _list("bad-page", page="0"),
            _list("bad-page", pageSize="-1"),
            _list("bad-page", page="x"),
            _list("bad-page", page="1.5"),
        ),
    ),
    Program("create-validation", (create(), *INVALID_CREATES, _list())),
    Program(
        "renew-expiration",
        (
            create(),
            renew(1, "future", RelTime(3600)),
            renew(1, "future-z", RelTime(7200, "Z")),
            renew(1, "future-plus2", RelTime(5400, "plus2")),
            renew(1, "future-naive", RelTime(4000, "naive")),
            on("get", 1, "renewed"),
            renew(1, "absolute", "2030-01-01T00:00:00Z"),
            renew(1, "date-only", "2030-06-01"),
            on("get", 1, "renewed"),
            renew(1, "past", RelTime(-3600)),
            renew(1, "epoch-int", 5),
            renew(1, "epoch-future", 1_900_000_000),
            renew(1, "garbage", "garbage"),
            renew(1, "null", None),
            on("renew", 1, "missing", body={}),
            on("renew", 1, "body-list", body=[]),
            on("renew", 1, "malformed-json", raw=b"{bad"),
            renew(0, "unknown-sandbox", RelTime(3600)),
            create(timeout=None),
            renew(2, "no-expiry", RelTime(3600)),
            on("get", 2),
        ),
    ),
    Program(
        "endpoints",
        (
            create(),
            on("endpoint", 1, "direct-execd"),
            on("endpoint", 1, "direct-egress", port="18080"),
            on("endpoint", 1, "direct-http", port="8080"),
            on("endpoint", 1, "server-proxy", params=(("use_server_proxy", "true"),)),
            on("endpoint", 1, "server-proxy", port="18080", params=(("use_server_proxy", "yes"),)),
            on("endpoint", 1, "direct-execd", params=(("use_server_proxy", "false"),)),
            on("endpoint", 1, "bad-proxy-flag", params=(("use_server_proxy", "maybe"),)),
            on("endpoint", 1, "invalid-port", port="0"),
            on("endpoint", 1, "invalid-port", port="65536"),
            on("endpoint", 1, "invalid-port", port="-1"),
            on("endpoint", 1, "port-not-int", port="abc"),
            on("endpoint", 1, "signed", params=(("expires", "2000000000"),)),
            on("endpoint", 1, "signed-proxy", params=(("use_server_proxy", "true"), ("expires", "1"))),
            on("endpoint", 1, "expires-not-int", params=(("expires", "abc"),)),
            on("endpoint", 0, "unknown-sandbox"),
            on("endpoint", 0, "invalid-port", port="0"),
            on("pause", 1),
            on("endpoint", 1, "direct-execd-paused"),
        ),
    ),
    Program(
        "auth-and-routing",
        (
            create(),
            _list("auth-missing", auth="missing"),
            _list("auth-wrong", auth="wrong"),
            Step("create", "auth-missing", body=create_body(), auth="missing"),
            on("get", 1, "auth-wrong", auth="wrong"),
            on("delete", 1, "auth-missing", auth="missing"),
            on("pause", 1, "auth-wrong", auth="wrong"),
            on("endpoint", 1, "auth-missing", auth="missing"),
            on("get", 1, "no-prefix", prefix=""),
            Step("list", "no-prefix", prefix=""),
            on("get", 1, "request-id", request_id="sandproof-req-1"),
            on("get", 0, "unknown-sandbox"),
            on("get", 0, "unknown-sandbox-auth-missing", auth="missing"),
            on("delete", 0, "unknown-sandbox"),
        ),
    ),
)
