"""Tests for the in-memory sandbox filesystem."""

from __future__ import annotations

import json
import posixpath
import threading
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockserver.sandbox import FileSystem, FsError, FsErrorCode, normpath
from mockserver.sandbox.filesystem import STRERROR


class Clock:
    """Advance one second per reading."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.value = start

    def __call__(self) -> float:
        self.value += 1.0
        return self.value


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fs(clock: Clock) -> FileSystem:
    return FileSystem(now=clock)


def code_of(excinfo: pytest.ExceptionInfo[FsError]) -> str:
    return excinfo.value.code


# -- paths -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/", "/"),
        ("//", "/"),
        ("/a//b/", "/a/b"),
        ("/a/./b/.", "/a/b"),
        ("/a/b/../c", "/a/c"),
        ("/..", "/"),
        ("/../../x", "/x"),
        ("/a/b/../../..", "/"),
    ],
)
def test_normpath_canonicalises(raw: str, expected: str) -> None:
    assert normpath(raw) == expected


def test_normpath_relative_needs_cwd() -> None:
    assert normpath("x/../y", "/home/user") == "/home/user/y"
    assert normpath("..", "/home/user") == "/home"
    with pytest.raises(FsError) as excinfo:
        normpath("relative")
    assert code_of(excinfo) == "invalid_path"


@pytest.mark.parametrize("bad", ["", "/a\x00b"])
def test_normpath_rejects_invalid(bad: str) -> None:
    with pytest.raises(FsError) as excinfo:
        normpath(bad, "/")
    assert code_of(excinfo) == "invalid_path"


@pytest.mark.parametrize(
    "bad",
    ["/tmp/" + "a/" * 2046 + "b", "/tmp/" + "a" * 256, "/tmp/" + "\u00e9" * 128, "/" + "a" * 4095],
    ids=["4096 bytes", "a 256-byte name", "a 256-byte name of 128 letters", "4096 bytes, one name"],
)
def test_normpath_refuses_what_the_kernel_calls_too_long(bad: str) -> None:
    with pytest.raises(FsError) as excinfo:
        normpath(bad)
    assert code_of(excinfo) == "name_too_long"


def test_normpath_keeps_the_longest_path_the_kernel_takes() -> None:
    longest = "/tmp/" + "a/" * 2044 + "bc"  # 4095 bytes: PATH_MAX counts the final NUL
    assert len(longest) == 4095 and normpath(longest) == longest
    assert normpath("/tmp/" + "a" * 255) == "/tmp/" + "a" * 255


def test_a_tree_deeper_than_the_recursion_limit_is_made_walked_dumped_and_loaded(fs: FileSystem) -> None:
    deep = "/tmp/" + "d/" * 2040 + "f.txt"
    fs.write(deep, b"x", parents=True)
    fs.move("/tmp/d", "/home/user/d")  # moved under a longer prefix: paths past PATH_MAX exist, as on Linux
    assert len(fs.walk("/home/user/d")) == 2041
    copy = FileSystem.load(fs.dump())
    assert copy.walk("/") == fs.walk("/")
    copy.remove("/home/user/d", recursive=True)
    assert copy.used == fs.used - 1


_segment = st.sampled_from(["", ".", "..", "a", "b", "c.txt", "..."])
_paths = st.lists(_segment, max_size=8).map(lambda segs: "/" + "/".join(segs))


@given(_paths)
def test_normpath_matches_posix_reference(path: str) -> None:
    result = normpath(path)
    assert result == posixpath.normpath("/" + path.lstrip("/"))
    assert normpath(result) == result
    assert result == "/" or not result.endswith("/")
    assert "//" not in result
    assert all(seg not in (".", "..") for seg in result.split("/"))


@given(_paths, _paths)
def test_normpath_relative_join_is_lexical(base: str, rel: str) -> None:
    assert normpath(rel.lstrip("/") or ".", base) == normpath(base + "/" + rel)


# -- basics ------------------------------------------------------------------------------------------


def test_starts_with_basic_layout(fs: FileSystem) -> None:
    for path in ("/", "/tmp", "/home/user", "/workspace", "/etc"):
        assert fs.is_dir(path)
    assert fs.stat("/tmp").mode == 0o1777
    assert fs.stat("/home/user").owner == "user"
    assert fs.stat("/etc/hosts").owner == "root"
    assert b"localhost" in fs.read("/etc/hosts")
    assert fs.read("/etc/hostname") == b"sandbox\n"


def test_empty_filesystem_has_only_root() -> None:
    fs = FileSystem(empty=True)
    assert fs.listdir("/") == []


def test_root_user_home() -> None:
    fs = FileSystem(user="root")
    assert fs.is_dir("/root") and not fs.exists("/home/root")


def test_strerror_covers_every_code() -> None:
    assert set(STRERROR) == set(get_args(FsErrorCode))
    assert FsError("not_found", "x").strerror == "No such file or directory"


# -- read / write ------------------------------------------------------------------------------------


def test_write_and_read_with_offset_and_limit(fs: FileSystem) -> None:
    info = fs.write("/tmp/f", b"hello world")
    assert info.size == 11 and info.mode == 0o644 and not info.is_dir and info.owner == "user"
    assert fs.read("/tmp/f") == b"hello world"
    assert fs.read("/tmp/f", offset=6) == b"world"
    assert fs.read("/tmp/f", offset=0, limit=5) == b"hello"
    assert fs.read("/tmp/f", offset=100) == b""
    with pytest.raises(ValueError):
        fs.read("/tmp/f", offset=-1)


def test_write_append_and_text(fs: FileSystem) -> None:
    fs.write("/tmp/f", "a")
    fs.write("/tmp/f", "b", append=True)
    fs.write("/tmp/g", b"x", append=True)
    assert fs.read("/tmp/f") == b"ab"
    assert fs.read("/tmp/g") == b"x"


def test_write_mode_applies_on_create_only(fs: FileSystem) -> None:
    fs.write("/tmp/f", b"1", mode=0o600)
    fs.write("/tmp/f", b"2", mode=0o777)
    assert fs.stat("/tmp/f").mode == 0o600


def test_write_requires_parent_unless_parents(fs: FileSystem) -> None:
    with pytest.raises(FsError) as excinfo:
        fs.write("/tmp/a/b/c", b"x")
    assert code_of(excinfo) == "not_found"
    fs.write("/tmp/a/b/c", b"x", parents=True)
    assert fs.is_dir("/tmp/a/b")


@pytest.mark.parametrize(
    ("path", "code"),
    [("/tmp", "is_a_directory"), ("/", "is_a_directory"), ("/etc/hosts/x", "not_a_directory")],
)
@pytest.mark.parametrize("parents", [False, True])
def test_write_errors(fs: FileSystem, path: str, code: str, parents: bool) -> None:
    with pytest.raises(FsError) as excinfo:
        fs.write(path, b"x", parents=parents)
    assert code_of(excinfo) == code


def test_read_errors(fs: FileSystem) -> None:
    for path, code in [("/tmp", "is_a_directory"), ("/nope", "not_found"), ("/etc/hosts/x", "not_a_directory")]:
        with pytest.raises(FsError) as excinfo:
            fs.read(path)
        assert code_of(excinfo) == code
    with pytest.raises(FsError) as excinfo:
        fs.read("tmp/x")
    assert code_of(excinfo) == "invalid_path"


def test_mtime_comes_from_injected_clock(fs: FileSystem, clock: Clock) -> None:
    before = clock.value
    fs.write("/tmp/f", b"x")
    created = fs.stat("/tmp/f").mtime
    assert created > before
    assert fs.stat("/tmp").mtime == pytest.approx(created)
    fs.write("/tmp/f", b"y")
    assert fs.stat("/tmp/f").mtime > created
    assert fs.stat("/tmp").mtime == pytest.approx(created)


# -- directories -------------------------------------------------------------------------------------


def test_stat_and_listdir(fs: FileSystem) -> None:
    fs.write("/workspace/b.txt", b"bb")
    fs.mkdir("/workspace/a")
    names = [(i.name, i.is_dir, i.size) for i in fs.listdir("/workspace")]
    assert names == [("a", True, 4096), ("b.txt", False, 2)]
    info = fs.stat("/workspace/b.txt")
    assert (info.path, info.group) == ("/workspace/b.txt", "user")
    assert fs.stat("/").name == "/"
    with pytest.raises(FsError) as excinfo:
        fs.listdir("/workspace/b.txt")
    assert code_of(excinfo) == "not_a_directory"
    with pytest.raises(FsError) as excinfo:
        fs.stat("/workspace/missing")
    assert code_of(excinfo) == "not_found"


def test_mkdir_semantics(fs: FileSystem) -> None:
    fs.mkdir("/a/b/c")
    assert fs.is_dir("/a/b/c") and fs.stat("/a/b/c").mode == 0o755
    fs.mkdir("/a/b/c")
    fs.mkdir("/")
    fs.mkdir("/a/d", mode=0o700, parents=False)
    assert fs.stat("/a/d").mode == 0o700
    fs.write("/a/file", b"")
    cases: list[tuple[str, bool, str]] = [
        ("/a/d", False, "exists"),
        ("/", False, "exists"),
        ("/a/file", True, "exists"),
        ("/x/y", False, "not_found"),
        ("/a/file/sub", True, "not_a_directory"),
    ]
    for path, parents, code in cases:
        with pytest.raises(FsError) as excinfo:
            fs.mkdir(path, parents=parents)
        assert code_of(excinfo) == code, path


def test_remove_semantics(fs: FileSystem) -> None:
    fs.write("/tmp/d/f", b"x", parents=True)
    fs.mkdir("/tmp/empty")
    with pytest.raises(FsError) as excinfo:
        fs.remove("/tmp/d")
    assert code_of(excinfo) == "not_empty"
    fs.remove("/tmp/empty")
    fs.remove("/tmp/d/f")
    fs.write("/tmp/d/f", b"x")
    fs.remove("/tmp/d", recursive=True)
    assert not fs.exists("/tmp/d") and not fs.exists("/tmp/empty")
    for path, code in [("/tmp/d", "not_found"), ("/", "invalid_path")]:
        with pytest.raises(FsError) as excinfo:
            fs.remove(path, recursive=True)
        assert code_of(excinfo) == code


def test_move_semantics(fs: FileSystem) -> None:
    fs.write("/tmp/a", b"A")
    fs.write("/tmp/b", b"B")
    fs.move("/tmp/a", "/tmp/b")
    assert fs.read("/tmp/b") == b"A" and not fs.exists("/tmp/a")
    fs.write("/tmp/d/x", b"x", parents=True)
    fs.mkdir("/tmp/empty")
    fs.move("/tmp/d", "/tmp/empty")
    assert fs.read("/tmp/empty/x") == b"x" and not fs.exists("/tmp/d")
    fs.move("/tmp/b", "/tmp/b")
    fs.mkdir("/tmp/full/inner")
    cases = [
        ("/tmp/b", "/tmp/full", "is_a_directory"),
        ("/tmp/empty", "/tmp/b", "not_a_directory"),
        ("/tmp/empty", "/tmp/full", "not_empty"),
        ("/tmp/empty", "/tmp/empty/sub", "invalid_path"),
        ("/tmp/missing", "/tmp/z", "not_found"),
        ("/tmp/b", "/tmp/nodir/z", "not_found"),
    ]
    for src, dst, code in cases:
        with pytest.raises(FsError) as excinfo:
            fs.move(src, dst)
        assert code_of(excinfo) == code, (src, dst)


def test_chmod_chown_exists(fs: FileSystem) -> None:
    fs.write("/tmp/f", b"")
    assert fs.chmod("/tmp/f", 0o100755).mode == 0o755
    assert fs.chown("/tmp/f", "root").owner == "root"
    assert fs.stat("/tmp/f").group == "user"
    assert fs.exists("/tmp/f") and not fs.exists("/tmp/f/x") and not fs.exists("/nope")
    assert fs.is_file("/tmp/f") and not fs.is_dir("/tmp/f")
    with pytest.raises(FsError):
        fs.exists("relative")
    with pytest.raises(FsError) as excinfo:
        fs.chmod("/nope", 0o600)
    assert code_of(excinfo) == "not_found"


def test_search_and_walk(fs: FileSystem) -> None:
    fs.write("/workspace/src/main.py", b"", parents=True)
    fs.write("/workspace/src/lib/util.py", b"", parents=True)
    fs.write("/workspace/README.md", b"")
    fs.write("/workspace/Upper.PY", b"")
    found = [i.path for i in fs.search("/workspace", "*.py")]
    assert found == ["/workspace/src/lib/util.py", "/workspace/src/main.py"]
    assert [i.path for i in fs.search("/workspace", "src")] == ["/workspace/src"]
    assert fs.search("/workspace/src", "src") == []
    walked = [i.path for i in fs.walk("/workspace/src")]
    assert walked == ["/workspace/src", "/workspace/src/lib", "/workspace/src/lib/util.py", "/workspace/src/main.py"]


def test_replace(fs: FileSystem, clock: Clock) -> None:
    fs.write("/tmp/f", b"a-a-a")
    stamp = fs.stat("/tmp/f").mtime
    assert fs.replace("/tmp/f", "a", "bb") == 3
    assert fs.read("/tmp/f") == b"bb-bb-bb"
    changed = fs.stat("/tmp/f").mtime
    assert changed > stamp
    assert fs.replace("/tmp/f", b"zz", b"y") == 0
    assert fs.stat("/tmp/f").mtime == changed
    with pytest.raises(ValueError):
        fs.replace("/tmp/f", "", "x")
    with pytest.raises(FsError) as excinfo:
        fs.replace("/tmp", "a", "b")
    assert code_of(excinfo) == "is_a_directory"


def test_concurrent_appends_are_atomic(fs: FileSystem) -> None:
    def worker() -> None:
        for _ in range(200):
            fs.write("/tmp/log", b"x", append=True)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fs.stat("/tmp/log").size == 1600


# -- snapshots ---------------------------------------------------------------------------------------


def test_dump_load_round_trip(fs: FileSystem) -> None:
    fs.write("/workspace/bin.dat", bytes(range(256)), mode=0o600)
    fs.mkdir("/workspace/dir", mode=0o700)
    fs.chown("/workspace/dir", "root", "staff")
    snapshot = json.loads(json.dumps(fs.dump()))
    restored = FileSystem.load(snapshot)
    assert restored.dump() == fs.dump()
    assert restored.read("/workspace/bin.dat") == bytes(range(256))
    info = restored.stat("/workspace/dir")
    assert (info.mode, info.owner, info.group) == (0o700, "root", "staff")
    assert restored.user == "user"


@pytest.mark.parametrize(
    "snapshot",
    [
        {"version": 99, "entries": []},
        {"version": 1},
        {"version": 1, "entries": [{"path": "/x", "type": "file"}]},
        {"version": 1, "entries": [{"path": "/a/b", "type": "dir", "mode": 1, "mtime": 0, "owner": "u", "group": "g"}]},
        {"version": 1, "entries": [{"path": "/x", "type": "link", "mode": 1, "mtime": 0, "owner": "u", "group": "g"}]},
    ],
)
def test_load_rejects_malformed(snapshot: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        FileSystem.load(snapshot)


_names = st.sampled_from(["a", "b", "c", "d.txt"])
_ops = st.lists(
    st.tuples(
        st.sampled_from(["write", "append", "mkdir", "chmod", "remove", "move"]),
        st.lists(_names, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p)),
        st.lists(_names, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p)),
        st.binary(max_size=16),
        st.integers(0, 0o7777),
    ),
    max_size=25,
)


@given(_ops)
def test_dump_load_property(ops: list[tuple[str, str, str, bytes, int]]) -> None:
    fs = FileSystem(now=Clock(), empty=True)
    for op, path, other, data, mode in ops:
        try:
            if op in ("write", "append"):
                fs.write(path, data, mode=mode, append=op == "append")
            elif op == "mkdir":
                fs.mkdir(path, mode=mode)
            elif op == "chmod":
                fs.chmod(path, mode)
            elif op == "remove":
                fs.remove(path, recursive=True)
            else:
                fs.move(path, other)
        except FsError:
            pass
    snapshot = fs.dump()
    restored = FileSystem.load(json.loads(json.dumps(snapshot)))
    assert restored.dump() == snapshot
    for info in fs.walk("/"):
        assert restored.stat(info.path) == info
        if not info.is_dir:
            assert restored.read(info.path) == fs.read(info.path)


def test_the_quota_bounds_content_and_a_refused_write_changes_nothing(clock: Clock) -> None:
    fs = FileSystem(now=clock, quota=100, empty=True)
    fs.write("/a", b"x" * 60)
    with pytest.raises(FsError) as info:
        fs.write("/b", b"y" * 41)
    assert info.value.code == "no_space" and info.value.strerror == "No space left on device"
    assert not fs.exists("/b") and fs.used == 60
    with pytest.raises(FsError):
        fs.write("/a", b"z" * 41, append=True)
    assert fs.read("/a") == b"x" * 60
    fs.write("/a", b"w" * 100)  # overwriting counts the difference only
    assert fs.used == 100
    with pytest.raises(FsError):
        fs.replace("/a", b"w", b"ww")
    fs.replace("/a", b"ww", b"v")
    assert fs.used == 50


def test_removing_and_replacing_files_gives_the_space_back(clock: Clock) -> None:
    fs = FileSystem(now=clock, quota=100, empty=True)
    fs.write("/d/a", b"1" * 40, parents=True)
    fs.write("/d/b", b"2" * 40)
    fs.remove("/d", recursive=True)
    assert fs.used == 0
    fs.write("/x", b"3" * 70)
    fs.write("/y", b"4" * 20)
    fs.move("/y", "/x")
    assert fs.used == 20 and fs.read("/x") == b"4" * 20


def test_a_loaded_snapshot_counts_its_content(clock: Clock) -> None:
    fs = FileSystem(now=clock, quota=None)
    fs.write("/tmp/big", b"b" * 5000)
    loaded = FileSystem.load(fs.dump(), now=clock, quota=4096)
    assert loaded.used == fs.used >= 5000 and loaded.read("/tmp/big") == b"b" * 5000
    with pytest.raises(FsError, match="no space"):
        loaded.write("/tmp/more", b"m")


def test_a_new_sandbox_has_the_usual_top_level_tree_and_keeps_it_through_a_dump() -> None:
    from mockserver.sandbox import CommandEmulator
    from mockserver.sandbox.filesystem import SYSTEM_DIRS

    fs = FileSystem(user="root")
    assert {"/usr/bin", "/var/log", "/opt", "/srv", "/mnt"} <= set(SYSTEM_DIRS)
    assert all(fs.is_dir(path) for path in SYSTEM_DIRS)
    assert fs.listdir("/srv") == [] and fs.listdir("/usr/bin") == []  # empty: the programs are built in
    top = CommandEmulator(fs).run_to_completion("ls /").stdout.decode().split()
    assert top == sorted(
        ["bin", "etc", "home", "lib", "mnt", "opt", "root", "run", "sbin", "srv", "tmp", "usr", "var", "workspace"]
    )
    moved = CommandEmulator(fs).run_to_completion("cd /var/log && pwd && cd /opt && pwd")
    assert (moved.exit_code, moved.stdout) == (0, b"/var/log\n/opt\n")
    loaded = FileSystem.load(fs.dump())
    assert all(loaded.is_dir(path) for path in SYSTEM_DIRS)
    assert loaded.stat("/var/tmp").mode & 0o7777 == 0o1777
