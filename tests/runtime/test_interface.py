"""The runtime interface: one table of spawn codes, and what each runtime declares it can serve."""

from __future__ import annotations

import pytest

from mockserver.runtime import EMULATOR, LINUX, SPAWN_CODES, Capabilities, spawn_exit_code


@pytest.mark.parametrize(
    ("reason", "code"),
    [("permission_denied", 126), ("not_found", 127), ("no_such_directory", 127), ("anything else", 127)],
)
def test_a_command_that_could_not_start_exits_as_a_shell_says(reason: str, code: int) -> None:
    assert spawn_exit_code(reason) == code


def test_the_spawn_table_holds_only_the_exceptions_to_127() -> None:
    assert set(SPAWN_CODES.values()) == {126}


def test_the_emulator_keeps_sessions_and_nothing_a_real_process_needs() -> None:
    assert Capabilities(sessions=True) == EMULATOR
    assert not (EMULATOR.pty or EMULATOR.ports or EMULATOR.code)


def test_the_linux_runtime_serves_everything() -> None:
    assert Capabilities(pty=True, ports=True, code=True, sessions=True) == LINUX
