import pytest

from mockserver.core import FaultError, FaultRule, FaultSet


def test_rule_fires_the_given_number_of_times() -> None:
    faults = FaultSet()
    faults.add(method="post", path="/sandboxes", status=503, times=2)
    assert faults.take("POST", "/sandboxes", frozenset()) is not None
    assert faults.take("GET", "/sandboxes", frozenset()) is None
    assert faults.take("POST", "/sandboxes", frozenset()) is not None
    assert faults.take("POST", "/sandboxes", frozenset()) is None
    assert faults.rules() == []


def test_unlimited_rule_stays_and_first_match_wins() -> None:
    faults = FaultSet()
    first = faults.add(path="/a/*", status=500, times=None)
    faults.add(path="*", status=502, times=None)
    for _ in range(3):
        rule = faults.take("GET", "/a/b/c", frozenset())
        assert rule is not None and rule.id == first.id
    other = faults.take("GET", "/z", frozenset())
    assert other is not None and other.status == 502


def test_sandbox_id_narrows_a_rule() -> None:
    faults = FaultSet()
    faults.add(path="*", sandbox_id="sbx1", times=None)
    assert faults.take("GET", "/x", frozenset({"sbx2"})) is None
    assert faults.take("GET", "/x", frozenset({"sbx1", "x"})) is not None


def test_probability_is_reproducible_with_a_seed() -> None:
    def pattern() -> list[bool]:
        faults = FaultSet()
        faults.add(path="*", times=None, probability=0.5, seed=7)
        return [faults.take("GET", "/", frozenset()) is not None for _ in range(40)]

    first = pattern()
    assert first == pattern()
    assert 5 < sum(first) < 35


def test_remove_and_clear() -> None:
    faults = FaultSet()
    rule = faults.add(path="*", times=None)
    assert faults.remove(rule.id)
    assert not faults.remove(rule.id)
    faults.add(path="*")
    faults.clear()
    assert faults.rules() == []


def test_the_history_keeps_spent_removed_and_cleared_rules_with_their_counts() -> None:
    faults = FaultSet()
    spent = faults.add(path="/a", times=2)
    removed = faults.add(path="/b", times=None)
    cleared = faults.add(path="/c", times=None)
    active_after = faults.add(path="/d", times=None)
    for _ in range(3):
        faults.take("GET", "/a", frozenset())
    faults.take("GET", "/b", frozenset())
    faults.remove(removed.id)
    assert [r.id for r in faults.rules()] == [cleared.id, active_after.id]
    faults.remove(active_after.id)
    faults.clear()
    history = {r.id: r for r in faults.history()}
    assert [r.id for r in faults.history()] == [spent.id, removed.id, cleared.id, active_after.id]
    assert (history[spent.id].ended, history[spent.id].fired) == ("spent", 2)
    assert history[spent.id].last_fired_at is not None
    assert (history[removed.id].ended, history[removed.id].fired) == ("removed", 1)
    assert (history[cleared.id].ended, history[cleared.id].fired, history[cleared.id].last_fired_at) == (
        "cleared",
        0,
        None,
    )
    assert faults.rules() == []
    faults.reset()
    assert faults.history() == []


@pytest.mark.parametrize(
    "bad",
    [
        {"action": "explode"},
        {"status": 99},
        {"times": 0},
        {"probability": 1.5},
        {"delay": -1},
        {"delay_phase": "during"},
        {"colour": "red"},
    ],
)
def test_malformed_rules_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(FaultError):
        FaultRule.from_json(bad)


def test_response_bytes_by_body_type() -> None:
    assert FaultRule(body={"a": 1}).response_bytes() == (b'{"a": 1}', "application/json")
    assert FaultRule(body="boom").response_bytes()[1].startswith("text/plain")
    assert FaultRule(body="x", content_type="text/html").response_bytes()[1] == "text/html"
