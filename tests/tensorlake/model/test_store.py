"""The store's bookkeeping: per-tenant lists, the due-time heap, revisions and the rows a durable store keeps."""

from __future__ import annotations

import random
from typing import Any

from mockserver.core.changes import Row
from mockserver.tensorlake.model import TensorLakeModel, lifecycle, without_waiting
from mockserver.tensorlake.model.records import Sandbox, owner_id
from mockserver.tensorlake.model.store import Timings

from .conftest import KEY, OTHER, call


def _create(model: TensorLakeModel, key: str = KEY, **body: Any) -> str:
    answer = without_waiting(lifecycle.create(model, call(key), {"wait": False, **body}))
    return str(answer.body["sandbox_id"])


def _scan(model: TensorLakeModel, owner: str) -> list[str]:
    model.settle_all()
    return [s.id for s in model.sandboxes.values() if s.owner == owner and s.namespace == "default"]


def test_the_tenant_list_is_what_a_scan_finds_in_creation_order(model: TensorLakeModel) -> None:
    rng = random.Random(4)
    model.timings = Timings(startup=2.0, suspend=1.0)
    for step in range(120):
        live = list(model.sandboxes.values())
        roll = rng.random()
        if roll < 0.5 or not live:
            name = f"n{step}" if rng.random() < 0.5 else None
            _create(model, rng.choice((KEY, OTHER)), name=name, timeout_secs=rng.choice((None, 5, 50)))
        elif roll < 0.7:
            sb = rng.choice(live)
            model.delete(sb.owner, sb.namespace, sb.id)
        elif roll < 0.8:
            sb = rng.choice(live)
            model.settle(sb)
            if sb.name and sb.status == "running":
                model.suspend(sb.owner, sb.namespace, sb.id)
        else:
            model.clock.advance(rng.choice((0.5, 2.0, 10.0)))
        for key in (KEY, OTHER):
            owner = owner_id(key)
            assert [s.id for s in model.list_sandboxes(owner, "default")] == _scan(model, owner)


def test_settle_all_touches_only_what_is_due(model: TensorLakeModel) -> None:
    model.timings = Timings(startup=3.0)
    for _ in range(30):
        _create(model)
    model.clock.advance(3.0)
    settled: list[str] = []
    original = model.settle

    def counting(sb: Sandbox) -> None:
        settled.append(sb.id)
        original(sb)

    model.settle = counting  # type: ignore[method-assign]
    model.settle_all()
    assert len(settled) == 30 and {s.status for s in model.sandboxes.values()} == {"running"}
    settled.clear()
    model.settle_all()
    assert settled == []


def test_a_cached_body_is_retired_by_every_change(model: TensorLakeModel) -> None:
    sid = _create(model, name="kept")
    first = lifecycle.get(model, call(), sid).body
    assert lifecycle.get(model, call(), sid).body is first  # the same revision answers from its cache
    lifecycle.patch(model, call(), sid, {"allow_unauthenticated_access": True})
    patched = lifecycle.get(model, call(), sid).body
    assert patched is not first and patched["allow_unauthenticated_access"] is True
    model.suspend(owner_id(KEY), "default", sid)
    assert lifecycle.get(model, call(), sid).body["status"] == "suspended"


def test_rows_round_trip_and_name_only_what_changed(model: TensorLakeModel) -> None:
    model.changes.enabled = True
    sid = _create(model, name="a")
    other = _create(model)
    taken = model.changes.take()
    assert ("sandbox", sid) in taken.keys and ("sandbox", other) in taken.keys
    model.delete(owner_id(KEY), "default", other)
    taken = model.changes.take()
    rows = {(r.kind, r.key): r.body for r in model.rows(sorted(taken.keys))}
    assert rows[("sandbox", other)] is None and rows[("archive", other)]["status"] == "terminated"
    assert ("sandbox", sid) not in rows
    everything = list(model.all_rows())
    copy = TensorLakeModel(model.clock, model.ids, model.resolve)
    copy.load_rows(Row(r.kind, r.key, r.body) for r in everything)
    assert copy.dump() == model.dump()


def test_a_tree_is_rewritten_only_when_it_moved(model: TensorLakeModel) -> None:
    model.changes.enabled = True
    sid = _create(model)
    list(model.all_rows())
    model.sandboxes[sid].fs.write("/tmp/x", "1")
    kinds = [r.kind for r in model.rows([("sandbox", sid)])]
    assert kinds == ["sandbox", "fs"]
    assert [r.kind for r in model.rows([("sandbox", sid)])] == ["sandbox"]
