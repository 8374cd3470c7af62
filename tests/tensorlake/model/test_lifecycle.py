"""The lifecycle operations: the tenant's key, bodies, URLs and the waits they decide, without HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model import Call, KeyRing, Origin, Settle, TensorLakeModel, lifecycle, without_waiting
from mockserver.tensorlake.model.auth import Tenant, tenant_of
from mockserver.tensorlake.model.lifecycle import Answer
from mockserver.tensorlake.model.records import ROUTING_HINT, owner_id

from .conftest import KEY, OTHER, call


def create(model: TensorLakeModel, body: dict[str, Any], the_call: Call | None = None) -> Answer:
    """Create a sandbox, following the model's waits at once."""
    return without_waiting(lifecycle.create(model, the_call or call(), body))


def test_a_waiting_create_is_a_decision_to_wait_for_the_start(model: TensorLakeModel) -> None:
    model.timings.startup = 5.0
    outcome = lifecycle.create(model, call(), {"name": "web"})
    assert isinstance(outcome, Settle)
    assert outcome.at == model.clock.now() + 5.0 and outcome.budget == 300.0
    model.clock.advance(5.0)
    answer = outcome.then(5.0)
    assert answer.status == 200 and answer.body["status"] == "running"
    assert answer.body["routing_hint"] == ROUTING_HINT and answer.body["name"] == "web"


def test_a_create_still_pending_when_the_budget_is_spent_answers_504(model: TensorLakeModel) -> None:
    model.timings.startup = 600.0
    the_call = Call(call().tenant, timeout_ms="60000", grace_ms="5000")
    outcome = lifecycle.create(model, the_call, {})
    assert isinstance(outcome, Settle) and outcome.budget == 55.0
    answer = outcome.then(55.0)
    assert answer.status == 504 and answer.body == {"sandbox_id": answer.body["sandbox_id"], "status": "timeout"}
    assert outcome.then(0.0).body["status"] == "pending"  # a manual clock never blocks: the sandbox is pending


def test_wait_false_answers_202_pending(model: TensorLakeModel) -> None:
    answer = lifecycle.create(model, call(), {"wait": False})
    assert isinstance(answer, Answer) and answer.status == 202
    assert answer.body["status"] == "pending" and answer.body["pending_reason"] == "scheduling"
    assert "sandbox_url" not in answer.body and answer.body["ingress_endpoint"] == "http://sandbox.localhost"


def test_forced_outcomes_answer_their_payloads(model: TensorLakeModel) -> None:
    from mockserver.tensorlake.model import admin

    admin.queue_outcome(model, {"kind": "failed", "status": 409, "reason": "NoCapacity", "error_details": {"x": 1}})
    admin.queue_outcome(model, {"kind": "timeout"})
    failed, timed_out = create(model, {}), create(model, {})
    assert (
        failed.status == 409 and failed.body["status"] == "failed" and failed.body["termination_reason"] == "NoCapacity"
    )
    assert failed.body["error_details"] == {"x": 1}
    assert timed_out.status == 504 and timed_out.body["status"] == "timeout"
    assert model.sandboxes[timed_out.body["sandbox_id"]].status == "pending"


def test_urls_follow_the_origin(model: TensorLakeModel) -> None:
    the_call = Call(call().tenant, origin=Origin("https", "mock.example:8443"))
    body = create(model, {}, the_call).body
    sid = body["sandbox_id"]
    assert body["sandbox_url"] == f"https://{sid}.sandbox.localhost:8443"
    info = lifecycle.get(model, the_call, sid).body
    assert info["sandbox_url"] == body["sandbox_url"] and info["ingress_endpoint"] == "https://sandbox.localhost:8443"


def test_the_call_notes_what_the_journal_records(model: TensorLakeModel) -> None:
    the_call = call()
    create(model, {"name": "noted", "mystery": 1}, the_call)
    assert the_call.notes.sandbox_id is not None and the_call.notes.unknown_fields == ["mystery"]
    refused = call()
    with pytest.raises(ApiError):
        lifecycle.get(model, refused, "nobody")
    assert refused.notes.sandbox_id == "nobody"


def test_the_tenant_is_the_key_s_and_the_keys_are_the_model_s(model: TensorLakeModel) -> None:
    with pytest.raises(ApiError) as caught:
        tenant_of(None, "default", model.keys)
    assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    model.keys = KeyRing.of([KEY])
    with pytest.raises(ApiError) as caught:
        tenant_of(f"Bearer {OTHER}", "default", model.keys)
    assert (caught.value.status, caught.value.code) == (401, "invalid_api_key")
    tenant = tenant_of(f"Bearer {KEY}", "ns1", model.keys)
    assert tenant == Tenant(owner_id(KEY), "ns1") and tenant.label() == f"{owner_id(KEY)}/ns1"


def test_tenants_do_not_see_each_other(model: TensorLakeModel) -> None:
    sid = create(model, {"name": "mine"}).body["sandbox_id"]
    assert [s["id"] for s in lifecycle.list_sandboxes(model, call()).body["sandboxes"]] == [sid]
    assert lifecycle.list_sandboxes(model, call(OTHER)).body == {"sandboxes": []}
    with pytest.raises(ApiError) as caught:
        lifecycle.get(model, call(OTHER), "mine")
    assert caught.value.status == 404


def test_suspend_and_resume_wait_ms_are_decisions(model: TensorLakeModel) -> None:
    create(model, {"name": "dozy"})
    model.timings.suspend = model.timings.resume = 3.0
    quick = lifecycle.suspend(model, call(), "dozy")
    assert isinstance(quick, Answer) and quick.status == 202 and quick.body["status"] == "suspending"
    waiting = lifecycle.suspend(model, call(wait_ms="5000"), "dozy")
    assert isinstance(waiting, Settle) and waiting.budget == 5.0
    assert waiting.at == model.clock.now() + 3.0
    model.clock.advance(3.0)
    assert waiting.then(3.0).status == 200
    resumed = lifecycle.resume(model, call(wait_ms="1000"), "dozy")
    assert isinstance(resumed, Settle)
    answer = resumed.then(1.0)
    assert answer.status == 202 and answer.body["status"] == "pending" and answer.body["pending_reason"] == "resuming"


@pytest.mark.parametrize(
    ("query", "code"),
    [({"wait_ms": "soon"}, "invalid_query"), ({"wait_ms": "9" * 5000}, "invalid_query")],
)
def test_bad_query_values_are_refused_before_any_change(
    model: TensorLakeModel, query: dict[str, str], code: str
) -> None:
    create(model, {"name": "steady"})
    with pytest.raises(ApiError) as caught:
        lifecycle.suspend(model, call(**query), "steady")
    assert (caught.value.status, caught.value.code) == (400, code)
    assert model.find(owner_id(KEY), "default", "steady").status == "running"


def test_copies_are_bounded_and_unnamed(model: TensorLakeModel) -> None:
    create(model, {"name": "source"})
    copies = lifecycle.copy(model, call(times="2"), "source").body
    assert len(copies["sandboxes"]) == 2 and all("name" not in c for c in copies["sandboxes"])
    with pytest.raises(ApiError):
        lifecycle.copy(model, call(times="33"), "source")


def test_archive_pages_newest_first(model: TensorLakeModel) -> None:
    ids = [create(model, {}).body["sandbox_id"] for _ in range(3)]
    for sid in ids:
        lifecycle.delete(model, call(), sid)
    first = lifecycle.list_archived(model, call(limit="2")).body
    assert [s["id"] for s in first["sandboxes"]] == ids[::-1][:2] and first["next_cursor"] == ids[1]
    rest = lifecycle.list_archived(model, call(limit="2", cursor=first["next_cursor"])).body
    assert [s["id"] for s in rest["sandboxes"]] == [ids[0]] and rest["next_cursor"] is None
    assert lifecycle.get_archived(model, call(), ids[0]).body["status"] == "terminated"


def test_snapshots_and_pools(model: TensorLakeModel) -> None:
    create(model, {"name": "snap"})
    taken = lifecycle.snapshot(model, call(), "snap", {"snapshot_type": "filesystem"}).body
    assert taken["status"] == "completed"
    assert [s["id"] for s in lifecycle.list_snapshots(model, call(), "snap").body["snapshots"]] == [
        taken["snapshot_id"]
    ]
    assert lifecycle.delete_snapshot(model, call(), taken["snapshot_id"]) == Answer(204)
    with pytest.raises(ApiError) as caught:
        lifecycle.pools(model, call())
    assert caught.value.status == 501
