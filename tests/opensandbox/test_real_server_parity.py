"""Regression tests for the mock's fixes against the real server 1.1.1 (docs/differential-findings.md, F1-F13)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import httpx
import pytest

from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.model.bodies import RenewRequest, validated
from mockserver.opensandbox.model.spec import iso, parse_create
from mockserver.opensandbox.model.validation import RequestValidationError

from .conftest import API_KEY

KEY = {"OPEN-SANDBOX-API-KEY": API_KEY}
GOOD: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}
DROP = object()
INVALID = "SANDBOX::INVALID_PARAMETER"


def body(**fields: Any) -> dict[str, Any]:
    """Return the good create body with `fields` changed (`DROP` removes a key)."""
    return {k: v for k, v in {**GOOD, **fields}.items() if v is not DROP}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[OpenSandboxMock, str]]:
    """Serve one Docker-profile mock for the module (starting a server per test is the slow part)."""
    shared = OpenSandboxMock(seed=7, api_key=API_KEY)
    with shared.server() as srv:
        yield shared, srv.url


@pytest.fixture
def mock(served: tuple[OpenSandboxMock, str]) -> OpenSandboxMock:
    """Return the module's mock with no sandboxes."""
    served[0].reset_state()
    return served[0]


@pytest.fixture
def client(mock: OpenSandboxMock, served: tuple[OpenSandboxMock, str]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[1], headers=KEY) as c:
        yield c


def _value_error(text: str) -> tuple[int, str]:
    return 422, f"Value error, {text}"


REJECTED: dict[str, tuple[dict[str, Any], tuple[int, str], str]] = {
    # F1: past year 9999; 10**20 s does not even fit a timedelta.
    "timeout-year-33715": (body(timeout=10**12), (400, INVALID), "Sandbox timeout 1000000000000s is too large"),
    "timeout-huge": (body(timeout=10**20), (400, INVALID), f"Sandbox timeout {10**20}s is too large"),
    # F2: the model validator, in the real order (the env check comes before the image check).
    "no-resource-limits": (body(resourceLimits=DROP), _value_error("resourceLimits is required"), ""),
    "null-resource-limits": (body(resourceLimits=None), _value_error("resourceLimits is required"), ""),
    "env-reserved": (
        body(image=DROP, env={"OPENSANDBOX_LIFECYCLE": "x"}),
        _value_error("Environment variable 'OPENSANDBOX_LIFECYCLE' is reserved."),
        "",
    ),
    "no-image-before-limits": (body(image=DROP, resourceLimits=DROP), _value_error("Exactly one of image"), ""),
    # F4: memory is checked before cpu.
    "cpu-lots": (body(resourceLimits={"cpu": "lots"}), (400, INVALID), "Invalid resourceLimits.cpu: 'lots';"),
    "memory-first": (
        body(resourceLimits={"cpu": "0", "memory": "2 Gi"}),
        (400, INVALID),
        "Invalid resourceLimits.memory: '2 Gi'; must resolve to a positive resource limit.",
    ),
    "gpu-zero": (
        body(resourceLimits={"gpu": "0"}),
        (400, INVALID),
        "must resolve to a positive device count or 'all'.",
    ),
    # F5: lifecycle comes first of all, secureAccess after the labels and before the quantities.
    "lifecycle-before-labels": (
        body(lifecycle={}, metadata={"team": "a b"}),
        (400, INVALID),
        "lifecycle hooks are not supported by the Docker provider.",
    ),
    "labels-before-secure-access": (
        body(secureAccess=True, metadata={"team": "a b"}),
        (400, "SANDBOX::INVALID_METADATA_LABEL"),
        "",
    ),
    "secure-access-before-limits": (
        body(secureAccess="yes", resourceLimits={"cpu": "lots"}),
        (400, INVALID),
        "secureAccess is not supported when runtime.type='docker'.",
    ),
    # Measured on the real 1.1.1 server: the expiry is checked after the platform, before secureAccess and limits.
    "timeout-before-limits": (
        body(timeout=10**12, resourceLimits={"cpu": "lots"}),
        (400, INVALID),
        "Sandbox timeout 1000000000000s is too large",
    ),
    "timeout-before-secure-access": (
        body(timeout=10**12, secureAccess=True),
        (400, INVALID),
        "Sandbox timeout 1000000000000s is too large",
    ),
    "platform-before-timeout": (
        body(timeout=10**12, platform={"os": "plan9", "arch": "amd64"}),
        (400, INVALID),
        "Unsupported platform.os 'plan9'. Supported values: ['linux', 'windows'].",
    ),
    "pool-ref": (body(extensions={"poolRef": "p"}), (400, "SANDBOX::UNSUPPORTED_POOL_REF"), ""),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_create_matches_real_server_and_keeps_state(
    mock: OpenSandboxMock, client: httpx.Client, name: str
) -> None:
    """A create the real server rejects is rejected the same way, and the mock stays usable and unchanged."""
    payload, (status, code), text = REJECTED[name]
    assert client.post("/v1/sandboxes", json=GOOD).status_code == 202
    before = mock.snapshot()
    resp = client.post("/v1/sandboxes", json=payload)
    assert resp.status_code == status, resp.text
    if status == 422:
        [entry] = resp.json()["detail"]
        assert (entry["type"], entry["loc"], entry["input"]) == ("value_error", ["body"], payload)
        assert entry["msg"].startswith(code)
    else:
        assert resp.json()["code"] == code
        assert text in resp.json()["message"]
    assert mock.snapshot() == before
    assert client.get("/v1/sandboxes").status_code == 200


@pytest.mark.parametrize(
    "limits",
    [{}, {"cpu": "500m", "memory": "512Mi"}, {"cpu": "0.25", "memory": " 1G ", "gpu": "all"}, {"disk": "lots"}],
)
def test_docker_accepts_readable_quantities(client: httpx.Client, limits: dict[str, str]) -> None:
    """F4: quantities Docker can read (and unknown keys) are accepted; a far timeout is too (F1)."""
    assert client.post("/v1/sandboxes", json=body(resourceLimits=limits, timeout=10**10)).status_code == 202


def test_kubernetes_profile_keeps_docker_only_rules_off() -> None:
    """F5/F6: lifecycle, secureAccess and signed endpoints are refused by the Docker profile only."""
    mock = OpenSandboxMock(seed=3, profile="kubernetes", clock=VirtualClock("manual"), pending_seconds=0)
    with mock.server() as srv, httpx.Client(base_url=srv.url) as client:
        created = client.post("/v1/sandboxes", json=body(lifecycle={}, secureAccess=True))
        assert created.status_code == 202, created.text
        signed = client.get(f"/v1/sandboxes/{created.json()['id']}/endpoints/44772", params={"expires": "2000000000"})
        assert signed.status_code == 200, signed.text


def test_status_message_and_last_transition(manual_mock: OpenSandboxMock) -> None:
    """F3/F7: only the create reply says "started"; Docker keeps lastTransitionAt at creation until the container exits."""
    with manual_mock.server() as srv, httpx.Client(base_url=srv.url, headers=KEY) as client:
        created = client.post("/v1/sandboxes", json=GOOD).json()
        sid = created["id"]
        assert created["status"]["message"] == "Sandbox container started successfully."
        assert created["status"]["lastTransitionAt"] == created["createdAt"]
        got = client.get(f"/v1/sandboxes/{sid}").json()
        assert got["status"]["message"] == "Sandbox container is running."
        assert client.get("/v1/sandboxes").json()["items"][0]["status"]["message"] == "Sandbox container is running."
        for action in ("pause", "resume"):
            manual_mock.advance(5)
            assert client.post(f"/v1/sandboxes/{sid}/{action}").status_code == 202
            assert client.get(f"/v1/sandboxes/{sid}").json()["status"]["lastTransitionAt"] == created["createdAt"]
        manual_mock.advance(5)
        manual_mock.oom_kill(sid)
        failed = client.get(f"/v1/sandboxes/{sid}").json()["status"]
        assert failed["state"] == "Failed"
        assert failed["lastTransitionAt"] == iso(manual_mock.clock.now()) != created["createdAt"]


def test_whole_seconds_have_no_fraction(client: httpx.Client) -> None:
    """F8: a zero fraction is left out, any other is rendered with microseconds."""
    assert iso(1_893_456_000.0) == "2030-01-01T00:00:00Z"
    assert iso(1_893_456_000.5) == "2030-01-01T00:00:00.500000Z"
    sid = client.post("/v1/sandboxes", json=GOOD).json()["id"]
    renewed = client.post(f"/v1/sandboxes/{sid}/renew-expiration", json={"expiresAt": "2030-01-01T00:00:00+00:00"})
    assert renewed.json() == {"expiresAt": "2030-01-01T00:00:00Z"}
    assert client.get(f"/v1/sandboxes/{sid}").json()["expiresAt"] == "2030-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, "1970-01-01T00:00:05+00:00"),
        (1_900_000_000, "2030-03-17T17:46:40+00:00"),
        ("1900000000", "2030-03-17T17:46:40+00:00"),
        ("1900000000.25", "2030-03-17T17:46:40.250000+00:00"),
        ("+.5", "1970-01-01T00:00:00.500000+00:00"),
        ("1.5e3", "1970-01-01T00:25:00+00:00"),
        (-1.5, "1969-12-31T23:59:58.500000+00:00"),
        (1.9999995, "1970-01-01T00:00:01.999999+00:00"),
        (20_000_000_000, "2603-10-11T11:33:20+00:00"),
        (20_000_000_001, "1970-08-20T11:33:20.001000+00:00"),
        (1_900_000_000_500, "2030-03-17T17:46:40.500000+00:00"),
        ("2030-01-01T02:00:00+02:00", "2030-01-01T00:00:00+00:00"),
    ],
)
def test_unix_times_read_like_pydantic(value: Any, expected: str) -> None:
    """F9: numbers and numeric text are Unix seconds (milliseconds above 2e10), like pydantic."""
    assert validated(RenewRequest, {"expiresAt": value}).expires_at.astimezone(UTC).isoformat() == expected


@pytest.mark.parametrize(
    ("value", "kind", "reason"),
    [
        (True, "datetime_type", None),
        (None, "datetime_type", None),
        (10**20, "datetime_parsing", "dates after 9999 are not supported as unix timestamps"),
        (float("nan"), "datetime_parsing", "NaN values not permitted"),
        (-62_135_596_800_001, "datetime_parsing", "year 0 is out of range"),
        ("99999999999999999", "datetime_from_date_parsing", "dates after 9999 are not supported as unix timestamps"),
        ("1e3", "datetime_from_date_parsing", "input is too short"),
        ("not-a-date", "datetime_from_date_parsing", "invalid character in year"),
        ("2030-13-01", "datetime_from_date_parsing", "month value is outside expected range of 1-12"),
    ],
)
def test_bad_unix_times_are_422(value: Any, kind: str, reason: str | None) -> None:
    """F9: out-of-range and non-numeric values give pydantic's error types and the parser's own reason."""
    with pytest.raises(RequestValidationError) as caught:
        validated(RenewRequest, {"expiresAt": value})
    [entry] = caught.value.errors
    assert entry["type"] == kind and entry["loc"] == ["body", "expiresAt"]
    assert entry.get("ctx", {}).get("error") == reason


def test_numeric_renew_over_http(mock: OpenSandboxMock, client: httpx.Client) -> None:
    """F9: a past Unix time is the runtime's 400 and leaves the expiry alone; a future one is stored."""
    sid = client.post("/v1/sandboxes", json=GOOD).json()["id"]
    before = mock.snapshot()
    past = client.post(f"/v1/sandboxes/{sid}/renew-expiration", json={"expiresAt": 5})
    assert past.status_code == 400 and past.json()["code"] == "DOCKER::INVALID_EXPIRATION"
    assert mock.snapshot() == before
    future = client.post(f"/v1/sandboxes/{sid}/renew-expiration", json={"expiresAt": 1_900_000_000})
    assert future.json() == {"expiresAt": "2030-03-17T17:46:40Z"}
    assert mock.sandbox(sid).expires_at == 1_900_000_000


def test_endpoint_checks_run_before_the_lookup(mock: OpenSandboxMock, client: httpx.Client) -> None:
    """F6/F10: proxy+expires, then expires (Docker), then the port range, then the sandbox lookup."""
    before = mock.snapshot()
    cases: list[tuple[str, dict[str, str], int, str]] = [
        ("0", {}, 400, "DOCKER::INVALID_PORT"),
        ("70000", {}, 400, "DOCKER::INVALID_PORT"),
        ("0", {"expires": "2000000000"}, 400, "SANDBOX::API_NOT_SUPPORTED"),
        ("44772", {"expires": "2000000000"}, 400, "SANDBOX::API_NOT_SUPPORTED"),
        ("0", {"expires": "1", "use_server_proxy": "true"}, 400, INVALID),
        ("44772", {}, 404, "DOCKER::SANDBOX_NOT_FOUND"),
    ]
    for port, params, status, code in cases:
        resp = client.get(f"/v1/sandboxes/nope/endpoints/{port}", params=params)
        assert (resp.status_code, resp.json()["code"]) == (status, code), (port, params, resp.text)
    assert client.get("/v1/sandboxes/nope/endpoints/44772", params={"expires": "x"}).status_code == 422
    assert mock.snapshot() == before


def test_create_reply_echoes_metadata_and_annotated_extensions(mock: OpenSandboxMock, client: httpx.Client) -> None:
    """F11/F13: `metadata: {}` is echoed by create only; only `opensandbox.extensions.*` keys are echoed."""
    extensions = {"opensandbox.extensions.team": "a", "sandproof": "1", "image-pull-policy": "Always"}
    created = client.post("/v1/sandboxes", json=body(metadata={}, extensions=extensions)).json()
    assert created["metadata"] == {}
    assert created["extensions"] == {"opensandbox.extensions.team": "a"}
    got = client.get(f"/v1/sandboxes/{created['id']}").json()
    assert "metadata" not in got and got["extensions"] == {"opensandbox.extensions.team": "a"}
    assert client.get("/v1/sandboxes").json()["items"][0]["extensions"] == {"opensandbox.extensions.team": "a"}
    assert mock.sandbox(created["id"]).spec.extensions == extensions
    plain = client.post("/v1/sandboxes", json=body(metadata=None, extensions={"sandproof": "1"})).json()
    assert "metadata" not in plain and "extensions" not in plain


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded", "json"])
def test_non_json_content_type_is_not_parsed(
    mock: OpenSandboxMock, client: httpx.Client, content_type: str | None
) -> None:
    """F12: without a JSON media type the body is text, which the body model rejects (422)."""
    sid = client.post("/v1/sandboxes", json=GOOD).json()["id"]
    before = mock.snapshot()
    headers = {} if content_type is None else {"content-type": content_type}
    for path, raw in (
        ("/v1/sandboxes", json.dumps(GOOD)),
        (f"/v1/sandboxes/{sid}/renew-expiration", '{"expiresAt": "2030-01-01T00:00:00Z"}'),
    ):
        resp = client.post(path, content=raw.encode(), headers=headers)
        assert resp.status_code == 422, resp.text
        assert resp.json()["detail"] == [
            {
                "type": "model_attributes_type",
                "loc": ["body"],
                "msg": "Input should be a valid dictionary or object to extract fields from",
                "input": raw,
            }
        ]
    empty = client.post("/v1/sandboxes", content=b"", headers=headers)
    assert empty.json()["detail"][0]["type"] == "missing"
    assert mock.snapshot() == before


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/vnd.x+json"]
)
def test_json_media_types_are_parsed(client: httpx.Client, content_type: str) -> None:
    """F12: `application/json` with parameters or any case, and `application/*+json`, are JSON."""
    resp = client.post("/v1/sandboxes", content=json.dumps(GOOD).encode(), headers={"content-type": content_type})
    assert resp.status_code == 202, resp.text


def test_merge_patch_metadata_still_parses(client: httpx.Client) -> None:
    """F12: a metadata merge patch sent as `application/merge-patch+json` is JSON."""
    sid = client.post("/v1/sandboxes", json=body(metadata={"team": "a"})).json()["id"]
    resp = client.patch(
        f"/v1/sandboxes/{sid}/metadata",
        content=b'{"team": null, "tier": "x"}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert resp.status_code == 200 and resp.json()["metadata"] == {"tier": "x"}


def test_value_error_body_is_the_request(client: httpx.Client) -> None:
    """F2: the model-level 422 carries the whole body as `input` and an empty `ctx.error`."""
    payload = body(resourceLimits=DROP)
    resp = client.post("/v1/sandboxes", json=payload)
    assert resp.json() == {
        "detail": [
            {
                "type": "value_error",
                "loc": ["body"],
                "msg": "Value error, resourceLimits is required when poolRef is not provided.",
                "input": payload,
                "ctx": {"error": {}},
            }
        ]
    }
    with pytest.raises(RequestValidationError):
        parse_create(payload, "kubernetes")
