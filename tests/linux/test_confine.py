"""Path confinement of the files API, on a fake mount table in temporary directories (no root needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mockserver.linux.confine import Confinement, Mount, PathError


@pytest.fixture
def table(tmp_path: Path) -> tuple[Confinement, Path, Path, Path]:
    """A sandbox root, a read-only "system" /etc, a hidden /proc and the host's own secret outside all."""
    root, system, outside = tmp_path / "root", tmp_path / "system-etc", tmp_path / "host-secret"
    for directory in (root / "tmp", root / "work", root / "proc", system, outside):
        directory.mkdir(parents=True)
    (system / "passwd").write_text("root:x:0:0\n")
    (system / "shadow").write_text("root:secret\n")
    os.chmod(system / "passwd", 0o644)
    os.chmod(system / "shadow", 0o640)
    (outside / "key").write_text("host secret\n")
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n")
    mounts = [
        Mount("/", root, writable=True),
        Mount("/etc", system, writable=False, system=True),
        Mount("/etc/hosts", tmp_path / "hosts", writable=False, is_file=True),
        Mount("/proc", root / "proc", writable=False, visible=False),
    ]
    return Confinement(mounts), root, system, outside


def test_plain_paths_map_to_their_mounts(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, system, _ = table
    assert files.host_path("/tmp/a.txt", write=True) == root / "tmp" / "a.txt"
    assert files.host_path("/etc/passwd") == system / "passwd"
    assert files.host_path("/etc/hosts") == system.parent / "hosts"
    assert files.host_path("x", cwd="/work") == root / "work" / "x"
    fd = files.open("/etc/hosts")
    assert os.read(fd, 100) == b"127.0.0.1 localhost\n"
    os.close(fd)


@pytest.mark.parametrize("path", ["/../../../etc/passwd", "/tmp/../../../../etc/passwd", "../../etc/passwd"])
def test_dotdot_is_clamped_at_the_sandbox_root(table: tuple[Confinement, Path, Path, Path], path: str) -> None:
    files, _, system, _ = table
    assert files.resolve(path, cwd="/tmp").host == system / "passwd"


def test_absolute_symlink_is_followed_inside_the_sandbox(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, outside = table
    (root / "tmp" / "escape").symlink_to(outside / "key")  # a host path, taken as a sandbox path
    resolved = files.resolve("/tmp/escape")
    assert resolved.guest == str(outside / "key")
    assert resolved.host == root / str(outside / "key").lstrip("/")
    assert not str(resolved.host).startswith(str(outside))


def test_relative_symlink_climbing_out_is_clamped(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, _ = table
    (root / "tmp" / "up").symlink_to("../../../../../..")
    assert files.resolve("/tmp/up/work").host == root / "work"


def test_symlink_into_a_system_mount_is_checked_there(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, system, _ = table
    (root / "tmp" / "pw").symlink_to("/etc/passwd")
    (root / "tmp" / "sh").symlink_to("/etc/shadow")
    assert files.host_path("/tmp/pw") == system / "passwd"
    with pytest.raises(PathError) as caught:
        files.host_path("/tmp/sh")
    assert caught.value.code == "permission_denied"


def test_writes_outside_writable_mounts_are_refused(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, _, _, _ = table
    for path in ("/etc/new", "/etc/hosts", "/tmp/../etc/passwd"):
        with pytest.raises(PathError) as caught:
            files.host_path(path, write=True)
        assert caught.value.code == "read_only"


def test_hidden_mounts_are_not_reachable(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, _ = table
    (root / "tmp" / "p").symlink_to("/proc/1/root")
    for path in ("/proc/1/environ", "/tmp/p/etc"):
        with pytest.raises(PathError) as caught:
            files.host_path(path)
        assert caught.value.code == "not_visible"


def test_symlink_loops_are_refused(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, _ = table
    (root / "tmp" / "a").symlink_to("/tmp/b")
    (root / "tmp" / "b").symlink_to("/tmp/a")
    with pytest.raises(PathError) as caught:
        files.resolve("/tmp/a")
    assert caught.value.code == "symlink_loop"


@pytest.mark.parametrize("bad", ["", "a\x00b"])
def test_invalid_paths(table: tuple[Confinement, Path, Path, Path], bad: str) -> None:
    with pytest.raises(PathError) as caught:
        table[0].resolve(bad)
    assert caught.value.code == "invalid_path"


def _stale(files: Confinement, path: str) -> None:
    """Make ``files`` answer every resolution with the one of ``path`` now (a check whose use comes later)."""
    resolved = files.resolve(path)
    files.resolve = lambda *_a, **_k: resolved  # type: ignore[method-assign]


def test_open_is_race_free_against_a_swapped_in_symlink(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, outside = table
    (root / "tmp" / "dir").mkdir()
    (root / "tmp" / "dir" / "f").write_text("inside")
    fd = files.open("/tmp/dir/f")
    assert os.read(fd, 100) == b"inside"
    os.close(fd)
    _stale(files, "/tmp/dir/f")
    (root / "tmp" / "dir" / "f").unlink()
    (root / "tmp" / "dir").rmdir()
    (root / "tmp" / "dir").symlink_to(outside)  # swapped after the resolution, as a racing sandbox would
    (outside / "f").write_text("host file")
    with pytest.raises(FileNotFoundError):  # the link is resolved with the sandbox root as "/"
        files.open("/tmp/dir/f")
    with pytest.raises(FileNotFoundError):
        files.open("/tmp/dir/f", os.O_WRONLY | os.O_TRUNC)
    assert (outside / "f").read_text() == "host file"


def test_open_never_follows_a_final_symlink_swapped_in_onto_the_host(
    table: tuple[Confinement, Path, Path, Path],
) -> None:
    files, root, _, outside = table
    (root / "tmp" / "f").write_text("x")
    _stale(files, "/tmp/f")
    (root / "tmp" / "f").unlink()
    (root / "tmp" / "f").symlink_to(outside / "key")
    with pytest.raises(FileNotFoundError):
        files.open("/tmp/f")
    (root / str(outside).lstrip("/")).mkdir(parents=True)
    fd = files.open("/tmp/f", os.O_WRONLY | os.O_CREAT, 0o600)  # created at the link's target inside the root
    os.close(fd)
    assert (root / str(outside / "key").lstrip("/")).is_file()
    assert (outside / "key").read_text() == "host secret\n"
    with pytest.raises(PathError) as caught:
        files.open("/tmp/f", follow=False)
    assert caught.value.code == "symlink_loop"


def test_magic_links_are_refused(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, _ = table
    (root / "tmp" / "self").symlink_to("/proc/self/root")
    _stale(files, "/tmp/x")
    (root / "tmp" / "x").symlink_to("/proc/self/root")  # in the root's own tree, not the hidden /proc mount
    with pytest.raises(FileNotFoundError):
        files.open("/tmp/x")


def test_overlong_paths_are_invalid(table: tuple[Confinement, Path, Path, Path]) -> None:
    with pytest.raises(PathError) as caught:
        table[0].resolve("/a" * 3000)
    assert caught.value.code == "invalid_path"


def test_make_dirs_creates_inside_and_never_through_a_symlink(table: tuple[Confinement, Path, Path, Path]) -> None:
    files, root, _, outside = table
    files.make_dirs("/work/a/b/c")
    assert (root / "work" / "a" / "b" / "c").is_dir()
    (root / "tmp" / "link").symlink_to(outside)
    files.make_dirs("/tmp/link/sub")  # resolved inside the sandbox: /<outside>/sub under the root
    assert not (outside / "sub").exists()
    assert (root / str(outside).lstrip("/") / "sub").is_dir()
