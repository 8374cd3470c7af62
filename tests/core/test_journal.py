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
