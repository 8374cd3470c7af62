"""The proxy's rules without HTTP: routing by host, the admission table, the wake decision, forwarded headers."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model import (
    Admission,
    IngressRules,
    KeyRing,
    ProxyRequest,
    Settle,
    Target,
    TensorLakeModel,
    admin,
    lifecycle,
    without_waiting,
)
from mockserver.tensorlake.model.ingress import RESUME_BUDGET, parse_label, target_of

from .conftest import DOMAIN, KEY, OTHER, call

ORG, PROJECT = "org_1", "proj_1"


@pytest.mark.parametrize(
    ("host", "header", "path", "target"),
    [
        ("sb1.sandbox.localhost", None, "/", Target("sb1", 9501)),
        ("8080-sb1.sandbox.localhost:8911", None, "/", Target("sb1", 8080)),
        ("SB1.Sandbox.Localhost", None, "/", Target("sb1", 9501)),
        ("3000-my-env.local", None, "/", Target("my-env", 3000)),
        ("99999-sb1.sandbox.localhost", None, "/", None),
        ("a.b.sandbox.localhost", None, "/", None),
        ("127.0.0.1:8911", "sb1", "/api/v1/health", Target("sb1", 9501)),
        ("127.0.0.1:8911", "sb1", "/_mock/reset", None),
        ("127.0.0.1:8911", None, "/sandboxes", None),
    ],
)
def test_target_of(host: str, header: str | None, path: str, target: Target | None) -> None:
    assert target_of(host, header, path, DOMAIN) == target


def test_a_port_label_needs_a_port_in_range() -> None:
    assert parse_label("0-sb") is None and parse_label("65535-sb") == Target("sb", 65535)
    assert parse_label("") is None


def sandbox(model: TensorLakeModel, **body: Any) -> str:
    """Create a sandbox for ``KEY`` and return its id."""
    answer = without_waiting(lifecycle.create(model, call(), body))
    sid: str = answer.body["sandbox_id"]
    return sid


def request(label: str, port: int, who: str, session: str = "") -> ProxyRequest:
    """Return a proxied request for ``label``/``port`` with credentials ``who``."""
    scoped = f"organizationId={ORG}&projectId={PROJECT}"
    credentials: dict[str, dict[str, Any]] = {
        "none": {},
        "owner key": {"authorization": f"Bearer {KEY}"},
        "other key": {"authorization": f"Bearer {OTHER}"},
        "cookie+scope": {"cookie": f"tl.session_token={session}", "query": scoped},
        "legacy cookie+scope": {"cookie": f"tl-session={session}", "query": scoped},
        "cookie, no scope": {"cookie": f"tl.session_token={session}"},
        "cookie, other project": {
            "cookie": f"tl.session_token={session}",
            "query": f"organizationId={ORG}&projectId=p2",
        },
        "unknown cookie": {"cookie": "tl.session_token=forged", "query": scoped},
    }
    return ProxyRequest(Target(label, port), **credentials[who])


ADMISSION = [
    # (port, allow_unauthenticated_access, credentials, status or None when admitted, code)
    (9501, False, "none", 401, "UNAUTHENTICATED"),
    (9501, False, "owner key", None, None),
    (9501, False, "other key", 403, "FORBIDDEN"),
    (9501, False, "cookie+scope", None, None),
    (9501, False, "legacy cookie+scope", None, None),
    (9501, False, "cookie, no scope", 401, "MISSING_PROJECT"),
    (9501, False, "cookie, other project", 403, "FORBIDDEN"),
    (9501, False, "unknown cookie", 401, "INVALID_SESSION"),
    (9501, True, "none", 401, "UNAUTHENTICATED"),
    (8080, False, "none", 401, "UNAUTHENTICATED"),
    (8080, False, "owner key", None, None),
    (8080, True, "none", None, None),
    (8080, True, "other key", None, None),
    (8081, False, "owner key", 403, "PORT_NOT_EXPOSED"),
    (8081, True, "none", 403, "PORT_NOT_EXPOSED"),
]


@pytest.mark.parametrize(("port", "public", "who", "status", "code"), ADMISSION)
def test_the_admission_table(
    model: TensorLakeModel,
    rules: IngressRules,
    port: int,
    public: bool,
    who: str,
    status: int | None,
    code: str | None,
) -> None:
    sid = sandbox(model, exposed_ports=[8080], allow_unauthenticated_access=public)
    token = admin.create_session(model, "tok", {"api_key": KEY, "organization_id": ORG, "project_id": PROJECT}).token
    if status is None:
        admitted = without_waiting(rules.admit(request(sid, port, who, token)))
        assert isinstance(admitted, Admission) and admitted.sandbox.id == sid and admitted.port == port
        return
    with pytest.raises(ApiError) as caught:
        without_waiting(rules.admit(request(sid, port, who, token)))
    assert (caught.value.status, caught.value.code) == (status, code)


def test_an_unknown_sandbox_is_404_and_an_invalid_key_401(model: TensorLakeModel, rules: IngressRules) -> None:
    sid = sandbox(model)
    with pytest.raises(ApiError) as caught:
        rules.admit(request("nobody", 9501, "owner key"))
    assert (caught.value.status, caught.value.code) == (404, "SANDBOX_NOT_FOUND")
    model.keys = KeyRing.of([KEY])
    with pytest.raises(ApiError) as caught:
        rules.admit(request(sid, 9501, "other key"))
    assert (caught.value.status, caught.value.code) == (401, "INVALID_API_KEY")


def test_check_can_ask_about_another_key_set_without_changing_the_model(
    model: TensorLakeModel, rules: IngressRules
) -> None:
    sid = sandbox(model)
    with pytest.raises(ApiError) as valid:
        rules.check(request(sid, 9501, "other key"))
    with pytest.raises(ApiError) as invalid:
        rules.check(request(sid, 9501, "other key"), KeyRing.of([KEY]))
    assert (valid.value.status, invalid.value.status) == (403, 401)
    assert model.keys == KeyRing()


def test_a_suspended_sandbox_is_woken_and_the_wait_is_a_decision(model: TensorLakeModel, rules: IngressRules) -> None:
    sid = sandbox(model, name="dozy", exposed_ports=[8080], allow_unauthenticated_access=True)
    without_waiting(lifecycle.suspend(model, call(), "dozy"))
    model.timings.resume = 20.0
    outcome = rules.admit(request("dozy", 8080, "none"))
    assert isinstance(outcome, Settle)
    assert outcome.at == model.clock.now() + 20.0 and outcome.budget == RESUME_BUDGET
    assert model.sandboxes[sid].status == "pending"
    with pytest.raises(ApiError) as caught:
        outcome.then(0.0)
    assert (caught.value.status, caught.value.code) == (503, "SANDBOX_NOT_READY")
    model.clock.advance(20.0)
    admitted = outcome.then(20.0)
    assert isinstance(admitted, Admission) and admitted.sandbox.status == "running"


def test_without_auto_resume_a_suspended_sandbox_is_not_ready(model: TensorLakeModel, rules: IngressRules) -> None:
    sandbox(model, name="sleepy", auto_resume=False)
    without_waiting(lifecycle.suspend(model, call(), "sleepy"))
    with pytest.raises(ApiError) as caught:
        without_waiting(rules.admit(request("sleepy", 9501, "owner key")))
    assert caught.value.code == "SANDBOX_NOT_READY"


def test_forwarded_headers_keep_no_platform_credential(model: TensorLakeModel, rules: IngressRules) -> None:
    sid = sandbox(model, exposed_ports=[8080], allow_unauthenticated_access=True)
    headers = [
        (b"authorization", f"Bearer {KEY}".encode()),
        (b"cookie", b"theme=dark; tl.session_token=s; tl-session=s; lang=en"),
        (b"cookie", b"tl.session_token=s"),
        (b"x-custom", b"kept"),
    ]
    admitted = without_waiting(rules.admit(request(sid, 8080, "owner key")))
    assert admitted.strip_authorization
    assert rules.forwarded(headers, admitted) == [(b"cookie", b"theme=dark; lang=en"), (b"x-custom", b"kept")]
    model.keys = KeyRing.of([KEY])
    app_token = ProxyRequest(Target(sid, 8080), authorization="Bearer app-token")
    kept = without_waiting(rules.admit(app_token))
    assert not kept.strip_authorization
    assert (b"authorization", b"Bearer app-token") in rules.forwarded([(b"authorization", b"Bearer app-token")], kept)
