"""The mock's clock as sandboxes read it: the file follows every set, and ``sleep`` follows the file."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mockserver.core.clock import VirtualClock
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.clockfile import ClockFile
from mockserver.linux.launch import CLOCK_FILE
from mockserver.linux.records import RunResult

from .conftest import needs_runtime


def _reading(path: Path) -> tuple[str, int]:
    mode, now = path.read_text().split()
    return mode, int(now)


def test_the_file_follows_every_set_of_the_clock(tmp_path: Path) -> None:
    clock = VirtualClock("manual", start=100.0)
    path = tmp_path / "clock"
    clock_file = ClockFile(path, clock)
    assert _reading(path) == ("manual", 100_000), "written at once, before any set"
    clock.advance(2.5)
    assert _reading(path) == ("manual", 102_500)
    clock.set_mode("wall")
    assert _reading(path)[0] == "wall"
    clock.reset(50.0)
    assert _reading(path)[1] in range(50_000, 50_100)
    clock_file.close()
    assert not path.exists(), "closed: every sleep is the real one again"
    clock.advance(1)
    assert not path.exists()


@needs_runtime
def test_sleep_waits_for_the_manual_clock_and_one_crossing_advance_releases_it(
    runtime: LinuxRuntime, sandbox: LinuxSandbox
) -> None:
    assert runtime.guest_dir is not None
    clock = VirtualClock("manual")
    clock_file = ClockFile(runtime.guest_dir / CLOCK_FILE, clock)
    results: list[RunResult] = []
    sleeper = threading.Thread(target=lambda: results.append(sandbox.run("sleep 1m 0.5 && echo released")))
    try:
        sleeper.start()
        time.sleep(0.5)
        assert sleeper.is_alive(), "a manual clock that has not moved holds the sleep"
        clock.advance(60)
        time.sleep(0.3)
        assert sleeper.is_alive(), "60 s is short of 60.5 s: still held"
        clock.advance(0.5)
        sleeper.join(timeout=10)
        assert not sleeper.is_alive(), "the advance that crossed the deadline released it"
    finally:
        clock_file.close()
        sleeper.join(timeout=70)
    [result] = results
    assert (result.stdout, result.exit_code) == (b"released\n", 0)


@needs_runtime
def test_sleep_without_a_manual_clock_is_the_real_one(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    assert runtime.guest_dir is not None
    clock_file = ClockFile(runtime.guest_dir / CLOCK_FILE, VirtualClock("wall"))
    try:
        result = sandbox.run("sleep 0.1 && sleep --version | head -1; sleep bogus")
        clock_file.close()
        clock_file = ClockFile(runtime.guest_dir / CLOCK_FILE, VirtualClock("manual"))
        held = sandbox.run("sleep infinity --help | head -1; sleep bogus 2>&1")
    finally:
        clock_file.close()
    assert result.stdout.startswith(b"sleep (GNU coreutils)"), result
    assert b"invalid time interval" in result.stderr and result.exit_code == 1
    assert held.stdout.startswith(b"Usage: sleep"), "under manual, what the shim cannot read goes to the real sleep"
    assert b"invalid time interval" in held.stdout
