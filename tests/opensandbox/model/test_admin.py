"""The dashboard's view of the OpenSandbox state: one provider-neutral summary per live sandbox."""

from __future__ import annotations

from mockserver.opensandbox.model.admin import sandbox_summaries, sandbox_summary

from .conftest import POLICY, create, new_state


def test_a_summary_names_state_image_policy_ports_and_metadata() -> None:
    state = new_state()
    plain = create(state, metadata={"team": "a"})
    guarded = create(state, tenant="other", networkPolicy=POLICY)
    assert sandbox_summary(plain) == {
        "id": plain.id,
        "state": "Running",
        "image": "python:3.11",
        "policy": None,
        "ports": [44772],
        "metadata": {"team": "a"},
        "created_at": plain.created_at,
        "expires_at": plain.created_at + 600,
        "details": {
            "tenant": "default",
            "reason": plain.reason,
            "message": plain.message,
            "pending": None,
            "running_commands": 0,
        },
    }
    summary = sandbox_summary(guarded)
    assert (summary["policy"], summary["ports"], summary["details"]["tenant"]) == (POLICY, [44772, 18080], "other")


def test_summaries_apply_due_transitions_first() -> None:
    state = new_state("kubernetes", pending_seconds=5)
    made = create(state)
    (pending,) = sandbox_summaries(state)
    assert pending["state"] == "Pending" and pending["details"]["pending"]["to"] == "Running"
    state.clock.advance(5)
    (running,) = sandbox_summaries(state)
    assert (running["id"], running["state"], running["details"]["pending"]) == (made.id, "Running", None)
