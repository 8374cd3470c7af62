"""Resource limits: memory (OOM gives exit 137 and the OOM evidence) and pids, where a cgroup enforces them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.cgroups import CgroupSupport, detect
from mockserver.linux.limits import DEFAULT_DISK, DEFAULT_MEMORY, DEFAULT_PIDS, SandboxLimits, parse_size
from mockserver.linux.sandbox import Limits

from .conftest import needs_runtime


def test_limits_not_enforced_are_reported_as_deviations() -> None:
    limits = Limits(memory_bytes=1 << 20, pids=10, enforced=frozenset({"pids"}))
    assert limits.deviations() == ["memory limit 1048576 bytes recorded, not enforced (no writable memory cgroup)"]
    assert Limits().deviations() == []


def test_sizes_and_default_limits() -> None:
    assert [parse_size(t) for t in ("512M", "2G", "2Gi", "10GB", "4096")] == [
        512 << 20,
        2 << 30,
        2 << 30,
        10 << 30,
        4096,
    ]
    for bad in ("", "2X", "-1", "0", "1.5G"):
        with pytest.raises(ValueError):
            parse_size(bad)
    with pytest.raises(ValueError):
        SandboxLimits(pids=0)
    disk = Limits(disk_bytes=1 << 20)
    assert disk.deviations() == ["disk limit 1048576 bytes recorded, not enforced (no tmpfs for the sandbox's root)"]


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


@needs_runtime
def test_every_sandbox_gets_the_default_limits(sandbox: LinuxSandbox) -> None:
    limits = sandbox.limits
    assert (limits.memory_bytes, limits.pids, limits.disk_bytes) == (DEFAULT_MEMORY, DEFAULT_PIDS, DEFAULT_DISK)
    missing = {"memory", "pids", "disk"} - limits.enforced
    if missing:
        pytest.skip("; ".join(limits.deviations()))
    assert sandbox.cgroup is not None
    assert (sandbox.cgroup.dirs["pids"] / "pids.max").read_text().strip() == str(DEFAULT_PIDS)
    df = sandbox.run(["df", "-B1", "--output=size", "/", "/workspace"]).stdout.split()
    assert df[1:] == [str(DEFAULT_DISK).encode()] * 2  # the sandbox's own size, not the host's /dev/shm


@needs_runtime
def test_a_disk_limit_fills_with_enospc_and_leaves_the_host_alone(runtime: LinuxRuntime) -> None:
    small = runtime.create_sandbox(disk_bytes=8 << 20)
    try:
        if "disk" not in small.limits.enforced:
            pytest.skip(small.limits.deviations()[-1])
        fill = small.run("dd if=/dev/zero of=/workspace/fill bs=1M count=64 2>&1; echo rc=$?")
        assert b"No space left on device" in fill.stdout and fill.stdout.endswith(b"rc=1\n")
        assert small.run(["stat", "-c", "%s", "/workspace/fill"]).stdout.strip() == str(8 << 20).encode()
        root = small.layout.root
    finally:
        small.destroy()
    assert not any(line.split()[4] == str(root) for line in Path("/proc/self/mountinfo").read_text().splitlines())
