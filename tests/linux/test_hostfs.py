"""HostFileSystem: a sandbox's real files behind the emulator's FileSystem interface, confined to its view."""

from __future__ import annotations

import os

import pytest

from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.hostfs import HostFileSystem
from mockserver.sandbox.filesystem import FsError

from .conftest import needs_runtime

pytestmark = needs_runtime


@pytest.fixture
def fs(sandbox: LinuxSandbox) -> HostFileSystem:
    return HostFileSystem(lambda: sandbox)


def code(call: object) -> str:
    """Return the FsError code a call raises."""
    assert callable(call)
    with pytest.raises(FsError) as caught:
        call()
    return caught.value.code


def test_writes_are_what_the_processes_see_and_the_other_way_round(sandbox: LinuxSandbox, fs: HostFileSystem) -> None:
    info = fs.write("/workspace/a/b.txt", b"hello\n", mode=0o640, parents=True)
    assert (info.size, info.mode, info.owner, info.is_dir) == (6, 0o640, "root", False)
    listed = sandbox.run("stat -c '%a %U %s' /workspace/a/b.txt; cat /workspace/a/b.txt").stdout
    assert listed == b"640 root 6\nhello\n"
    sandbox.run("mkdir -p /tmp/made && echo from-inside > /tmp/made/f && chmod 600 /tmp/made/f")
    assert fs.read("/tmp/made/f") == b"from-inside\n" and fs.stat("/tmp/made/f").mode == 0o600
    assert [e.name for e in fs.listdir("/tmp/made")] == ["f"]
    assert fs.read("/tmp/made/f", offset=5, limit=6) == b"inside"
    fs.write("/tmp/made/f", b"more\n", append=True)
    assert sandbox.run("cat /tmp/made/f").stdout == b"from-inside\nmore\n"


def test_the_mutations_of_the_files_api(sandbox: LinuxSandbox, fs: HostFileSystem) -> None:
    fs.mkdir("/work/d/e", 0o700)
    assert fs.stat("/work/d/e").mode == 0o700 and fs.is_dir("/work/d")
    fs.write("/work/d/c.txt", b"old old")
    assert fs.replace("/work/d/c.txt", "old", "new") == 2 and fs.read("/work/d/c.txt") == b"new new"
    fs.move("/work/d/c.txt", "/work/d/e/moved.txt")
    assert not fs.exists("/work/d/c.txt") and fs.is_file("/work/d/e/moved.txt")
    fs.chmod("/work/d/e/moved.txt", 0o604)
    fs.chown("/work/d/e/moved.txt", "nobody", "nogroup")
    assert sandbox.run("stat -c '%a %U' /work/d/e/moved.txt").stdout == b"604 nobody\n"
    assert [i.path for i in fs.search("/work", "*.txt")] == ["/work/d/e/moved.txt"]
    assert code(lambda: fs.remove("/work/d")) == "not_empty"
    fs.remove("/work/d", recursive=True)
    assert not fs.exists("/work/d")
    assert code(lambda: fs.read("/work/missing")) == "not_found"
    assert code(lambda: fs.read("/work")) == "is_a_directory"
    assert code(lambda: fs.mkdir("/tmp", parents=False)) == "exists"
    assert code(lambda: fs.remove("/")) == "invalid_path"


def test_confinement_holds(sandbox: LinuxSandbox, fs: HostFileSystem) -> None:
    assert code(lambda: fs.read("/etc/shadow")) == "permission_denied"
    assert code(lambda: fs.read("/proc/1/environ")) == "permission_denied"
    assert code(lambda: fs.write("/usr/bin/evil", b"x")) == "read_only"
    assert fs.read("/../../../etc/hostname") == f"{sandbox.hostname}\n".encode()
    sandbox.run("ln -s / /tmp/root; ln -s /etc/hostname /tmp/name; ln -s ../../../../../ /tmp/up")
    assert fs.read("/tmp/name") == f"{sandbox.hostname}\n".encode()  # the sandbox's file, not the host's
    assert code(lambda: fs.write("/tmp/root/usr/lib/evil", b"x")) == "read_only"
    host_only = os.path.abspath(__file__)
    assert code(lambda: fs.read("/tmp/up" + host_only)) == "not_found"  # the host's tree is not reached
    assert code(lambda: fs.read(host_only)) == "not_found"


def test_walk_stays_out_of_the_system_folders_and_dump_round_trips(runtime: LinuxRuntime, fs: HostFileSystem) -> None:
    fs.write("/workspace/keep.txt", b"kept", parents=True)
    fs.mkdir("/workspace/dir", 0o750)
    walked = [i.path for i in fs.walk("/")]
    assert "/workspace/keep.txt" in walked and not any(p.startswith(("/usr/", "/proc/", "/etc/")) for p in walked)
    assert fs.walk("/usr/bin")[1:]  # asked for, a system folder is walked
    dump = fs.dump()
    other = runtime.create_sandbox()
    try:
        restored = HostFileSystem(lambda: other)
        restored.load_dump(dump)
        assert other.run("cat /workspace/keep.txt; stat -c %a /workspace/dir").stdout == b"kept750\n"
    finally:
        other.destroy()


def test_files_written_through_the_api_are_charged_as_the_sandboxs_own(
    sandbox: LinuxSandbox, fs: HostFileSystem
) -> None:
    def free() -> int:
        blocks, size = sandbox.run("sync; stat -f -c '%f %S' /").stdout.split()
        return int(blocks) * int(size)

    sandbox.run("head -c 4096 /dev/zero > /workspace/own.bin")
    before = free()
    fs.write("/workspace/api.bin", b"\1" * (4 << 20))
    assert before - free() >= 4 << 20  # on the sandbox's own file system, as its processes' files are
    owners = sandbox.run("stat -c '%u %g %d' /workspace/own.bin /workspace/api.bin").stdout.decode().splitlines()
    assert owners[0] == owners[1] and owners[0].startswith("0 0 "), owners  # its root's, on the same device
    fs.remove("/workspace/api.bin")
