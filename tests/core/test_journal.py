import pytest

from mockserver.core import Journal, JournalAssertionError, JournalEntry


def entry(journal: Journal, method: str, path: str, **extra: object) -> JournalEntry:
    fields: dict[str, object] = {"query": "", "headers": {}, "body": "", "status": 200, **extra}
    item = JournalEntry(seq=journal.next_seq(), time=0.0, provider="p", method=method, path=path, **fields)  # type: ignore[arg-type]
    journal.record(item)
    return item


def test_filters_and_calls() -> None:
    journal = Journal()
    entry(journal, "POST", "/sandboxes")
    entry(journal, "GET", "/sandboxes/abc", sandbox_id="abc")
    entry(journal, "GET", "/sandboxes/xyz", sandbox_id="xyz", status=404)
    assert journal.calls() == ["POST /sandboxes", "GET /sandboxes/abc", "GET /sandboxes/xyz"]
    assert len(journal.entries(method="get", path="/sandboxes/*")) == 2
    assert [e.path for e in journal.entries(sandbox_id="abc")] == ["/sandboxes/abc"]
    assert [e.path for e in journal.entries(status=404)] == ["/sandboxes/xyz"]


def test_assertions() -> None:
    journal = Journal()
    entry(journal, "POST", "/a")
    entry(journal, "GET", "/b")
    entry(journal, "DELETE", "/a")
    journal.assert_called("POST", "/a", times=1)
    journal.assert_not_called("PUT", "/a")
    journal.assert_order([("POST", "/a"), ("DELETE", "/a")])
    with pytest.raises(JournalAssertionError):
        journal.assert_order([("DELETE", "/a"), ("POST", "/a")])
    with pytest.raises(JournalAssertionError):
        journal.assert_called("GET", "/b", times=2)
    with pytest.raises(JournalAssertionError):
        journal.assert_called("GET", "/nowhere")


def test_bounded_and_unknown_fields() -> None:
    journal = Journal(maxlen=2)
    entry(journal, "POST", "/a", unknown_fields=("zeta",))
    entry(journal, "POST", "/a", unknown_fields=("alpha", "zeta"))
    entry(journal, "GET", "/b")
    assert len(journal.entries()) == 2
    assert journal.unknown_fields() == {"POST /a": ["alpha", "zeta"]}
    journal.clear()
    assert journal.entries() == []
    with pytest.raises(ValueError):
        Journal(maxlen=0)


def test_since_get_and_last_seq() -> None:
    journal = Journal()
    assert journal.last_seq() == 0
    first = entry(journal, "GET", "/a")
    second = entry(journal, "GET", "/b")
    assert [e.path for e in journal.entries(since=first.seq)] == ["/b"]
    assert journal.entries(since=second.seq) == []
    assert journal.get(first.seq) == first and journal.get(999) is None
    assert journal.last_seq() == second.seq


def test_append_numbers_entries_in_the_order_they_are_kept() -> None:
    journal = Journal()

    def make(seq: int) -> JournalEntry:
        return JournalEntry(seq, 0.0, "p", "GET", f"/{seq}", "", {}, "", 200, response_body="ok")

    made = [journal.append(make) for _ in range(3)]
    assert [e.seq for e in journal.entries()] == [e.seq for e in made] == [1, 2, 3]
    assert journal.to_json()[0]["response_body"] == "ok" and journal.to_json()[0]["response_headers"] == {}
