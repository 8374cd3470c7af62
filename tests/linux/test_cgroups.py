"""Resource limits: memory (OOM gives exit 137 and the OOM evidence) and pids, where a cgroup enforces them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.cgroups import CgroupSupport, detect
from mockserver.linux.sandbox import Limits

from .conftest import needs_runtime


def test_limits_not_enforced_are_reported_as_deviations() -> None:
    limits = Limits(memory_bytes=1 << 20, pids=10, enforced=frozenset({"pids"}))
    assert limits.deviations() == ["memory limit 1048576 bytes recorded, not enforced (no writable memory cgroup)"]
    assert Limits().deviations() == []


def test_support_describes_each_resource() -> None:
    assert CgroupSupport().describe() == "memory: not enforced, pids: not enforced, freezer: not enforced"


@pytest.fixture
def limited(runtime: LinuxRuntime) -> Iterator[LinuxSandbox]:
    sb = runtime.create_sandbox(memory_bytes=64 << 20, pids=40)
    try:
        yield sb
    finally:
        sb.destroy()


@needs_runtime
def test_memory_limit_oom_kill_gives_137(limited: LinuxSandbox) -> None:
    if "memory" not in limited.limits.enforced:
        pytest.skip(limited.limits.deviations()[0])
    hog = limited.start_process(["python3", "-c", "x = bytearray(400 << 20); print('survived')"])
    status = hog.wait(60)
    assert status is not None
    assert (status.signal, status.shell_code, status.oom_killed, status.reason) == (9, 137, True, "oom_killed")
    via_shell = limited.run("python3 -c 'x = bytearray(400 << 20)'; echo rc=$?")
    assert via_shell.stdout == b"rc=137\n"
    assert limited.run("echo alive").stdout == b"alive\n"  # the init was spared


@needs_runtime
def test_pids_limit(limited: LinuxSandbox) -> None:
    if "pids" not in limited.limits.enforced:
        pytest.skip(limited.limits.deviations()[-1])
    result = limited.run(["python3", "-c", FORKS], timeout=60)
    verdict, count = result.stdout.split()[:2]
    assert verdict == b"blocked" and int(count) < 40, result.stdout


FORKS = """
import os, time
children = []
try:
    while len(children) < 200:
        pid = os.fork()
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        children.append(pid)
    print("unlimited", len(children))
except OSError as exc:
    print("blocked", len(children), exc.errno)
for pid in children:
    os.kill(pid, 9)
"""


@needs_runtime
def test_detect_finds_this_machines_cgroups() -> None:
    support = detect()
    assert support.describe().count(":") == 3
