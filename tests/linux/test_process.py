"""Process handles: output streams in order as it comes, from threads or any event loop, then the exit."""

from __future__ import annotations

import asyncio
import threading

from mockserver.linux import Exited, LinuxSandbox, OutputChunk
from mockserver.linux.process import LinuxProcess

from .conftest import needs_runtime


def _offline(ident: int = 1) -> LinuxProcess:
    return LinuxProcess(ident, ["x"], pty=False, stdin=True, send=lambda _h, _p: None, signal=lambda *_a: True)


def test_history_is_followed_from_any_position_and_ends_at_the_exit() -> None:
    proc = _offline()
    proc.publish(OutputChunk("stdout", b"a"))
    proc.publish(OutputChunk("stderr", b"b"))
    proc.publish(Exited(0))
    proc.publish(OutputChunk("stdout", b"ignored after the exit"))
    assert list(proc.events()) == [OutputChunk("stdout", b"a"), OutputChunk("stderr", b"b"), Exited(0)]
    assert list(proc.events(since=2)) == [Exited(0)]
    assert proc.output() == b"ab" and proc.output("stderr") == b"b"
    assert not proc.running and not proc.stdin_open


def test_a_blocked_reader_wakes_on_publish_from_another_thread() -> None:
    proc = _offline()
    threading.Timer(0.05, lambda: (proc.publish(OutputChunk("stdout", b"x")), proc.publish(Exited(None, 9)))).start()
    assert [type(e).__name__ for e in proc.events(timeout=10)] == ["OutputChunk", "Exited"]
    assert proc.wait(1) == Exited(None, 9)


def test_events_timeout_returns_without_an_exit() -> None:
    assert list(_offline().events(timeout=0.01)) == []


def test_exit_status_reasons_and_shell_codes() -> None:
    assert (Exited(3).reason, Exited(3).shell_code) == ("exited", 3)
    assert (Exited(None, 15).reason, Exited(None, 15).shell_code) == ("signaled", 143)
    assert Exited(None, 9, timed_out=True).reason == "timed_out"
    assert (Exited(None, 9, oom_killed=True).reason, Exited(None, 9, oom_killed=True).shell_code) == (
        "oom_killed",
        137,
    )


def test_async_readers_on_two_loops() -> None:
    proc = _offline()

    async def read() -> list[object]:
        return [e async for e in proc.aevents()]

    results: list[list[object]] = []
    threads = [threading.Thread(target=lambda: results.append(asyncio.run(read()))) for _ in range(2)]
    for thread in threads:
        thread.start()
    proc.publish(OutputChunk("stdout", b"1"))
    proc.publish(Exited(0))
    for thread in threads:
        thread.join(10)
    assert results == [[OutputChunk("stdout", b"1"), Exited(0)]] * 2


@needs_runtime
def test_output_streams_while_the_process_runs(sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process("for i in 1 2 3; do echo $i; sleep 0.1; done")
    seen = []
    for event in proc.events(timeout=20):
        seen.append(event)
        if len(seen) == 1:
            assert proc.running  # the first line arrived before the end
    assert b"".join(e.data for e in seen if isinstance(e, OutputChunk)) == b"1\n2\n3\n"
    assert seen[-1] == Exited(0)


@needs_runtime
def test_async_interface_end_to_end(sandbox: LinuxSandbox) -> None:
    async def main() -> tuple[bytes, Exited]:
        proc = await sandbox.start_process_async(
            ["python3", "-c", "import sys; print(sys.stdin.read()[::-1])"], stdin=True
        )
        proc.write_stdin(b"olleh")
        proc.close_stdin()
        out = b"".join([e.data async for e in proc.aevents() if isinstance(e, OutputChunk)])
        return out, await proc.await_exit()

    assert asyncio.run(main()) == (b"hello\n", Exited(0))


@needs_runtime
def test_large_output_arrives_whole(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("head -c 3000000 /dev/zero | tr '\\0' 'a'")
    assert result.stdout == b"a" * 3_000_000
