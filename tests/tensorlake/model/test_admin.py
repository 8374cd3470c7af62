"""The TensorLake admin verbs: timings, sessions, create outcomes and API keys; a refusal changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model import KeyRing, TensorLakeModel, Timings, admin
from mockserver.tensorlake.model.records import owner_id


@pytest.mark.parametrize(
    "body", [{"startup": -1}, {"startup": float("inf")}, {"startup": "5"}, {"startup": True}, {"warp": 1}, [1]]
)
def test_bad_timings_are_refused_whole(model: TensorLakeModel, body: Any) -> None:
    with pytest.raises(ApiError) as caught:
        admin.set_timings(model, {"resume": 2, **body} if isinstance(body, dict) else body)
    assert caught.value.status == 400
    assert model.timings == Timings()


def test_timings_apply_partially(model: TensorLakeModel) -> None:
    assert admin.set_timings(model, {"startup": 5})["startup"] == 5.0
    assert admin.set_timings(model, {"resume": 1.5}) == {**Timings().to_json(), "startup": 5.0, "resume": 1.5}


def test_sessions_are_issued_for_a_key_s_project(model: TensorLakeModel) -> None:
    session = admin.create_session(model, "tok", {"api_key": "k", "organization_id": "o", "project_id": "p"})
    assert model.sessions["tok"] == session and session.owner == owner_id("k")
    default = admin.create_session(model, "tok2", None)
    assert (default.organization_id, default.project_id) == (admin.DEFAULT_ORGANIZATION, admin.DEFAULT_PROJECT)
    with pytest.raises(ApiError):
        admin.create_session(model, "tok3", {"api_key": 5})
    assert "tok3" not in model.sessions


@pytest.mark.parametrize(
    "body", [{"kind": "later"}, {"kind": "failed", "status": 200}, {"kind": "failed", "status": True}]
)
def test_bad_outcomes_are_refused(model: TensorLakeModel, body: Any) -> None:
    with pytest.raises(ApiError):
        admin.queue_outcome(model, body)
    assert not model.outcomes


def test_outcomes_queue_in_order(model: TensorLakeModel) -> None:
    assert admin.queue_outcome(model, {"kind": "timeout"}) == {"queued": "timeout"}
    admin.queue_outcome(model, {"kind": "failed"})
    assert [o.kind for o in model.outcomes] == ["timeout", "failed"] and model.outcomes[1].status == 422


def test_api_keys(model: TensorLakeModel) -> None:
    assert admin.set_api_keys(model, {"api_keys": ["b", "a"]}) == {"api_keys": ["a", "b"]}
    assert model.keys == KeyRing.of(["a", "b"])
    with pytest.raises(ApiError):
        admin.set_api_keys(model, {"api_keys": [""]})
    assert model.keys == KeyRing.of(["a", "b"])
    assert admin.set_api_keys(model, {"api_keys": None}) == {"api_keys": None}


def test_the_summary_says_when_a_running_sandbox_times_out(model: TensorLakeModel) -> None:
    from mockserver.tensorlake.model import lifecycle, without_waiting

    from .conftest import call

    timed = without_waiting(lifecycle.create(model, call(), {"timeout_secs": 600})).body["sandbox_id"]
    untimed = without_waiting(lifecycle.create(model, call(), {})).body["sandbox_id"]
    summaries = {s["id"]: s for s in admin.sandbox_summaries(model)}
    running_since = model.sandboxes[timed].running_since
    assert running_since is not None
    assert summaries[timed]["expires_at"] == running_since + 600
    assert summaries[untimed]["expires_at"] is None
    model.clock.advance(601)
    after = {s["id"]: s for s in admin.sandbox_summaries(model)}
    assert timed not in after or after[timed]["state"] != "running"
