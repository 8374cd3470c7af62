"""The daemon's records: lines, the end of a process, its log lines and summaries."""

from __future__ import annotations

import itertools

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model import CommandSpec, Daemon


@pytest.fixture
def daemon() -> Daemon:
    """Return a daemon whose log uuids count up."""
    counter = itertools.count()
    return Daemon("sb1", "ns", 10.0, lambda: f"uuid-{next(counter)}")


def test_output_is_kept_per_line_and_flushed_at_the_end(daemon: Daemon) -> None:
    proc = daemon.start(CommandSpec("sh", ("-c", "x"), name="job"), 10.0)
    daemon.write(proc, "stdout", b"one\ntw", 11.0)
    daemon.write(proc, "stderr", b"oops\n", 11.5)
    daemon.write(proc, "stdout", b"o", 12.0)
    assert proc.lines("stdout") == ["one"] and proc.lines("output") == ["one", "oops"]
    assert daemon.finish(proc, 13.0, exit_code=3)
    assert not daemon.finish(proc, 14.0, signal=9)
    assert proc.lines("stdout") == ["one", "two"] and proc.status == "exited" and proc.ended_at == 13.0
    assert proc.exit_event() == {"exit_code": 3, "reason": "exited"}
    assert proc.info()["ended_at"] == 13_000 and proc.info()["name"] == "job"


def test_processes_are_found_by_pid_or_name(daemon: Daemon) -> None:
    first = daemon.start(CommandSpec("a"), 10.0)
    second = daemon.start(CommandSpec("b", name="my job"), 10.0)
    assert (first.pid, second.pid) == (100, 101)
    assert daemon.find("100") is first and daemon.find("my%20job") is second
    with pytest.raises(ApiError) as caught:
        daemon.find("102")
    assert caught.value.status == 404


def test_log_lines_and_summaries(daemon: Daemon) -> None:
    proc = daemon.start(CommandSpec("echo"), 10.0)
    daemon.write(proc, "stdout", b"hello\n", 11.0)
    daemon.finish(proc, 12.0, signal=15, reason="signaled")
    (entry,) = daemon.logs
    assert entry["level"] == 3 and entry["processId"] == "100" and entry["signal"]["sandboxId"] == "sb1"
    assert entry["signal"]["uuid"] == "uuid-0" and entry["signal"]["namespace"] == "ns"
    (summary,) = daemon.log_processes()
    assert summary["processCommand"] == "echo" and summary["logCount"] == 1 and summary["firstSeen"] == 11_000
    assert daemon.info(40.5) == {
        "version": "sandproof-mock",
        "uptime_secs": 30,
        "running_processes": 0,
        "total_processes": 1,
    }
    assert proc.exit_event() == {"signal": 15, "reason": "signaled"}
