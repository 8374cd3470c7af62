from mockserver.core import DueTimes
from mockserver.core.schedule import settle_due


def test_keys_come_out_when_due_earliest_first() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("late", 30.0)
    due.schedule("early", 10.0)
    due.schedule("middle", 20.0)
    assert list(due.pop_due(5.0)) == []
    assert list(due.pop_due(20.0)) == ["early", "middle"]
    assert due.due_at("late") == 30.0 and len(due) == 1
    assert list(due.pop_due(100.0)) == ["late"]
    assert len(due) == 0


def test_ties_come_out_in_scheduling_order() -> None:
    due: DueTimes[str] = DueTimes()
    for key in ("b", "a", "c"):
        due.schedule(key, 1.0)
    assert list(due.pop_due(1.0)) == ["b", "a", "c"]


def test_a_superseded_entry_is_skipped() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("a", 10.0)
    due.schedule("a", 5.0)
    assert list(due.pop_due(20.0)) == ["a"]  # once, at its newer time, not again for the older entry


def test_a_key_rescheduled_later_is_not_returned_early() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("a", 10.0)
    due.schedule("a", 50.0)
    assert list(due.pop_due(20.0)) == []
    assert due.due_at("a") == 50.0
    assert list(due.pop_due(50.0)) == ["a"]


def test_scheduling_the_same_time_again_pushes_nothing() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("a", 10.0)
    due.schedule("a", 10.0)
    assert list(due.pop_due(10.0)) == ["a"]
    assert list(due.pop_due(10.0)) == []


def test_none_or_a_time_already_past_unschedules() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("a", 10.0)
    due.schedule("a", None)
    due.schedule("b", 10.0)
    due.schedule("b", 4.0, now=5.0)
    due.schedule("c", 5.0, now=5.0)
    assert due.due_at("a") is None and due.due_at("b") is None and due.due_at("c") is None
    assert list(due.pop_due(100.0)) == []


def test_discard_and_clear_unschedule() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("a", 1.0)
    due.schedule("b", 2.0)
    due.discard("a")
    due.discard("missing")
    assert list(due.pop_due(10.0)) == ["b"]
    due.schedule("c", 3.0)
    due.clear()
    assert len(due) == 0 and list(due.pop_due(10.0)) == []


def test_a_key_rescheduled_while_popping_comes_out_again_when_due() -> None:
    due: DueTimes[str] = DueTimes()
    due.schedule("a", 1.0)
    due.schedule("b", 2.0)
    seen = []
    for key in due.pop_due(10.0):
        seen.append(key)
        if seen == ["a"]:
            due.schedule("a", 5.0)  # its next step is due before the iteration's time too
            due.schedule("b", 20.0)  # moved past it: its older entry is skipped
    assert seen == ["a", "a"]
    assert due.due_at("b") == 20.0


def test_settle_due_settles_what_is_due_skips_what_is_gone_and_requeues_what_remains() -> None:
    due: DueTimes[str] = DueTimes()
    records = {"a": "rec-a", "b": "rec-b", "later": "rec-later"}
    for key, at in (("a", 1.0), ("b", 2.0), ("gone", 1.5), ("later", 9.0)):
        due.schedule(key, at)
    settled: list[tuple[str, float]] = []
    requeued: list[str] = []

    def settle(record: str, now: float) -> None:
        settled.append((record, now))
        if record == "rec-b":
            del records["b"]  # settling may remove the record: it is not queued again

    settle_due(due, 5.0, records, settle, lambda record, now: requeued.append(record))
    assert settled == [("rec-a", 5.0), ("rec-b", 5.0)]
    assert requeued == ["rec-a"] and due.due_at("later") == 9.0
