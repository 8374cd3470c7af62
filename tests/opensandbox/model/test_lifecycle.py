"""The lifecycle operations without HTTP: create answers, listing pages, renew, metadata patch, snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model import lifecycle, pools
from mockserver.opensandbox.model.errors import TextError
from mockserver.opensandbox.model.validation import RequestValidationError

from .conftest import BODY, create, new_state

SECRET = {"uri": "registry.example/app:1", "auth": {"username": "u", "password": "hunter2"}}


def test_registry_credentials_never_come_back() -> None:
    state = new_state()
    sb, answer = lifecycle.create_sandbox(state, "default", {**BODY, "image": SECRET})
    assert "image" not in answer
    assert lifecycle.get_sandbox(state, "default", sb.id)["image"] == {"uri": SECRET["uri"]}
    listed = lifecycle.list_sandboxes(state, "default", [])["items"]
    assert [item["image"] for item in listed] == [{"uri": SECRET["uri"]}]
    assert "hunter2" not in repr(state.dump())


def test_create_answers_the_create_response_and_validates() -> None:
    state = new_state()
    sb, answer = lifecycle.create_sandbox(state, "default", {**BODY, "metadata": {}})
    assert answer["id"] == sb.id and answer["metadata"] == {}
    assert answer["status"]["message"] == "Sandbox container started successfully."
    with pytest.raises(RequestValidationError):
        lifecycle.create_sandbox(state, "default", {**BODY, "timeout": 59})
    assert len(state.sandboxes) == 1


def test_listing_is_per_tenant_newest_first_and_paged() -> None:
    state = new_state()
    first = create(state, "a")
    state.clock.advance(1)
    second = create(state, "a")
    create(state, "b")
    page = lifecycle.list_sandboxes(state, "a", [("pageSize", "1"), ("state", "RUNNING")])
    assert [i["id"] for i in page["items"]] == [second.id]
    assert page["pagination"] == {"page": 1, "pageSize": 1, "totalItems": 2, "totalPages": 2, "hasNextPage": True}
    assert [i["id"] for i in lifecycle.list_sandboxes(state, "a", [("page", "2"), ("pageSize", "1")])["items"]] == [
        first.id
    ]
    with pytest.raises(RequestValidationError):
        lifecycle.list_sandboxes(state, "a", [("page", "0")])


def _refusal(call: Any) -> tuple[int, str | None]:
    try:
        call()
    except RequestValidationError as exc:
        return exc.status, None
    except ApiError as exc:
        return exc.status, exc.code
    raise AssertionError("accepted")


def test_renew_checks_the_body_before_the_sandbox_then_the_time() -> None:
    state = new_state()
    sb = create(state)
    never = create(state, timeout=None)
    renew = lifecycle.renew_expiration
    assert _refusal(lambda: renew(state, "default", "nope", {})) == (422, None)
    assert _refusal(lambda: renew(state, "default", "nope", {"expiresAt": "tomorrow"})) == (422, None)
    assert _refusal(lambda: renew(state, "default", "nope", {"expiresAt": "2999-01-01T00:00:00Z"})) == (
        404,
        "DOCKER::SANDBOX_NOT_FOUND",
    )
    assert _refusal(lambda: renew(state, "default", sb.id, {"expiresAt": "2000-01-01T00:00:00Z"})) == (
        400,
        "DOCKER::INVALID_EXPIRATION",
    )
    assert _refusal(lambda: renew(state, "default", never.id, {"expiresAt": "2999-01-01T00:00:00Z"})) == (
        409,
        "DOCKER::INVALID_EXPIRATION",
    )
    assert renew(state, "default", sb.id, {"expiresAt": "2999-01-01T00:00:00Z"}) == {
        "expiresAt": "2999-01-01T00:00:00Z"
    }
    with pytest.raises(TextError) as caught:  # UTC cannot hold it: the real server's bare 500
        renew(state, "default", sb.id, {"expiresAt": "9999-12-31T23:59:59-05:00"})
    assert (caught.value.status, caught.value.message) == (500, "Internal Server Error")


def test_metadata_patch_validation_and_merge() -> None:
    state = new_state()
    sb = create(state, metadata={"team": "a", "tier": "1"})
    patch = lifecycle.patch_metadata
    assert _refusal(lambda: patch(state, "default", "nope", ["x"])) == (422, None)
    assert _refusal(lambda: patch(state, "default", "nope", {"team": 1})) == (422, None)
    assert _refusal(lambda: patch(state, "default", "nope", {"team": "b"})) == (404, "DOCKER::SANDBOX_NOT_FOUND")
    assert _refusal(lambda: patch(state, "default", sb.id, {"opensandbox.io/x": "y"}))[0] == 400
    assert patch(state, "default", sb.id, {"tier": None, "new": "v"})["metadata"] == {"team": "a", "new": "v"}


def test_snapshots_are_the_tenants_own() -> None:
    state = new_state()
    sb = create(state, "a")
    made = lifecycle.create_snapshot(state, "a", sb.id, {"name": "one"}, 5.0)
    assert made.location == f"/v1/snapshots/{made.record.id}" and made.body["status"]["state"] == "Creating"
    assert _refusal(lambda: lifecycle.get_snapshot(state, "b", made.record.id)) == (404, "SNAPSHOT::NOT_FOUND")
    assert lifecycle.list_snapshots(state, "b", [])["items"] == []
    state.clock.advance(5)
    assert lifecycle.get_snapshot(state, "a", made.record.id)["status"]["state"] == "Ready"
    assert _refusal(lambda: lifecycle.create_snapshot(state, "a", sb.id, {"name": ""}, 0)) == (422, None)


def test_a_snapshot_is_resolved_before_labels_and_platform_and_gives_the_default_entrypoint() -> None:
    state = new_state()
    restore = {"resourceLimits": {"cpu": "1"}, "timeout": 600}
    bad = {**restore, "snapshotId": "nope", "metadata": {"a": "x&y"}, "platform": {"os": "plan9", "arch": "x"}}
    assert _refusal(lambda: lifecycle.create_sandbox(state, "a", bad)) == (404, "SNAPSHOT::NOT_FOUND")
    sb = create(state, "a")
    made = lifecycle.create_snapshot(state, "a", sb.id, None, 5.0)
    early = {**restore, "snapshotId": made.record.id}
    assert _refusal(lambda: lifecycle.create_sandbox(state, "a", early)) == (409, "SNAPSHOT::NOT_READY")
    state.clock.advance(5)
    assert _refusal(lambda: lifecycle.create_sandbox(state, "b", early)) == (404, "SNAPSHOT::NOT_FOUND")
    _, created = lifecycle.create_sandbox(state, "a", early)
    assert created["entrypoint"] == ["tail", "-f", "/dev/null"]


def test_metrics_events_and_unsupported_routes() -> None:
    state = new_state()
    lifecycle.metrics_event(state, {"eventType": "sandbox.create", "createDurationMs": 5, "success": True})
    assert len(state.metrics_events) == 1
    assert _refusal(lambda: lifecycle.metrics_event(state, {"eventType": "x"})) == (422, None)
    assert _refusal(lambda: pools.pool_call("GET", None)) == (501, "KUBERNETES::POOL_NOT_SUPPORTED")
    assert _refusal(lambda: pools.pool_call("POST", None, {})) == (422, None)
    assert _refusal(lambda: pools.template_call("DELETE")) == (501, "FSB::API_NOT_SUPPORTED")
