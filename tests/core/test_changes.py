from mockserver.core.changes import ChangeLog, Taken


def test_a_disabled_log_collects_nothing() -> None:
    log = ChangeLog()
    log.mark("sandbox", "a")
    log.mark_all()
    assert not log.pending()
    assert not log.take()


def test_an_enabled_log_hands_over_each_mark_once() -> None:
    log = ChangeLog()
    log.enabled = True
    log.mark("sandbox", "a")
    log.mark("sandbox", "a")
    log.mark("snapshot", "s")
    assert log.pending()
    assert log.take() == Taken(False, frozenset({("sandbox", "a"), ("snapshot", "s")}))
    assert not log.pending() and not log.take()


def test_marking_everything_supersedes_single_keys() -> None:
    log = ChangeLog()
    log.enabled = True
    log.mark("sandbox", "a")
    log.mark_all()
    assert log.take() == Taken(True, frozenset())


def test_a_failed_write_gives_its_keys_back() -> None:
    log = ChangeLog()
    log.enabled = True
    log.mark("sandbox", "a")
    taken = log.take()
    log.mark("sandbox", "b")
    log.give_back(taken)
    assert log.take().keys == {("sandbox", "a"), ("sandbox", "b")}
