"""The emulator process runtime on its own: runs, timeouts on the virtual clock, kills, followers, close."""

from __future__ import annotations

import asyncio
from typing import Any

from mockserver.core import IdFactory, VirtualClock
from mockserver.core.dns import DnsTable
from mockserver.sandbox.commands import CommandEmulator
from mockserver.tensorlake.model import CommandSpec, Sandbox, TensorLakeModel
from mockserver.tensorlake.processes import EmulatorRuntime


def setup() -> tuple[TensorLakeModel, EmulatorRuntime, Sandbox]:
    """Return a model with one sandbox and an emulator runtime on an auto clock."""
    from mockserver.tensorlake.model.validation import parse_create

    clock = VirtualClock("auto")
    model = TensorLakeModel(clock, IdFactory(3), DnsTable().resolve)
    sandbox, _ = model.create("owner", "default", parse_create({}, model.resolve))
    runtime = EmulatorRuntime(clock, lambda sb: CommandEmulator(sb.fs))
    return model, runtime, sandbox


async def collect(runtime: EmulatorRuntime, *args: Any) -> list[dict[str, Any]]:
    """Return every event a follower sees."""
    return [event async for event in runtime.follow(*args, with_exit=True)]


def test_a_run_streams_its_lines_and_exit() -> None:
    model, runtime, sandbox = setup()
    daemon = model.daemon_of(sandbox)

    async def scenario() -> list[dict[str, Any]]:
        proc = runtime.spawn(sandbox, daemon, CommandSpec("sh", ("-c", "echo a; echo b >&2; exit 2")))
        return await collect(runtime, daemon, proc, "output")

    events = asyncio.run(scenario())
    assert [(e["stream"], e["line"]) for e in events[:-1]] == [("stdout", "a"), ("stderr", "b")]
    assert events[-1] == {"exit_code": 2, "reason": "exited"}
    assert [entry["body"] for entry in daemon.logs] == ["a", "b"]


def test_a_timeout_on_the_virtual_clock_ends_the_run() -> None:
    model, runtime, sandbox = setup()
    daemon = model.daemon_of(sandbox)
    start = model.clock.now()

    async def scenario() -> list[dict[str, Any]]:
        proc = runtime.spawn(sandbox, daemon, CommandSpec("sleep", ("100",), timeout=5.0))
        return await collect(runtime, daemon, proc, "output")

    assert asyncio.run(scenario())[-1] == {"signal": 9, "reason": "timed_out"}
    assert model.clock.now() - start == 5.0


def test_the_timeout_counts_the_time_a_process_waits_on_stdin() -> None:
    model, runtime, sandbox = setup()
    daemon = model.daemon_of(sandbox)
    model.clock.set_mode("manual")

    async def scenario() -> list[dict[str, Any]]:
        proc = runtime.spawn(sandbox, daemon, CommandSpec("cat", stdin_pipe=True, timeout=5.0))
        follower = asyncio.create_task(collect(runtime, daemon, proc, "output"))
        await runtime.write_stdin(daemon, proc, b"hi\n")
        await asyncio.sleep(0.02)
        assert proc.running  # cat waits on its open stdin, without sleeping
        model.clock.advance(5)
        return await asyncio.wait_for(follower, 5)

    events = asyncio.run(scenario())
    assert [e.get("line") for e in events[:-1]] == ["hi"]
    assert events[-1] == {"signal": 9, "reason": "timed_out"}


def test_kill_and_close_end_running_processes() -> None:
    model, runtime, sandbox = setup()
    daemon = model.daemon_of(sandbox)
    model.clock.set_mode("manual")

    async def scenario() -> tuple[list[dict[str, Any]], str, str]:
        first = runtime.spawn(sandbox, daemon, CommandSpec("sleep", ("100",)))
        second = runtime.spawn(sandbox, daemon, CommandSpec("sleep", ("100",)))
        follower = asyncio.create_task(collect(runtime, daemon, first, "output"))
        await asyncio.sleep(0.01)
        runtime.kill(daemon, first, 15)
        runtime.close(sandbox.id)
        events = await asyncio.wait_for(follower, 5)
        for _ in range(100):
            if not second.running:
                break
            await asyncio.sleep(0.01)
        return events, first.status, second.status

    events, first, second = asyncio.run(scenario())
    assert events == [{"signal": 15, "reason": "signaled"}]
    assert (first, second) == ("signaled", "signaled")
