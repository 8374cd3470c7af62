"""How a process ended: the status a shell reports, and why, for every way it ends."""

from __future__ import annotations

import pytest

from mockserver.core.exits import Exited


@pytest.mark.parametrize(
    ("ended", "shell_code", "reason"),
    [
        (Exited(0), 0, "exited"),
        (Exited(3), 3, "exited"),
        (Exited(None, 15), 143, "signaled"),
        (Exited(None, 9, timed_out=True), 137, "timed_out"),
        (Exited(None, 9, oom_killed=True), 137, "oom_killed"),
        (Exited(None), 137, "signaled"),
    ],
)
def test_the_shell_status_and_the_reason(ended: Exited, shell_code: int, reason: str) -> None:
    assert (ended.shell_code, ended.reason) == (shell_code, reason)
