"""The history recorder: thread-safe, timed per client, lost operations, JSON."""

from __future__ import annotations

import itertools
import json
import threading

from harness.concurrency.history import History, keys_of


def test_many_threads_record_every_operation_with_ordered_times() -> None:
    history = History()

    def client(index: int) -> None:
        for n in range(200):
            pending = history.invoke(index, "get", ("get", n), key=f"k{n % 3}")
            history.complete(pending, ("ok", n))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ops = history.operations()
    assert len(ops) == len(history) == 1600
    assert len({op.id for op in ops}) == 1600
    assert all(op.ret is not None and op.call <= op.ret for op in ops)
    assert [op.call for op in ops] == sorted(op.call for op in ops)
    for index in range(8):
        mine = [op for op in ops if op.client == index]
        assert [op.input for op in mine] == [("get", n) for n in range(200)]
        assert all(a.ret is not None and a.ret <= b.call for a, b in itertools.pairwise(mine))
    assert keys_of(ops) == ["k0", "k1", "k2"]


def test_the_answer_can_name_the_key_and_a_lost_operation_has_no_return() -> None:
    history = History()
    created = history.complete(history.invoke(0, "create", ("create", "{}")), ("created", 200), key="sb1")
    lost = history.lose(history.invoke(1, "patch", ("patch", "{}"), key="sb1"))
    assert created.key == "sb1" and not created.lost
    assert lost.lost and lost.ret is None and lost.output is None


def test_json_dump_has_relative_milliseconds_and_lists() -> None:
    history = History()
    history.complete(history.invoke(2, "list", ("list",)), ("listed", (("a", ("absent",)),)))
    data = json.loads(json.dumps(history.to_json()))
    (entry,) = data["operations"]
    assert entry["client"] == 2 and entry["kind"] == "list" and entry["key"] is None
    assert entry["input"] == ["list"] and entry["output"] == ["listed", [["a", ["absent"]]]]
    assert 0 <= entry["invoked_ms"] <= entry["returned_ms"] < 60_000
