"""The list's indexes answer exactly what a scan of every sandbox would, whatever the rules did before."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.records import paginate

from .conftest import create, new_state

TENANTS = ("default", "other")
TEAMS = ("a", "b", "c")


def _scan(
    state: OpenSandboxModel, tenant: str, states: list[str], metadata: dict[str, str], page: int, size: int
) -> Any:
    """The listing as a scan of every live sandbox computes it: filter, stable sort newest first, slice."""
    state.settle_all()
    wanted = {s.lower() for s in states}
    found = [
        sb
        for sb in state.sandboxes.values()
        if sb.tenant == tenant
        and (not wanted or sb.state.lower() in wanted)
        and all(sb.spec.metadata.get(k) == v for k, v in metadata.items())
    ]
    found.sort(key=lambda sb: sb.created_at, reverse=True)
    return paginate([sb.to_json() for sb in found], page, size)


def _step(state: OpenSandboxModel, rng: random.Random) -> None:
    try:
        _act(state, rng)
    except ApiError as exc:
        assert exc.status == 409  # a pause or resume in a transitional state


def _act(state: OpenSandboxModel, rng: random.Random) -> None:
    state.settle_all()
    live = list(state.sandboxes.values())
    roll = rng.random()
    if roll < 0.45 or not live:
        metadata = {"team": rng.choice(TEAMS)} if rng.random() < 0.8 else {}
        if rng.random() < 0.3:
            metadata["tier"] = rng.choice(("x", "y"))
        create(state, rng.choice(TENANTS), metadata=metadata, timeout=rng.choice((60, 600, 6000)))
    elif roll < 0.6:
        sb = rng.choice(live)
        if sb.state == "Running":
            state.pause(sb.tenant, sb.id)
        elif sb.state == "Paused":
            state.resume(sb.tenant, sb.id)
    elif roll < 0.72:
        sb = rng.choice(live)
        state.patch_metadata(sb.tenant, sb.id, {"team": rng.choice((*TEAMS, None)), "tier": rng.choice(("x", None))})
    elif roll < 0.82:
        sb = rng.choice(live)
        state.delete(sb.tenant, sb.id)
    elif roll < 0.9:
        sb = rng.choice(live)
        state.fail(sb.id, "CONTAINER_EXITED_ERROR", "exited")
    else:
        state.clock.advance(rng.choice((0.0, 1.0, 30.0, 100.0)))


@pytest.mark.parametrize("profile", ["docker", "kubernetes"])
@pytest.mark.parametrize("seed", range(6))
def test_pages_equal_a_full_scan(profile: str, seed: int) -> None:
    rng = random.Random(seed)
    state = new_state(profile, pending_seconds=5.0) if profile == "kubernetes" else new_state(profile)
    for _ in range(160):
        _step(state, rng)
        if rng.random() < 0.3:
            tenant = rng.choice(TENANTS)
            states = rng.sample(["Running", "paused", "PENDING", "Failed", "Stopping"], rng.choice((0, 0, 1, 2)))
            metadata = rng.choice(({}, {}, {"team": "a"}, {"team": "b", "tier": "x"}, {"tier": "y"}, {"team": "zz"}))
            page, size = rng.choice((1, 1, 2, 3)), rng.choice((1, 3, 20))
            expected = _scan(state, tenant, states, metadata, page, size)
            assert state.list(tenant, states, metadata, page, size) == expected


def test_a_listed_body_follows_its_sandbox_and_the_clock() -> None:
    state = new_state("kubernetes", pending_seconds=5.0)
    sb = create(state, timeout=60, metadata={"team": "a"})
    assert state.list("default", [], {}, 1, 20)["items"][0]["status"]["state"] == "Pending"
    state.clock.advance(5)
    assert state.list("default", ["running"], {}, 1, 20)["items"][0]["status"]["state"] == "Running"
    state.patch_metadata("default", sb.id, {"team": "b"})
    assert state.list("default", [], {"team": "b"}, 1, 20)["items"][0]["metadata"] == {"team": "b"}
    assert state.list("default", [], {"team": "a"}, 1, 20)["pagination"]["totalItems"] == 0
    state.clock.advance(60)
    assert state.list("default", [], {}, 1, 20)["items"] == []
    assert sb.id not in state.sandboxes  # expired by the listing's refresh alone


def test_refresh_settles_only_what_is_due() -> None:
    state = new_state("kubernetes", pending_seconds=5.0)
    for _ in range(50):
        create(state)
    state.clock.advance(5)
    calls: list[str] = []
    original = state.settle

    def counting(sb: Any, now: float) -> None:
        calls.append(sb.id)
        original(sb, now)

    state.settle = counting  # type: ignore[method-assign]
    state.settle_all()
    assert len(calls) == 50 and {sb.state for sb in state.sandboxes.values()} == {"Running"}
    calls.clear()
    state.settle_all()
    assert calls == []  # nothing left to do: the heap is empty of due work


@pytest.mark.parametrize("states", [[], ["running"], ["running", "paused"]])
@pytest.mark.parametrize("metadata", [{}, {"team": "a"}])
def test_a_page_far_past_the_population_is_empty_with_the_total(states: list[str], metadata: dict[str, str]) -> None:
    state = new_state("docker")
    create(state, metadata={"team": "a"})
    huge = 2**80  # a fuzzed page number: past any bound islice takes
    listed = state.list("default", states, metadata, huge, huge)
    assert listed["items"] == [] and listed["pagination"]["totalItems"] == 1
