"""execd's request rules without HTTP: the working directory of ``POST /command`` (execd 1.0.11+)."""

from __future__ import annotations

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model import execd, pty

from .conftest import create, new_state

PREFIX = "invalid request, validation error "


def _refusal(cwd: str) -> tuple[int, str, str]:
    state = new_state()
    sb = create(state)
    sb.fs.write("/etc/motd", b"hi")
    with pytest.raises(ApiError) as caught:
        execd.prepare_run(state, sb, {"command": "echo hi", "cwd": cwd}, via_proxy=False)
    assert sb.commands == {}
    return caught.value.status, caught.value.code, caught.value.message


@pytest.mark.parametrize(
    ("cwd", "message"),
    [
        ("/home/user", "working directory does not exist: /home/user"),
        ("/etc/motd", "working directory path is not a directory: /etc/motd"),
        ("/etc/motd/x", 'cannot access working directory "/etc/motd/x": stat /etc/motd/x: not a directory'),
    ],
)
def test_a_working_directory_execd_cannot_use_is_a_400(cwd: str, message: str) -> None:
    assert _refusal(cwd) == (400, "INVALID_REQUEST_BODY", PREFIX + message)


def test_an_existing_directory_is_used_normalised() -> None:
    state = new_state()
    sb = create(state)
    run = execd.prepare_run(state, sb, {"command": "pwd", "cwd": "/tmp/../etc/"}, via_proxy=False)
    assert run.cwd == "/etc"
    assert execd.prepare_run(state, sb, {"command": "pwd"}, via_proxy=False).cwd == "/"


def test_pty_sessions_do_not_exist_and_cannot_be_created() -> None:
    missing = pty.session_not_found("nope")  # what the emulator answers for any session (it has none)
    assert (missing.status, missing.code, missing.message) == (
        404,
        "CONTEXT_NOT_FOUND",
        "pty session nope not found",
    )
    with pytest.raises(ApiError) as refused:
        execd.create_pty({"cwd": "/tmp"})
    assert (refused.value.status, refused.value.code) == (501, "NOT_SUPPORTED")
