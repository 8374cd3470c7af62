"""Backpressure between the server and a sandbox: output waits for its reader, stdin never blocks the caller.

A process's output is flow-controlled (``mockserver.linux.process.WINDOW``): with a reader that stops
taking it, the sandbox's init stops reading the pipe and the process blocks, as on a full pipe; it goes on
when the reader does. Writes to a sandbox whose init does not read (stopped, as by a debugger) queue up
to ``OUTBOX_LIMIT`` bytes without blocking the caller, and are delivered when it reads again.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from mockserver.linux import LinuxSandbox, OutputChunk
from mockserver.linux.channel import OUTBOX_LIMIT
from mockserver.linux.process import HISTORY_LIMIT, WINDOW, LinuxProcess

from .conftest import needs_runtime


def _received(proc: LinuxProcess) -> int:
    return len(proc.output())


def _settled(proc: LinuxProcess) -> int:
    """Return how much output arrived once it stops growing (fail if it grows for 10 s)."""
    last = -1
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = _received(proc)
        if now == last:
            return now
        last = now
        time.sleep(0.2)
    pytest.fail("the output never stopped growing: no backpressure")


@needs_runtime
def test_a_flood_pauses_while_its_reader_does_not_read_and_goes_on_when_it_does(sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process(["yes", "flood"])
    reader = proc.events()
    first = next(reader)  # a reader now follows the process and has taken one chunk
    assert isinstance(first, OutputChunk)
    paused = _settled(proc)
    time.sleep(0.3)
    assert _received(proc) == paused  # still: the process is blocked on its pipe
    taken = 0
    for event in reader:  # reading again lets it go on
        assert isinstance(event, OutputChunk)
        taken += len(event.data)
        if taken > 4 * WINDOW:
            break
    assert _received(proc) > paused
    reader.close()
    proc.kill()
    assert proc.wait(10) is not None


@needs_runtime
def test_a_flood_nobody_follows_keeps_the_newest_output_only(sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process(["sh", "-c", "yes flood | head -c 20000000; echo end"])
    status = proc.wait(60)
    assert status is not None and status.code == 0
    kept = proc.output()
    assert kept.endswith(b"end\n") and HISTORY_LIMIT // 2 < len(kept) <= HISTORY_LIMIT


def _init_stopped(sandbox: LinuxSandbox) -> bool:
    assert sandbox.init_pid is not None
    with open(f"/proc/{sandbox.init_pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


@needs_runtime
def test_stdin_to_a_stopped_init_does_not_block_and_arrives_when_it_runs_again(sandbox: LinuxSandbox) -> None:
    assert sandbox.init_pid is not None
    counter = sandbox.start_process(["wc", "-c"], stdin=True)
    os.kill(sandbox.init_pid, signal.SIGSTOP)
    try:
        while not _init_stopped(sandbox):
            time.sleep(0.01)
        results: list[bool] = []
        writer = threading.Thread(target=lambda: results.append(counter.write_stdin(b"x" * (1 << 20))))
        writer.start()
        writer.join(10)  # a blocking write would still be waiting here
        assert results == [True]
        assert counter.write_stdin(b"y" * OUTBOX_LIMIT)  # queued too: the queue held less than its bound
        assert not counter.write_stdin(b"z")  # now it holds more: refused, not blocked
        assert counter.close_stdin()
        assert counter.signal(signal.SIGCONT)  # a signal to a stopped init is queued, not waited for
    finally:
        os.kill(sandbox.init_pid, signal.SIGCONT)
    status = counter.wait(30)
    assert status is not None and status.code == 0
    assert int(counter.output("stdout")) == (1 << 20) + OUTBOX_LIMIT
