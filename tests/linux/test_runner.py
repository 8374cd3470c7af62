"""The emulator's step interface on real sandboxes: same steps for the same commands, usable by execd's runner."""

from __future__ import annotations

import asyncio

import pytest

from mockserver.core import VirtualClock
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.sandbox import CommandEmulator, Exit, FileSystem, Output, Step

from .conftest import needs_runtime
from .steps import StepRunner

pytestmark = needs_runtime


def _collect(steps: list[Step]) -> tuple[bytes, bytes, int]:
    out = b"".join(s.data for s in steps if isinstance(s, Output) and s.stream == "stdout")
    err = b"".join(s.data for s in steps if isinstance(s, Output) and s.stream == "stderr")
    exits = [s.code for s in steps if isinstance(s, Exit)]
    assert len(exits) == 1 and isinstance(steps[-1], Exit)
    return out, err, exits[0]


@pytest.mark.parametrize(
    "command",
    ["echo hello", "printf 'a\\nb\\n'", "exit 3", "echo out; echo err >&2; exit 1", ["echo", "argv", "form"]],
)
def test_same_steps_as_the_emulator(sandbox: LinuxSandbox, command: str | list[str]) -> None:
    emulator = CommandEmulator(FileSystem())
    real = _collect(list(StepRunner(sandbox).run(command, env={}, cwd="/tmp")))
    emulated = _collect(list(emulator.run(command, env={}, cwd="/tmp")))
    assert real == emulated


def test_what_the_emulator_cannot_do(sandbox: LinuxSandbox) -> None:
    steps = list(StepRunner(sandbox).run('for i in 1 2; do python3 -c "print($i*21)"; done'))
    assert _collect(steps) == (b"21\n42\n", b"", 0)


def test_stdin_and_start_failures(sandbox: LinuxSandbox) -> None:
    runner = StepRunner(sandbox)
    assert _collect(list(runner.run("tr a-z A-Z", stdin=b"shout\n"))) == (b"SHOUT\n", b"", 0)
    out, err, code = _collect(list(runner.run(["no-such-tool"])))
    assert (out, code) == (b"", 127) and b"not found" in err
    out, err, code = _collect(list(runner.run("true", cwd="/missing")))
    assert code == 127 and b"working directory does not exist" in err


def test_closing_early_kills_the_command(sandbox: LinuxSandbox) -> None:
    steps = StepRunner(sandbox).run("echo first; sleep 60")
    assert next(steps) == Output("stdout", b"first\n")
    steps.close()  # type: ignore[attr-defined]
    assert sandbox.run("pgrep -x sleep || echo none").stdout == b"none\n"


def test_a_timeout_ends_with_137(sandbox: LinuxSandbox) -> None:
    assert _collect(list(StepRunner(sandbox, timeout=0.2).run("sleep 30")))[2] == 137


def test_async_stream(sandbox: LinuxSandbox) -> None:
    async def main() -> list[Step]:
        return [step async for step in StepRunner(sandbox).astream("echo a; echo b >&2; exit 4")]

    assert _collect(asyncio.run(main())) == (b"a\n", b"b\n", 4)


def test_opensandbox_execution_takes_it_unchanged(sandbox: LinuxSandbox) -> None:
    from mockserver.opensandbox.commands import Execution
    from mockserver.opensandbox.model.records import CommandRecord

    async def main() -> list[dict[str, object]]:
        record = CommandRecord("c1", "for i in 1 2; do echo $((i*21)); done", False, 0.0)
        execution = Execution(
            record, StepRunner(sandbox), VirtualClock(), env={}, cwd="/tmp", timeout_ms=None, stream=True
        )
        execution.start()
        return [event async for event in execution.events()]

    events = asyncio.run(main())
    assert "".join(str(e["text"]) for e in events if e["type"] == "stdout") == "21\n42\n"
    assert events[-1]["type"] == "execution_complete"


def test_abandoning_steps_of_a_destroyed_sandbox_is_quiet(runtime: LinuxRuntime) -> None:
    sb = runtime.create_sandbox()
    steps = StepRunner(sb).run("echo first; sleep 60")
    assert next(steps) == Output("stdout", b"first\n")
    sb.destroy()
    assert list(steps)[-1] == Exit(137)  # the destruction ended it
    assert not sb.alive
