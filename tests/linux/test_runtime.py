"""Runtime lifecycle: sandboxes come and go without leftovers, parallel runtimes never collide, a crashed
runtime's namespaces, cgroups and lock files are removed by the next one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from mockserver.linux import LinuxRuntime, RuntimeUnavailable
from mockserver.linux.netns import NETNS_DIR, create_netns
from mockserver.linux.runtime import LOCK_DIR, remove_stale, sweep_mutex

from .conftest import needs_runtime

pytestmark = needs_runtime


def _netns(runtime_id: str) -> set[str]:
    return {n for n in os.listdir(NETNS_DIR) if n.startswith(f"sandproof-{runtime_id}-")}


def _cgroup_dirs(runtime: LinuxRuntime) -> list[Path]:
    return [h.runtime_dir(runtime.id) for h in runtime.cgroups.hierarchies()]


def _eventually_gone(path: Path, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not path.exists()


def test_a_destroyed_sandbox_leaves_nothing(runtime: LinuxRuntime) -> None:
    sb = runtime.create_sandbox("cleanup-check", hostname="box-one")
    assert sb.run("hostname; grep box-one /etc/hosts").stdout == b"box-one\n127.0.1.1\tbox-one\n"
    base, netns = sb.layout.base, sb.netns_name
    cgroups = [d for d in (sb.cgroup.dirs.values() if sb.cgroup else [])]
    assert netns in _netns(runtime.id) and base.exists()
    root_mounted = str(sb.layout.root) in _mount_points("self")
    sb.destroy()
    assert root_mounted and str(sb.layout.root) not in _mount_points("self")
    assert netns not in _netns(runtime.id)
    assert not base.exists()  # renamed away at once, deleted in the background
    assert all(not d.exists() for d in cgroups)
    assert _eventually_gone(runtime.state_dir / ".trash" / f"cleanup-check-{sb.index}")
    with pytest.raises(KeyError):
        runtime.sandbox("cleanup-check")


def _mount_points(pid: int | str) -> list[str]:
    with open(f"/proc/{pid}/mountinfo") as handle:
        return [line.split()[4] for line in handle]


def test_the_launchers_mount_table_stays_the_same_as_sandboxes_accumulate(runtime: LinuxRuntime) -> None:
    """bubblewrap copies its parent's mount table at every start: the launcher's must not grow per sandbox."""
    assert runtime.launcher is not None
    if not runtime.launcher.private_mounts:
        pytest.skip("the kernel has no open_tree (Linux < 5.2): the launcher shares the host's mounts")
    launcher_before, host_before = len(_mount_points(runtime.launcher.pid)), len(_mount_points("self"))
    held = [runtime.create_sandbox(disk_bytes=(8 + n) << 20) for n in range(3)]
    try:
        assert len(_mount_points("self")) >= host_before + 3  # each root is a tmpfs of its own on the host
        assert len(_mount_points(runtime.launcher.pid)) == launcher_before
        for n, sb in enumerate(held):  # and each sandbox runs on that very tmpfs, not the folder under it
            (sb.layout.root / "workspace" / "from-host").write_text(f"host {n}\n")
            out = sb.run("cat /workspace/from-host; df -B1 --output=size / | tail -1").stdout.split()
            assert out == [b"host", str(n).encode(), str((8 + n) << 20).encode()]
    finally:
        for sb in held:
            sb.destroy()


def test_a_state_folder_the_sandbox_user_cannot_reach_is_refused(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o700)
    with pytest.raises(RuntimeUnavailable, match="not searchable"):
        LinuxRuntime(tmp_path / "state")


def test_sandbox_ids_are_checked(runtime: LinuxRuntime) -> None:
    sb = runtime.create_sandbox("dup-id")
    try:
        with pytest.raises(ValueError, match="in use"):
            runtime.create_sandbox("dup-id")
        with pytest.raises(ValueError):
            runtime.create_sandbox("../escape")
    finally:
        sb.destroy()


def test_two_runtimes_side_by_side_then_closed_leave_nothing() -> None:
    given = Path(tempfile.mkdtemp(prefix="sandproof-test-state-"))  # a folder of the caller's: it stays
    first = LinuxRuntime()
    second = LinuxRuntime(given)
    try:
        assert first.id != second.id and first.world is not None and second.world is not None
        assert first.world.name != second.world.name
        a, b = first.create_sandbox(), second.create_sandbox()
        assert a.run("echo a").stdout == b"a\n" and b.run("echo b").stdout == b"b\n"
        launcher_pid = second.launcher.pid if second.launcher else 0
    finally:
        first.close()
        second.close()
    for rt in (first, second):
        assert _netns(rt.id) == set()
        assert not (LOCK_DIR / f"{rt.id}.lock").exists()
        assert all(not d.exists() for d in _cgroup_dirs(rt))
    assert not first.state_dir.exists()
    assert given.exists() and not any(given.glob("sbx-*"))
    shutil.rmtree(given)
    assert not Path(f"/proc/{launcher_pid}").exists()


CRASH = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from mockserver.linux import LinuxRuntime
    rt = LinuxRuntime()
    sb = rt.create_sandbox()
    sb.start_process("sleep 300")
    print(rt.id, sb.init_pid, flush=True)
    sys.stdin.read()  # until it is killed
    """
)


class _Crashed:
    """A runtime with a sandbox running in a child process, SIGKILLed while the sweep mutex is held."""

    def __enter__(self) -> str:
        root = str(Path(__file__).resolve().parents[2])
        self.child = subprocess.Popen(
            [sys.executable, "-c", CRASH, root], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.child.stdout is not None
        dead_id, init_pid = self.child.stdout.readline().split()
        self.mutex = sweep_mutex()  # no runtime starting elsewhere sweeps before the leftovers are seen
        self.mutex.__enter__()
        self.child.kill()
        assert self.child.wait(timeout=30) == -9
        deadline = time.monotonic() + 10
        while Path(f"/proc/{init_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not Path(f"/proc/{init_pid}").exists()  # the sandbox died with its runtime
        assert _netns(dead_id), "a crash leaves the namespace names behind"
        assert (LOCK_DIR / f"{dead_id}.lock").exists()
        return dead_id

    def __exit__(self, *exc: object) -> None:
        self.mutex.__exit__(None, None, None)
        self.child.kill()
        self.child.wait(timeout=30)


def test_a_crashed_runtime_is_cleaned_up_by_the_next() -> None:
    with _Crashed() as dead_id:
        pass
    fresh = LinuxRuntime()  # the next runtime to start (here or in a parallel test process) sweeps them
    try:
        assert _netns(dead_id) == set()
        assert not (LOCK_DIR / f"{dead_id}.lock").exists()
        assert all(not h.runtime_dir(dead_id).exists() for h in fresh.cgroups.hierarchies())
    finally:
        fresh.close()


def test_the_sweep_reports_what_it_removed() -> None:
    with _Crashed() as dead_id:
        removed = remove_stale()
    assert any(dead_id in item for item in removed), removed
    assert _netns(dead_id) == set() and not (LOCK_DIR / f"{dead_id}.lock").exists()


def test_stale_names_of_live_runtimes_are_kept(runtime: LinuxRuntime) -> None:
    fake = "sandproof-zzzz9-0"
    with sweep_mutex():  # a runtime starting elsewhere would sweep the fake first
        fd = create_netns(fake)
        os.close(fd)
        removed = remove_stale()
    assert f"netns {fake}" in removed  # no lock file at all: stale
    assert runtime.world is not None and (NETNS_DIR / runtime.world.name).exists()  # alive: kept
