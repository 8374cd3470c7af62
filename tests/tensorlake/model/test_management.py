"""The management API's rules without HTTP: command bodies, names, signals, streams, files and their errors."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core.errors import ApiError
from mockserver.sandbox.filesystem import FileSystem, FsError
from mockserver.tensorlake.model import CommandSpec, Daemon
from mockserver.tensorlake.model import management as rules


def refusal(call: Any, *args: Any, **kwargs: Any) -> tuple[int, str]:
    """Return the (status, code) ``call`` raises."""
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    return caught.value.status, caught.value.code


def test_a_run_body_becomes_a_command_spec_and_unknown_keys_are_reported() -> None:
    unknown: list[str] = []
    body = {"command": "ls", "args": ["-l"], "env": {"A": "1"}, "working_dir": "/tmp", "timeout": 2, "x": 1}
    spec = rules.command_spec(body, run=True, unknown=unknown)
    assert spec == CommandSpec("ls", ("-l",), (("A", "1"),), "/tmp", None, False, 2.0)
    assert unknown == ["x"]
    start = rules.command_spec({"command": "srv", "name": "web", "stdin_mode": "pipe"}, run=False, unknown=[])
    assert start.name == "web" and start.stdin_pipe and start.timeout is None


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ([], "invalid_type"),
        ({"command": ""}, "invalid_command"),
        ({"command": "ls", "args": "-l"}, "invalid_type"),
        ({"command": "ls", "env": {"A": 1}}, "invalid_type"),
        ({"command": "ls", "working_dir": "tmp"}, "invalid_working_dir"),
        ({"command": "ls", "timeout": -1}, "invalid_timeout"),
        ({"command": "ls", "timeout": True}, "invalid_timeout"),
        ({"command": "ls", "timeout": float("nan")}, "invalid_timeout"),
        ({"command": "ls", "timeout": 1e30}, "invalid_timeout"),
    ],
)
def test_bad_run_bodies(body: Any, code: str) -> None:
    assert refusal(rules.command_spec, body, run=True, unknown=[]) == (400, code)


def test_a_running_process_keeps_its_name() -> None:
    daemon = Daemon("sb", "default", 0.0, lambda: "u")
    daemon.start(CommandSpec("srv", name="web"), 0.0)
    assert refusal(rules.start_spec, daemon, {"command": "srv", "name": "web"}, []) == (409, "process_name_in_use")
    assert refusal(rules.start_spec, daemon, {"command": "srv", "name": 7}, []) == (400, "invalid_type")
    daemon.finish(daemon.find("web"), 1.0, exit_code=0)
    assert rules.start_spec(daemon, {"command": "srv", "name": "web"}, []).name == "web"


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ({"signal": 15}, True),
        ({"signal": 0}, False),
        ({"signal": 65}, False),
        ({"signal": True}, False),
        ({}, False),
        ([], False),
    ],
)
def test_signals_are_1_to_64(body: Any, ok: bool) -> None:
    if ok:
        assert rules.signal_number(body) == 15
    else:
        assert refusal(rules.signal_number, body) == (400, "invalid_signal")


def test_streams_and_stdin() -> None:
    assert [rules.stream_name(s) for s in ("stdout", "stderr", "output")] == ["stdout", "stderr", "output"]
    assert refusal(rules.stream_name, "logs") == (404, "not_found")
    daemon = Daemon("sb", "default", 0.0, lambda: "u")
    piped = daemon.start(CommandSpec("cat", stdin_pipe=True), 0.0)
    closed = daemon.start(CommandSpec("cat"), 0.0)
    assert rules.stdin_target(piped) is piped
    assert refusal(rules.stdin_target, closed) == (409, "stdin_closed")


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [(None, 400, "missing_path"), ("", 400, "missing_path"), ("/a/../etc", 403, "path_traversal")],
)
def test_file_paths(raw: str | None, status: int, code: str) -> None:
    assert refusal(rules.file_path, raw) == (status, code)


def test_files_and_their_errors() -> None:
    fs = FileSystem(now=lambda: 1.0, hostname="sb")
    rules.write_file(fs, "/work/a.txt", b"hi")
    with rules.open_file(fs, "/work//a.txt") as stream:
        assert (stream.size, b"".join(stream.chunks())) == (2, b"hi")
    listing = rules.list_directory(fs, "/work")
    assert listing == {"path": "/work", "entries": [{"name": "a.txt", "is_dir": False, "size": 2, "modified_at": 1000}]}
    assert refusal(rules.open_file, fs, "/work/missing") == (404, "not_found")
    assert refusal(rules.open_file, fs, "/work") == (400, "is_a_directory")
    assert refusal(rules.list_directory, fs, "/work/a.txt") == (400, "not_a_directory")
    rules.delete_file(fs, "/work")
    assert refusal(rules.open_file, fs, "/work/a.txt") == (404, "not_found")
    assert rules.fs_error(FsError("exists", "there")).status == 409
    assert rules.fs_error(FsError("not_regular", "a FIFO")).status == 400


def test_pty_bodies_sessions_and_tokens() -> None:
    unknown: list[str] = []
    spec = rules.pty_spec({"command": "/bin/bash", "args": ["-i"], "rows": 30, "cols": 100, "x": 1}, unknown)
    assert (spec.command, spec.args, spec.rows, spec.cols, unknown) == ("/bin/bash", ("-i",), 30, 100, ["x"])
    assert rules.pty_spec({"command": "sh"}, []).rows == 24
    assert refusal(rules.pty_spec, {"command": "sh", "rows": 0}, []) == (400, "invalid_type")
    assert refusal(rules.pty_spec, {"command": ""}, []) == (400, "invalid_command")
    daemon = Daemon("sb", "default", 0.0, lambda: "0123-4567")
    session = rules.open_pty(daemon, spec, 1.0)
    assert rules.pty_session(daemon, session.session_id, session.token) is session
    assert refusal(rules.pty_session, daemon, session.session_id, "wrong") == (401, "invalid_pty_token")
    assert refusal(rules.pty_session, daemon, "nope", session.token) == (404, "pty_session_not_found")
    assert rules.pty_session(daemon, session.session_id, None, need_token=False) is session


@pytest.mark.parametrize(("raw", "port"), [("8080", 8080), ("1", 1), ("65535", 65535)])
def test_tunnel_ports(raw: str, port: int) -> None:
    assert rules.tunnel_port(raw) == port


@pytest.mark.parametrize("raw", [None, "", "0", "65536", "-1", "80a", "\uff18\uff10"])
def test_bad_tunnel_ports(raw: str | None) -> None:
    assert refusal(rules.tunnel_port, raw) == (400, "invalid_port")


def test_an_oom_kill_is_its_own_status_and_exit_event() -> None:
    daemon = Daemon("sb", "default", 0.0, lambda: "u")
    proc = daemon.start(CommandSpec("python3"), 0.0)
    assert daemon.finish(proc, 1.0, signal=9, reason="oom_killed")
    assert proc.info()["status"] == "oom_killed"
    assert proc.exit_event() == {"signal": 9, "oom_killed": True, "reason": "oom_killed"}
