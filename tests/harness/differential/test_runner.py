"""Differential fidelity: the OpenSandbox mock against the real opensandbox-server 1.1.1 (Docker runtime, fake Engine API).

Canonical and generated request programs run on both; any divergence that no known deviation covers fails with
a readable diff. Each mock finding (docs/differential-findings.md) keeps its own test here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harness.differential.campaign import KEY, LIMITED, mock_for_differential, run_campaign, sides
from harness.differential.canonical import on
from harness.differential.deviations import (
    KNOWN_DEVIATIONS,
    Deviation,
    covering,
    deviations_markdown,
    register_known_deviations,
)
from harness.differential.real_server import RealOpenSandboxServer
from harness.differential.runner import (
    ABSENT,
    CANONICAL_PROGRAMS,
    DROP,
    DifferentialRunner,
    Program,
    ProgramResult,
    RelTime,
    Side,
    Step,
    create,
    create_body,
    difference_values,
)
from harness.differential.strategies import HUGE_CREATE
from mockserver.asgi.server import MockServer
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock

pytestmark = pytest.mark.timeout(180)

CAMPAIGN_STEPS = {"dev": 50, "ci": 120, "thorough": 1000}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 120)


def _mock() -> OpenSandboxMock:
    """Return a Docker-profile mock on a wall clock (relative times need one), with the shared API key."""
    return OpenSandboxMock(api_key=KEY, clock=VirtualClock("wall", start=time.time()))


@pytest.fixture(scope="module")
def real() -> Iterator[RealOpenSandboxServer]:
    """Start the real server once for the module."""
    register_known_deviations()
    with RealOpenSandboxServer(api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def mock_url(real: RealOpenSandboxServer) -> Iterator[str]:
    """Serve one mock for the module, built from the real server's own configuration file."""
    with mock_for_differential(real).server() as server:
        yield server.url


@pytest.fixture(scope="module")
def runner(real: RealOpenSandboxServer, mock_url: str) -> Iterator[DifferentialRunner]:
    """Compare real and mock, ignoring known deviations and open findings."""
    with DifferentialRunner(Side("real", real.url, KEY), Side("mock", mock_url, KEY)) as diff_runner:
        yield diff_runner


@pytest.fixture(scope="module")
def strict_runner(real: RealOpenSandboxServer, mock_url: str) -> Iterator[DifferentialRunner]:
    """Compare real and mock, ignoring only the known deviations."""
    with DifferentialRunner(
        Side("real", real.url, KEY), Side("mock", mock_url, KEY), deviations=KNOWN_DEVIATIONS
    ) as diff_runner:
        yield diff_runner


@pytest.mark.parametrize("program", CANONICAL_PROGRAMS, ids=lambda p: p.name)
def test_canonical_program(runner: DifferentialRunner, program: Program) -> None:
    """Run a hand-written program; every divergence must be a listed deviation."""
    result = runner.run(program)
    assert result.ok, "unlisted divergences:\n" + result.report()


def test_small_campaign(runner: DifferentialRunner) -> None:
    """Run the seeded randomized differential on a small step budget: no divergence a deviation does not explain.

    ``make differential`` runs the same campaign on a large budget.
    """
    result = run_campaign(runner, steps=CAMPAIGN_STEPS)
    assert result.steps >= CAMPAIGN_STEPS
    assert result.ok, f"{len(result.divergent)} unexplained divergent steps:\n" + result.report()
    drawn = set(result.by_operation)
    assert {"create", "get", "list"} <= drawn and len(drawn) >= 6, result.summary()  # the draw reaches every kind


def test_campaign_counts_a_wrong_mock(real: RealOpenSandboxServer) -> None:
    """A mock whose create answers 200 diverges on every created sandbox; the summary counts it per operation."""
    mock = mock_for_differential(real)
    wrong = _rewrite(mock.app, "POST", "/v1/sandboxes", lambda s, b: (200 if s == 202 else s, b))
    with (
        MockServer(wrong) as server,
        DifferentialRunner(Side("real", real.url, KEY), Side("wrong", server.url, KEY)) as diff_runner,
    ):
        result = run_campaign(diff_runner, steps=12)
    assert not result.ok
    assert result.by_operation["create"]["divergent"] >= result.programs  # every program starts with a create
    assert {c.step.operation for c in result.divergent} == {"create"}
    assert "status: real 202 != candidate 200" in result.report()
    assert f"{len(result.divergent)} divergent" in result.summary()


#: What the non-default configuration (:data:`~harness.differential.campaign.LIMITED`) changes, on both sides.
LIMITED_PROGRAM = Program(
    "limited-configuration",
    (
        create("timeout-over-maximum", timeout=10_000_000_000),
        create("timeout-over-maximum", timeout=86_401),
        create("network-policy", networkPolicy={"defaultAction": "deny", "egress": []}),
        create(
            "allowed-host-volume",
            volumes=[{"name": "d", "host": {"path": "/tmp/sandproof-allowed/x"}, "mountPath": "/data"}],
        ),
        create("host-volume-off-list", volumes=[{"name": "d", "host": {"path": "/srv/x"}, "mountPath": "/data"}]),
        create("valid", timeout=86_400),
        on("endpoint", 6, "bridge-execd"),
        on("endpoint", 6, "bridge-http", port="8080"),
        on("endpoint", 6, "server-proxy", params=(("use_server_proxy", "true"),)),
    ),
)


def test_a_non_default_configuration_runs_alike_on_both_sides() -> None:
    """Both servers run from one file with a maximum timeout, no egress image, a narrow port range and an allow-list.

    The maximum timeout's 400, the missing egress image's 400, the allow-list and the bridge-mode endpoints
    (``<host-port>/proxy/44772``; 8080 its own host port) match; a small seeded campaign finds nothing unexplained.
    """
    with sides(LIMITED) as (real_side, mock_side), DifferentialRunner(real_side, mock_side) as diff_runner:
        result = diff_runner.run(LIMITED_PROGRAM)
        assert result.ok, "unlisted divergences:\n" + result.report()
        statuses = [c.real.status for c in result.comparisons]
        assert statuses[:3] == [400, 400, 400] and statuses[5] == 202, result.report(covered=True)
        over = result.comparisons[0].candidate.raw
        assert "exceeds configured maximum of 86400s" in over, over
        endpoint = result.comparisons[6].candidate.body
        assert endpoint == {"endpoint": "<host-port>/proxy/44772"}, endpoint
        campaign = run_campaign(diff_runner, steps=20)
    assert campaign.ok, campaign.report()


# -- findings ----------------------------------------------------------------------------------------


class FindingStillOpen(AssertionError):
    """The mock still diverges exactly as a finding describes."""


def _check_finding(diff_runner: DifferentialRunner, finding: str, program: Program) -> ProgramResult:
    """Run `program`; fail hard on divergences no entry explains, raise FindingStillOpen on the finding's own.

    A fixed finding has no `OPEN_FINDINGS` entries left, so its test fails on any divergence at all.
    """
    result = diff_runner.run(program)
    explained = [
        (comparison, diff, covering(comparison.key, diff.path, difference_values(diff.real, diff.candidate)))
        for comparison in result.comparisons
        for diff in comparison.unlisted
    ]
    assert all(entry is not None for _, _, entry in explained), "divergences no finding explains:\n" + result.report()
    if any(entry is not None and entry.finding == finding for _, _, entry in explained):
        raise FindingStillOpen(f"{finding} is still open (docs/differential-findings.md):\n" + result.report())
    return result


def _open(finding: str, reason: str) -> pytest.MarkDecorator:
    """Mark an open low-priority finding's test as expected to fail until the mock is fixed."""
    return pytest.mark.xfail(strict=True, raises=FindingStillOpen, reason=f"{finding}: {reason}")


def test_f1_huge_timeout_is_400_and_leaves_no_sandbox(real: RealOpenSandboxServer) -> None:
    """F1: a timeout past year 9999 is a 400 and creates nothing; later lists still work."""
    program = Program(
        "F1",
        (
            create("timeout-huge", timeout=10**12),
            Step("list", "after-huge-timeout"),
            create("timeout-huge-past-timedelta", timeout=10**20),
            create("timeout-year-2343", timeout=10**10),
            Step("get", "far-expiry", sandbox=3),
        ),
    )
    with (
        _mock().server() as fresh,
        DifferentialRunner(Side("real", real.url, KEY), Side("mock", fresh.url, KEY), deviations=KNOWN_DEVIATIONS) as r,
    ):
        _check_finding(r, "F1", program)


def test_f2_create_model_validators(strict_runner: DifferentialRunner) -> None:
    """F2: a create without `resourceLimits` (or with null), or with env `OPENSANDBOX_LIFECYCLE`, is a 422."""
    steps = (
        create("no-resource-limits", resourceLimits=DROP),
        create("no-resource-limits-null", resourceLimits=None),
        create("env-reserved", env={"OPENSANDBOX_LIFECYCLE": "x"}),
    )
    _check_finding(strict_runner, "F2", Program("F2", steps))


def test_f3_running_sandbox_message(strict_runner: DifferentialRunner) -> None:
    """F3: GET and list say "Sandbox container is running." for a fresh sandbox."""
    program = Program("F3", (create(), Step("get", sandbox=1), Step("list", "valid")))
    _check_finding(strict_runner, "F3", program)


def test_f4_resource_limit_quantities_are_validated(strict_runner: DifferentialRunner) -> None:
    """F4: `resourceLimits.cpu: "lots"` is a 400 `SANDBOX::INVALID_PARAMETER`; checked memory, cpu, gpu."""
    limits: tuple[tuple[str, dict[str, str]], ...] = (
        ("resource-limits-bogus", {"cpu": "lots"}),
        ("cpu-zero", {"cpu": "0"}),
        ("cpu-zero-millis", {"cpu": "0m"}),
        ("cpu-nan", {"cpu": "nan"}),
        ("memory-bogus", {"memory": "lots", "cpu": "lots"}),
        ("memory-empty", {"memory": ""}),
        ("memory-fraction", {"memory": "1.5Gi"}),
        ("memory-bad-unit", {"memory": "512Xi"}),
        ("memory-zero", {"memory": "0"}),
        ("gpu-zero", {"gpu": "0"}),
        ("gpu-bogus", {"gpu": "many"}),
        ("long-value", {"cpu": "x" * 100}),
        ("valid-quantities", {"cpu": "250m", "memory": " 1G ", "gpu": "all", "ephemeral-storage": "x"}),
        ("valid-units", {"cpu": "0.5", "memory": "512mb", "gpu": "2"}),
    )
    program = Program("F4", tuple(create(name, resourceLimits=value) for name, value in limits))
    _check_finding(strict_runner, "F4", program)


def test_f5_docker_rejects_secure_access_and_lifecycle(strict_runner: DifferentialRunner) -> None:
    """F5: on Docker, `secureAccess: true` and `lifecycle` are 400 `SANDBOX::INVALID_PARAMETER`."""
    steps = (
        create("secure-access", secureAccess=True),
        create("lifecycle-hooks", lifecycle={}),
        create("lifecycle-and-bad-label", lifecycle={}, metadata={"team": "a b"}),
        create("secure-access-and-bad-label", secureAccess="true", metadata={"team": "a b"}),
        create("secure-access-and-bad-limits", secureAccess=True, resourceLimits={"cpu": "lots"}),
        create("lifecycle-string", lifecycle="x"),
        create("pool-ref", extensions={"poolRef": "pool-a"}),
        create("pool-ref-no-limits", extensions={"poolRef": "pool-a"}, resourceLimits=DROP),
    )
    program = Program("F5", steps)
    _check_finding(strict_runner, "F5", program)


def test_f6_docker_rejects_signed_endpoints(strict_runner: DifferentialRunner) -> None:
    """F6: on Docker, `?expires=` is a 400 `SANDBOX::API_NOT_SUPPORTED`, even for an unknown sandbox."""
    expires = (("expires", "2000000000"),)
    steps = (
        create(),
        Step("endpoint", "signed", sandbox=1, params=expires),
        Step("endpoint", "signed", sandbox=0, params=expires),
    )
    _check_finding(strict_runner, "F6", Program("F6", steps))


def test_f7_last_transition_stays_at_creation(strict_runner: DifferentialRunner) -> None:
    """F7: on Docker, `status.lastTransitionAt` stays the creation time through pause and resume."""
    steps = (create(), Step("pause", sandbox=1), Step("get", "paused", 1), Step("resume", sandbox=1), Step("list"))
    _check_finding(strict_runner, "F7", Program("F7", steps))


def test_f8_whole_second_timestamps_have_no_fraction(strict_runner: DifferentialRunner) -> None:
    """F8: a whole-second time renders as `...:00Z`, without `.000000`."""
    renew = Step("renew", "absolute", sandbox=1, body={"expiresAt": "2030-01-01T00:00:00Z"})
    _check_finding(strict_runner, "F8", Program("F8", (create(), renew, Step("get", "renewed", 1))))


def test_f9_numeric_expiry_is_unix_seconds(strict_runner: DifferentialRunner) -> None:
    """F9: a JSON number in `expiresAt` means Unix seconds (past: 400, future: 200)."""
    steps = (
        create(),
        Step("renew", "epoch-int", sandbox=1, body={"expiresAt": 5}),
        Step("renew", "epoch-future", sandbox=1, body={"expiresAt": 1_900_000_000}),
        Step("renew", "epoch-text", sandbox=1, body={"expiresAt": "1900000000.25"}),
        Step("renew", "epoch-millis", sandbox=1, body={"expiresAt": 1_900_000_000_500}),
        Step("renew", "epoch-float", sandbox=1, body={"expiresAt": 1_900_000_000.75}),
        Step("get", "renewed", sandbox=1),
        Step("renew", "epoch-bool", sandbox=1, body={"expiresAt": True}),
        Step("renew", "epoch-past-9999", sandbox=1, body={"expiresAt": 10**20}),
    )
    _check_finding(strict_runner, "F9", Program("F9", steps))


def test_f10_port_checked_before_lookup(strict_runner: DifferentialRunner) -> None:
    """F10: an invalid port on an unknown sandbox is a 400 `DOCKER::INVALID_PORT`, not a 404."""
    steps = (
        Step("endpoint", "invalid-port", sandbox=0, port="0"),
        Step("endpoint", "invalid-port", sandbox=0, port="70000"),
        create(),
        Step("delete", sandbox=1),
        Step("endpoint", "invalid-port", sandbox=1, port="0"),
        Step("endpoint", "unknown-sandbox", sandbox=1),
    )
    _check_finding(strict_runner, "F10", Program("F10", steps))


def test_f11_empty_metadata_is_echoed(strict_runner: DifferentialRunner) -> None:
    """F11: the create reply echoes `"metadata": {}`."""
    steps = (create("metadata-empty", metadata={}), Step("get", sandbox=1), create("metadata-null", metadata=None))
    _check_finding(strict_runner, "F11", Program("F11", steps))


def test_f12_non_json_content_type_is_422(strict_runner: DifferentialRunner) -> None:
    """F12: a create without a JSON content type is a 422 `model_attributes_type`."""
    steps = (
        Step("create", "no-content-type", body=create_body(), content_type=None),
        Step("create", "text-content-type", body=create_body(), content_type="text/plain"),
        Step("create", "json-suffix-content-type", body=create_body(), content_type="application/vnd.x+json"),
        Step("create", "json-charset-content-type", body=create_body(), content_type="Application/JSON; charset=utf-8"),
        Step("create", "empty-text-content-type", raw=b"", content_type="text/plain"),
        Step("renew", "text-content-type", sandbox=3, body={"expiresAt": "2030-01-01T00:00:00Z"}, content_type=None),
    )
    _check_finding(strict_runner, "F12", Program("F12", steps))


def test_f13_arbitrary_extensions_are_not_echoed(strict_runner: DifferentialRunner) -> None:
    """F13: extensions that are not annotation-backed are not echoed by create, GET or list."""
    steps = (
        create("extensions", extensions={"sandproof": "1"}),
        Step("get", sandbox=1),
        Step("list"),
        create("extensions-annotated", extensions={"opensandbox.extensions.team": "a", "sandproof": "1"}),
        Step("get", sandbox=2),
        Step("list"),
    )
    _check_finding(strict_runner, "F13", Program("F13", steps))


# -- the runner itself -------------------------------------------------------------------------------


def _rewrite(app: ASGIApp, method: str, path: str, change: Any) -> ASGIApp:
    """Wrap `app`: pass responses to `method path` through `change(status, body) -> (status, body)`."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != method or scope["path"] != path:
            await app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            status, body = change(start["status"], b"".join(chunks))
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await app(scope, receive, capture)

    return wrapped


def _without_has_next_page(status: int, body: bytes) -> tuple[int, bytes]:
    """Drop `pagination.hasNextPage` from a list reply."""
    data = json.loads(body)
    data["pagination"].pop("hasNextPage", None)
    return status, json.dumps(data).encode()


def _run_against_wrapped(real: RealOpenSandboxServer, wrap: Any, program: Program) -> ProgramResult:
    """Run `program` against the real server and a mock whose app is wrapped by `wrap`."""
    mock = _mock()
    with (
        MockServer(wrap(mock.app)) as server,
        DifferentialRunner(Side("real", real.url, KEY), Side("wrong", server.url, KEY)) as diff_runner,
    ):
        return diff_runner.run(program)


def test_runner_catches_200_instead_of_202_on_create(real: RealOpenSandboxServer) -> None:
    """Report a create that answers 200 instead of 202 as an unlisted status divergence."""
    result = _run_against_wrapped(
        real,
        lambda app: _rewrite(app, "POST", "/v1/sandboxes", lambda s, b: (200 if s == 202 else s, b)),
        Program("wrong-create-status", (create(), Step("get", sandbox=1))),
    )
    [divergent] = result.divergences
    assert divergent.step.operation == "create"
    assert [(d.path, d.real, d.candidate) for d in divergent.unlisted] == [("status", 202, 200)]
    assert "status: real 202 != candidate 200" in result.report()


def test_runner_catches_a_missing_pagination_key(real: RealOpenSandboxServer) -> None:
    """Report a list reply without `pagination.hasNextPage` as an unlisted missing key."""
    result = _run_against_wrapped(
        real,
        lambda app: _rewrite(app, "GET", "/v1/sandboxes", _without_has_next_page),
        Program("no-has-next-page", (create(), Step("list"))),
    )
    [divergent] = result.divergences
    assert [(d.path, d.real, d.candidate) for d in divergent.unlisted] == [
        ("body.pagination.hasNextPage", False, ABSENT)
    ]


def test_runner_catches_a_misplaced_sandbox_id(real: RealOpenSandboxServer) -> None:
    """Report an error message naming the wrong sandbox, which id normalisation keeps visible."""

    def swap(status: int, body: bytes) -> tuple[int, bytes]:
        return status, body.replace(b"sandproof-missing-0", b"sandproof-missing-9")

    result = _run_against_wrapped(
        real,
        lambda app: _rewrite(app, "GET", "/v1/sandboxes/sandproof-missing-0", swap),
        Program("wrong-id", (Step("get", sandbox=0),)),
    )
    [divergent] = result.divergences
    assert [d.path for d in divergent.unlisted] == ["body.message"]


def test_mock_against_itself_has_no_differences_at_all() -> None:
    """Normalise ids, timestamps, ports and request ids so that two independent mocks compare equal."""
    first, second = _mock(), _mock()
    with (
        first.server() as one,
        second.server() as two,
        DifferentialRunner(Side("one", one.url, KEY), Side("two", two.url, KEY), deviations=()) as diff_runner,
    ):
        results = diff_runner.run_all(CANONICAL_PROGRAMS)
    differences = [d.describe() for r in results for c in r.comparisons for d in c.differences]
    assert differences == []
    created = results[0].comparisons[0].real.body
    assert created["id"] == "<sandbox#1>"
    assert created["expiresAt"] == "<created#1+600s|f6Z>"
    assert created["status"]["lastTransitionAt"] == "<same-as-createdAt>"


def test_relative_times_and_deviation_matching() -> None:
    """Render relative times per style; match deviations on operation, aspect and values."""
    from datetime import UTC, datetime

    anchor = datetime(2030, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    assert RelTime(60, "Z").render(anchor)[0] == "2030-01-01T00:01:00.500000Z"
    assert RelTime(60, "plus2").render(anchor)[0] == "2030-01-01T02:01:00.500000+02:00"
    assert RelTime(-60, "naive").render(anchor)[0] == "2029-12-31T23:59:00.500000"
    [endpoint] = [d for d in KNOWN_DEVIATIONS if d.operation == "endpoint:direct*"]
    own = '"<host-port>/proxy/44772" -> "<server>/direct/sb-1/44772"'
    assert endpoint.covers("endpoint:direct-execd", "body.endpoint", own)
    assert not endpoint.covers("endpoint:direct-execd", "body.endpoint", '"<host-port>/proxy/44772" -> "<host-port>:1"')
    assert not endpoint.covers("endpoint:server-proxy", "body.endpoint")
    assert not endpoint.covers("endpoint:direct-execd", "status")
    f10 = Deviation("endpoint:invalid-port*", "status", "400", "404", "example", "F10", "400 -> 404")
    assert f10.covers("endpoint:invalid-port@missing", "status", "400 -> 404")
    assert not f10.covers("endpoint:invalid-port", "status", "400 -> 200")
    assert not f10.covers("get:valid", "status", "400 -> 404")
    assert "| `endpoint:direct*` | `body.endpoint` |" in deviations_markdown()


def test_findings_page_lists_every_deviation() -> None:
    """docs/differential-findings.md carries the deviation table exactly as the runner uses it."""
    page = Path(__file__).resolve().parents[3] / "docs" / "differential-findings.md"
    assert deviations_markdown() in page.read_text(encoding="utf-8")


def test_huge_create_body_is_the_listed_choice(runner: DifferentialRunner) -> None:
    """A create body over 1 MiB: the real server creates the sandbox, the mock answers 413, as listed."""
    result = runner.run(Program("huge-body", (HUGE_CREATE, Step("list"))))
    assert result.ok, result.report()
    [difference] = result.comparisons[0].differences
    assert (difference.path, difference.real, difference.candidate) == ("status", 202, 413)
    assert difference.deviation is not None and difference.deviation.operation == "create:huge-body"
