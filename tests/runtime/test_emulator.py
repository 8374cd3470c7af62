"""The emulator backend: a record's runner, kept per key or fresh per command, forgotten on clear."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from mockserver.runtime import EMULATOR
from mockserver.runtime.emulator import EmulatorBackend, Runner
from mockserver.sandbox.steps import Exit, Step


class _Runner:
    def __init__(self, record: str) -> None:
        self.record = record

    def run(
        self, command: str | Sequence[str], *, env: Mapping[str, str], cwd: str, stdin: bytes = b""
    ) -> Iterator[Step]:
        yield Exit(0)


def test_with_a_key_each_record_keeps_one_runner_until_clear() -> None:
    made: list[str] = []

    def factory(record: str) -> Runner:
        made.append(record)
        return _Runner(record)

    backend: EmulatorBackend[str] = EmulatorBackend(factory, key=lambda record: record)
    first = backend.runner_for("sb-1")
    assert backend.runner_for("sb-1") is first and backend.runner_for("sb-2") is not first
    backend.clear()
    assert backend.runner_for("sb-1") is not first
    assert made == ["sb-1", "sb-2", "sb-1"]


def test_without_a_key_every_command_gets_a_fresh_runner() -> None:
    backend: EmulatorBackend[str] = EmulatorBackend(_Runner)
    assert backend.runner_for("sb-1") is not backend.runner_for("sb-1")
    assert backend.capabilities is EMULATOR
