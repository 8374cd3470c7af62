"""In-memory POSIX-ish filesystem holding the state of one mock sandbox."""

from __future__ import annotations

import base64
import fnmatch
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mockserver.core.dns import SANDBOX_RESOLVER

FsErrorCode = Literal[
    "not_found",
    "is_a_directory",
    "not_a_directory",
    "exists",
    "not_empty",
    "invalid_path",
    "no_space",
    "permission_denied",
    "read_only",
    "name_too_long",
    "not_regular",
]

STRERROR: dict[str, str] = {
    "not_found": "No such file or directory",
    "is_a_directory": "Is a directory",
    "not_a_directory": "Not a directory",
    "exists": "File exists",
    "not_empty": "Directory not empty",
    "invalid_path": "Invalid argument",
    "no_space": "No space left on device",
    "permission_denied": "Permission denied",
    "read_only": "Read-only file system",
    "name_too_long": "File name too long",
    "not_regular": "Not a regular file",
}

DIR_SIZE = 4096
DUMP_VERSION = 1
#: Bytes of file content one emulated sandbox may hold (it lives in the mock's memory); ENOSPC beyond.
DEFAULT_QUOTA = 16 * 1024 * 1024
#: Linux's bounds on a path a system call takes: PATH_MAX bytes including the final NUL, NAME_MAX per name.
PATH_MAX = 4096
NAME_MAX = 255


class FsError(Exception):
    """Signal a failed filesystem operation; `.code` is machine-readable, `.message` human-readable."""

    def __init__(self, code: FsErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: FsErrorCode = code
        self.message = message

    @property
    def strerror(self) -> str:
        """Return the libc-style description of the error code."""
        return STRERROR[self.code]


@dataclass(frozen=True)
class FileInfo:
    """Describe one file or directory; `mode` holds permission bits only (no file-type bits)."""

    path: str
    size: int
    mode: int
    is_dir: bool
    mtime: float
    owner: str
    group: str

    @property
    def name(self) -> str:
        """Return the last path component ("/" for the root)."""
        return self.path.rsplit("/", 1)[-1] or "/"


@dataclass
class _File:
    mode: int
    mtime: float
    owner: str
    group: str
    data: bytes = b""


@dataclass
class _Dir:
    mode: int
    mtime: float
    owner: str
    group: str
    children: dict[str, _File | _Dir] = field(default_factory=dict)


_Node = _File | _Dir


#: Bytes per piece when a file is streamed (:meth:`FileStream.chunks`).
CHUNK = 256 * 1024


class FileStream:
    """An open regular file read piece by piece: its ``size`` when opened and ``read_at(offset, n)``.

    Large files are served through one of these (never read whole into memory). ``close`` releases it;
    it is also a context manager.
    """

    def __init__(
        self, size: int, read_at: Callable[[int, int], bytes], close: Callable[[], None] = lambda: None
    ) -> None:
        self.size = size
        self.read_at = read_at
        self._close = close
        self.closed = False

    def chunks(self, start: int = 0, length: int | None = None, chunk: int = CHUNK) -> Iterator[bytes]:
        """Yield the bytes from ``start`` (``length`` of them, default to the size at open) in pieces."""
        end = self.size if length is None else min(self.size, start + length)
        offset = start
        while offset < end:
            piece = self.read_at(offset, min(chunk, end - offset))
            if not piece:
                return  # the file shrank since it was opened
            offset += len(piece)
            yield piece

    def close(self) -> None:
        """Release the file; idempotent."""
        if not self.closed:
            self.closed = True
            self._close()

    def __enter__(self) -> FileStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def normpath(path: str, cwd: str | None = None) -> str:
    """Return the canonical absolute form of `path`, resolving it against `cwd` when relative.

    ``invalid_path`` (EINVAL) for an empty path or a NUL byte; ``name_too_long`` (ENAMETOOLONG) for a path of
    :data:`PATH_MAX` bytes or more, or a name longer than :data:`NAME_MAX` bytes, as the kernel refuses them
    (a relative path is measured once joined to `cwd`: the emulator keeps absolute paths).
    """
    if path == "" or "\x00" in path:
        raise FsError("invalid_path", f"invalid path: {path!r}")
    if not path.startswith("/"):
        if cwd is None:
            raise FsError("invalid_path", f"path must be absolute: {path!r}")
        path = normpath(cwd) + "/" + path
    if len(path) >= PATH_MAX // 4 and _size(path) >= PATH_MAX:
        raise FsError("name_too_long", f"file name too long: {path[:64]}... ({_size(path)} bytes)")
    return _normalize(path)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _normalize(path: str) -> str:
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts:
                parts.pop()
            continue
        if len(seg) > NAME_MAX // 4 and _size(seg) > NAME_MAX:
            raise FsError("name_too_long", f"file name too long: {seg[:64]}... ({_size(seg)} bytes)")
        parts.append(seg)
    return "/" + "/".join(parts)


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.rpartition("/")
    return parent or "/", name


def _join(parent: str, name: str) -> str:
    return parent.rstrip("/") + "/" + name


def _as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def _content_size(node: _Node) -> int:
    total, todo = 0, [node]
    while todo:  # a loop, not recursion: a tree may be deeper than Python's recursion limit
        current = todo.pop()
        if isinstance(current, _File):
            total += len(current.data)
        else:
            todo.extend(current.children.values())
    return total


#: The usual top-level tree of a Linux image, empty where the emulator has nothing to put (its programs are
#: built in, not files); ``/dev``, ``/proc`` and ``/sys`` are the kernel's and are not there.
SYSTEM_DIRS = (
    "/bin",
    "/lib",
    "/mnt",
    "/opt",
    "/run",
    "/sbin",
    "/srv",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/tmp",
)


class FileSystem:
    """Hold a directory tree in memory; every public method is atomic under one lock.

    ``quota`` bounds the bytes of file content (the tree lives in the mock's memory): a write, append or
    replace that would exceed it fails with ``no_space`` (ENOSPC, "No space left on device") and changes
    nothing. None means no bound.

    ``revision`` counts the changes made to the tree (a durable store rewrites the tree only when it moved).

    ``blocking`` tells callers on an event loop whether the methods do real I/O (run them in a thread
    then); the in-memory tree never does.
    """

    blocking = False

    def __init__(
        self,
        *,
        now: Callable[[], float] = time.time,
        user: str = "user",
        hostname: str = "sandbox",
        empty: bool = False,
        quota: int | None = DEFAULT_QUOTA,
    ) -> None:
        if quota is not None and quota < 0:
            raise ValueError("quota must not be negative")
        self._now = now
        self._lock = threading.RLock()
        self.quota = quota
        self.used = 0
        self.user = user
        self.revision = 0
        self._root = _Dir(0o755, now(), "root", "root")
        if not empty:
            self._seed(hostname)

    def _seed(self, hostname: str) -> None:
        home = "/root" if self.user == "root" else f"/home/{self.user}"
        system = [(path, 0o1777 if path == "/var/tmp" else 0o755, "root") for path in SYSTEM_DIRS]
        for path, mode, owner in [
            *system,
            ("/tmp", 0o1777, "root"),
            ("/etc", 0o755, "root"),
            ("/home", 0o755, "root"),
            (home, 0o755, self.user),
            ("/workspace", 0o755, self.user),
        ]:
            self.mkdir(path, mode)
            self.chown(path, owner, owner)
        uid = 0 if self.user == "root" else 1000
        files = {
            "/etc/hostname": f"{hostname}\n",
            "/etc/hosts": f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t{hostname}\n",
            "/etc/resolv.conf": f"nameserver {SANDBOX_RESOLVER}\n",
            "/etc/passwd": "root:x:0:0:root:/root:/bin/bash\n"
            + ("" if uid == 0 else f"{self.user}:x:{uid}:{uid}::{home}:/bin/bash\n"),
        }
        for path, text in files.items():
            self.write(path, text)
            self.chown(path, "root", "root")

    # -- internal helpers (callers hold the lock) ---------------------------------------------------

    def _get(self, path: str) -> _Node:
        node: _Node = self._root
        walked = ""
        for seg in path.strip("/").split("/") if path != "/" else []:
            if not isinstance(node, _Dir):
                raise FsError("not_a_directory", f"not a directory: {walked}")
            child = node.children.get(seg)
            walked += "/" + seg
            if child is None:
                raise FsError("not_found", f"no such file or directory: {path}")
            node = child
        return node

    def _dir(self, path: str) -> _Dir:
        node = self._get(path)
        if not isinstance(node, _Dir):
            raise FsError("not_a_directory", f"not a directory: {path}")
        return node

    def _info(self, path: str, node: _Node) -> FileInfo:
        size = len(node.data) if isinstance(node, _File) else DIR_SIZE
        return FileInfo(path, size, node.mode, isinstance(node, _Dir), node.mtime, node.owner, node.group)

    def _reserve(self, path: str, delta: int) -> None:
        """Account for ``delta`` more bytes of content, or raise ``no_space`` without changing anything."""
        if delta > 0 and self.quota is not None and self.used + delta > self.quota:
            raise FsError("no_space", f"no space left on device: {path}")
        self.used += delta

    def _touch_dir(self, node: _Dir) -> None:
        node.mtime = self._now()

    # -- queries -----------------------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Return metadata for `path`."""
        path = normpath(path)
        with self._lock:
            return self._info(path, self._get(path))

    def exists(self, path: str) -> bool:
        """Return whether `path` names an existing file or directory (an ``invalid_path`` refusal is raised).

        ``exists``, ``is_dir`` and ``is_file`` are answered from :meth:`stat`, so a subclass over other storage
        inherits them.
        """
        try:
            self.stat(path)
        except FsError as exc:
            if exc.code == "invalid_path":
                raise
            return False
        return True

    def is_dir(self, path: str) -> bool:
        """Return whether `path` names an existing directory."""
        info = self._stat_or_none(path)
        return info is not None and info.is_dir

    def is_file(self, path: str) -> bool:
        """Return whether `path` names something that exists and is not a directory."""
        info = self._stat_or_none(path)
        return info is not None and not info.is_dir

    def _stat_or_none(self, path: str) -> FileInfo | None:
        """Return :meth:`stat` of `path`, None when it does not exist (an ``invalid_path`` refusal is raised)."""
        try:
            return self.stat(path)
        except FsError as exc:
            if exc.code == "invalid_path":
                raise
            return None

    def read(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        """Return up to `limit` bytes of the file at `path` starting at `offset`."""
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must be non-negative")
        path = normpath(path)
        with self._lock:
            node = self._get(path)
            if isinstance(node, _Dir):
                raise FsError("is_a_directory", f"is a directory: {path}")
            end = None if limit is None else offset + limit
            return node.data[offset:end]

    def open_stream(self, path: str) -> FileStream:
        """Return the regular file at ``path`` opened for reading in pieces (see :class:`FileStream`)."""
        data = self.read(path)
        return FileStream(len(data), lambda offset, n: data[offset : offset + n])

    def listdir(self, path: str) -> list[FileInfo]:
        """Return the entries of directory `path` sorted by name."""
        path = normpath(path)
        with self._lock:
            node = self._dir(path)
            return [self._info(_join(path, name), node.children[name]) for name in sorted(node.children)]

    def walk(self, root: str) -> list[FileInfo]:
        """Return `root` and everything below it in depth-first, name-sorted order."""
        root = normpath(root)
        with self._lock:
            return [self._info(path, node) for path, node in self._walk(root, self._get(root))]

    def _walk(self, path: str, node: _Node) -> Iterator[tuple[str, _Node]]:
        todo = [(path, node)]
        while todo:  # depth first, names in order; a loop, as a tree may be deeper than the recursion limit
            current, item = todo.pop()
            yield current, item
            if isinstance(item, _Dir):
                todo.extend((_join(current, name), item.children[name]) for name in sorted(item.children, reverse=True))

    def search(self, root: str, glob_pattern: str) -> list[FileInfo]:
        """Return entries below `root` whose basename matches `glob_pattern` (case-sensitive)."""
        return [info for info in self.walk(root)[1:] if fnmatch.fnmatchcase(info.name, glob_pattern)]

    # -- mutations ---------------------------------------------------------------------------------

    def write(
        self,
        path: str,
        data: bytes | bytearray | memoryview | str,
        *,
        mode: int = 0o644,
        append: bool = False,
        parents: bool = False,
    ) -> FileInfo:
        """Create or overwrite (or append to) a file; `mode` applies only when the file is created."""
        path = normpath(path)
        payload = _as_bytes(data)
        if path == "/":
            raise FsError("is_a_directory", "is a directory: /")
        parent_path, name = _split(path)
        with self._lock:
            self.revision += 1
            if parents:
                self._makedirs(parent_path, 0o755)
            parent = self._dir(parent_path)
            node = parent.children.get(name)
            if isinstance(node, _Dir):
                raise FsError("is_a_directory", f"is a directory: {path}")
            if node is None:
                self._reserve(path, len(payload))
                node = _File(mode & 0o7777, self._now(), self.user, self.user, payload)
                parent.children[name] = node
                self._touch_dir(parent)
            else:
                self._reserve(path, len(payload) if append else len(payload) - len(node.data))
                node.data = node.data + payload if append else payload
                node.mtime = self._now()
            return self._info(path, node)

    def mkdir(self, path: str, mode: int = 0o755, parents: bool = True) -> FileInfo:
        """Create directory `path` (and missing parents when `parents`); existing dirs are fine then."""
        path = normpath(path)
        with self._lock:
            self.revision += 1
            if path == "/":
                if not parents:
                    raise FsError("exists", "file exists: /")
                return self._info("/", self._root)
            parent_path, name = _split(path)
            if parents:
                self._makedirs(parent_path, mode)
            parent = self._dir(parent_path)
            node = parent.children.get(name)
            if node is not None:
                if parents and isinstance(node, _Dir):
                    return self._info(path, node)
                raise FsError("exists", f"file exists: {path}")
            node = _Dir(mode & 0o7777, self._now(), self.user, self.user)
            parent.children[name] = node
            self._touch_dir(parent)
            return self._info(path, node)

    def _makedirs(self, path: str, mode: int) -> None:
        """Create every missing directory of the normalised `path`, from the root down (a loop: any depth)."""
        node: _Dir = self._root
        walked = ""
        for name in path.strip("/").split("/") if path != "/" else []:
            walked += "/" + name
            child = node.children.get(name)
            if child is None:
                child = _Dir(mode & 0o7777, self._now(), self.user, self.user)
                node.children[name] = child
                self._touch_dir(node)
            elif not isinstance(child, _Dir):
                raise FsError("not_a_directory", f"not a directory: {walked}")
            node = child

    def remove(self, path: str, recursive: bool = False) -> None:
        """Delete a file or directory; non-empty directories need `recursive`."""
        path = normpath(path)
        if path == "/":
            raise FsError("invalid_path", "refusing to remove /")
        parent_path, name = _split(path)
        with self._lock:
            self.revision += 1
            node = self._get(path)
            if isinstance(node, _Dir) and node.children and not recursive:
                raise FsError("not_empty", f"directory not empty: {path}")
            parent = self._dir(parent_path)
            del parent.children[name]
            self.used -= _content_size(node)
            self._touch_dir(parent)

    def move(self, src: str, dst: str) -> FileInfo:
        """Rename `src` to `dst` with rename(2) semantics (replacing a file or an empty directory)."""
        src, dst = normpath(src), normpath(dst)
        with self._lock:
            self.revision += 1
            node = self._get(src)
            if src == dst:
                return self._info(dst, node)
            if src == "/" or dst.startswith(src.rstrip("/") + "/"):
                raise FsError("invalid_path", f"cannot move {src} into itself: {dst}")
            dst_parent_path, dst_name = _split(dst)
            dst_parent = self._dir(dst_parent_path)
            target = dst_parent.children.get(dst_name)
            if target is not None:
                if isinstance(target, _Dir) and not isinstance(node, _Dir):
                    raise FsError("is_a_directory", f"is a directory: {dst}")
                if isinstance(node, _Dir) and not isinstance(target, _Dir):
                    raise FsError("not_a_directory", f"not a directory: {dst}")
                if isinstance(target, _Dir) and target.children:
                    raise FsError("not_empty", f"directory not empty: {dst}")
            src_parent_path, src_name = _split(src)
            src_parent = self._dir(src_parent_path)
            if target is not None:
                self.used -= _content_size(target)
            del src_parent.children[src_name]
            dst_parent.children[dst_name] = node
            self._touch_dir(src_parent)
            self._touch_dir(dst_parent)
            return self._info(dst, node)

    def chmod(self, path: str, mode: int) -> FileInfo:
        """Set the permission bits of `path`."""
        path = normpath(path)
        with self._lock:
            self.revision += 1
            node = self._get(path)
            node.mode = mode & 0o7777
            return self._info(path, node)

    def chown(self, path: str, owner: str | None = None, group: str | None = None) -> FileInfo:
        """Set the owner and/or group of `path`."""
        path = normpath(path)
        with self._lock:
            self.revision += 1
            node = self._get(path)
            node.owner = owner if owner is not None else node.owner
            node.group = group if group is not None else node.group
            return self._info(path, node)

    def replace(self, path: str, old: bytes | str, new: bytes | str) -> int:
        """Replace every occurrence of `old` in the file at `path`; return how many were replaced."""
        old_b, new_b = _as_bytes(old), _as_bytes(new)
        if not old_b:
            raise ValueError("old must not be empty")
        path = normpath(path)
        with self._lock:
            node = self._get(path)
            if isinstance(node, _Dir):
                raise FsError("is_a_directory", f"is a directory: {path}")
            count = node.data.count(old_b)
            if count:
                self.revision += 1
                self._reserve(path, count * (len(new_b) - len(old_b)))
                node.data = node.data.replace(old_b, new_b)
                node.mtime = self._now()
            return count

    # -- snapshots ---------------------------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Return a JSON-safe snapshot of the whole tree (file content base64-encoded)."""
        with self._lock:
            entries: list[dict[str, Any]] = []
            for path, node in self._walk("/", self._root):
                entry: dict[str, Any] = {
                    "path": path,
                    "type": "dir" if isinstance(node, _Dir) else "file",
                    "mode": node.mode,
                    "mtime": node.mtime,
                    "owner": node.owner,
                    "group": node.group,
                }
                if isinstance(node, _File):
                    entry["content"] = base64.b64encode(node.data).decode("ascii")
                entries.append(entry)
            return {"version": DUMP_VERSION, "user": self.user, "entries": entries}

    @classmethod
    def load(
        cls, data: Mapping[str, Any], *, now: Callable[[], float] = time.time, quota: int | None = DEFAULT_QUOTA
    ) -> FileSystem:
        """Rebuild a filesystem from a `dump()` snapshot; raise ValueError if it is malformed.

        A snapshot over ``quota`` still loads (it was written under another bound); new writes then fail.
        """
        if data.get("version") != DUMP_VERSION:
            raise ValueError(f"unsupported filesystem snapshot version: {data.get('version')!r}")
        fs = cls(now=now, user=str(data.get("user", "user")), empty=True, quota=quota)
        try:
            for entry in data["entries"]:
                path = _normalize(str(entry["path"]))  # no PATH_MAX: a move may have made a deeper path
                meta = (int(entry["mode"]) & 0o7777, float(entry["mtime"]), entry["owner"], entry["group"])
                if entry["type"] == "dir":
                    node: _Node = _Dir(*meta)
                elif entry["type"] == "file":
                    node = _File(*meta, base64.b64decode(entry["content"], validate=True))
                else:
                    raise ValueError(f"unknown entry type {entry['type']!r}")
                if path == "/":
                    if not isinstance(node, _Dir):
                        raise ValueError("root must be a directory")
                    fs._root = node
                    continue
                parent_path, name = _split(path)
                fs._dir(parent_path).children[name] = node
        except (KeyError, TypeError, FsError) as exc:
            raise ValueError(f"malformed filesystem snapshot: {exc}") from exc
        fs.used = _content_size(fs._root)
        return fs


__all__ = [
    "CHUNK",
    "DEFAULT_QUOTA",
    "NAME_MAX",
    "PATH_MAX",
    "STRERROR",
    "SYSTEM_DIRS",
    "FileInfo",
    "FileStream",
    "FileSystem",
    "FsError",
    "FsErrorCode",
    "normpath",
]
