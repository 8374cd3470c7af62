"""The relay: a real process's events as the runtime's, stdout and stderr kept apart, a terminal's as stdout."""

from __future__ import annotations

import asyncio

from mockserver.core.exits import Exited
from mockserver.linux.process import LinuxProcess, OutputChunk
from mockserver.runtime import Output
from mockserver.runtime.linux import RealProcess, relay


def _process(pty: bool = False) -> LinuxProcess:
    return LinuxProcess(1, ["x"], pty=pty, stdin=True, send=lambda _h, _p: None, signal=lambda *_a: True)


def _relayed(process: LinuxProcess, since: int = 0) -> list[object]:
    async def collect() -> list[object]:
        return [event async for event in relay(process, since)]

    return asyncio.run(collect())


def test_output_then_the_exit_itself_and_nothing_after() -> None:
    process = _process()
    ended = Exited(None, 9, timed_out=True)
    for event in (OutputChunk("stdout", b"a"), OutputChunk("stderr", b"b"), ended, OutputChunk("stdout", b"late")):
        process.publish(event)
    assert _relayed(process) == [Output("stdout", b"a"), Output("stderr", b"b"), ended]
    assert _relayed(process, since=2) == [ended]


def test_a_terminal_screen_is_stdout() -> None:
    process = _process(pty=True)
    process.publish(OutputChunk("pty", b"$ "))
    process.publish(Exited(0))
    assert _relayed(process) == [Output("stdout", b"$ "), Exited(0)]


def test_a_real_process_ended_takes_no_signal_and_no_resize() -> None:
    sent: list[tuple[object, ...]] = []
    process = LinuxProcess(
        1, ["x"], pty=True, stdin=True, send=lambda *_a: None, signal=lambda *a: sent.append(a) or True
    )
    process.publish(Exited(0))
    real = RealProcess(process)
    real.signal(15)
    real.resize(24, 80)
    assert not real.running and sent == []
