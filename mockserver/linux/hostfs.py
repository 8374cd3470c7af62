"""A sandbox's real files behind the interface of the emulator's :class:`~mockserver.sandbox.FileSystem`.

The providers' files rules (TensorLake's management API, OpenSandbox's execd ``/files`` and
``/directories``) are written against ``FileSystem``: ``stat``, ``read``, ``listdir``, ``walk``, ``write``,
``mkdir``, ``remove``, ``move``, ``chmod``, ``chown``, ``replace``, ``dump``. :class:`HostFileSystem` offers
the same methods over the host directories of one :class:`~mockserver.linux.LinuxSandbox` (``exists``,
``is_dir``, ``is_file`` and ``search`` it inherits, answered from its ``stat`` and ``walk``), so the rules
run unchanged and the files APIs read and write what the sandbox's processes see.

Every path goes through the sandbox's :class:`~mockserver.linux.confine.Confinement`: ``..`` is clamped
at ``/``, symbolic links are followed inside the sandbox's view, every open is an ``openat2(2)`` with the
mount's directory as root (``RESOLVE_IN_ROOT``), the kernel file systems (``/proc``, ``/dev``, ``/run``)
are refused and the system folders are read-only. Every operation then works on the descriptor it opened
(``fstat``; ``chmod``/``chown`` through ``/proc/self/fd``; ``mkdirat``, ``unlinkat``, ``renameat`` and
``fstatat`` without following, in a parent directory opened the same way), never on a host path, so a
symbolic link the sandbox plants or swaps in never leads onto the host. A refusal is a
:class:`~mockserver.sandbox.filesystem.FsError` with the codes the rules already map (``not_found``,
``is_a_directory``, ``not_a_directory``, ``exists``, ``not_empty``, ``invalid_path``, ``no_space``) plus
``permission_denied``, ``read_only`` and ``not_regular``.

Only regular files are read or written: a FIFO, socket or device is opened with ``O_NONBLOCK`` (so the
open never waits for a peer), seen by ``fstat`` and refused (``not_regular``). ``blocking`` is true: on an
event loop, call the methods in a thread. :meth:`HostFileSystem.open_stream` serves a file piece by piece
(``pread``), so a large or sparse file is never read whole into memory.

Files written through the API are charged to the sandbox as its own processes' are: they belong to its
root (the runtime's unprivileged host uid), on the sandbox's own state folder, so they count against
whatever limits that uid and that folder have.

Owners are the sandbox's users: a file the sandbox's root wrote is ``root``; ``chown`` takes the names of
the sandbox's ``/etc/passwd`` (the host's, mounted read-only) or numbers. The sandbox is reached through a
callable, so the real sandbox can be made on first use.

Known deviations: ``walk`` and ``search`` do not descend into the read-only system folders unless asked
for a path inside them, nor into ``/proc``, ``/dev``, ``/run`` and ``/sys``; symbolic links are listed as
files and never followed by ``walk``; ``dump`` (snapshots, state files) keeps the writable files only, at
most :data:`DUMP_LIMIT` bytes of content (larger files are left out), and no FIFO, socket or device; reading or
writing a FIFO, socket or device is refused (``not_regular``) where the providers' own daemons would wait
on it; ``replace`` refuses files over :data:`REPLACE_LIMIT` bytes (``no_space``); a file written through the
API is charged to the sandbox's file system and owned by its root, but its page cache is charged to the
server's memory cgroup, not the sandbox's.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import grp
import os
import pwd
import shutil
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mockserver.sandbox.filesystem import DUMP_VERSION, FileInfo, FileStream, FileSystem, FsError, FsErrorCode, normpath

from .confine import Confinement, PathError, Resolved
from .sandbox import LinuxSandbox

__all__ = ["DUMP_LIMIT", "REPLACE_LIMIT", "HostFileSystem"]

DUMP_LIMIT = 64 * 1024 * 1024
_ERRNO: dict[int, FsErrorCode] = {
    errno.ENOENT: "not_found",
    errno.EISDIR: "is_a_directory",
    errno.ENOTDIR: "not_a_directory",
    errno.EEXIST: "exists",
    errno.ENOTEMPTY: "not_empty",
    errno.EINVAL: "invalid_path",
    errno.ENOSPC: "no_space",
    errno.EDQUOT: "no_space",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.EROFS: "read_only",
    errno.ELOOP: "invalid_path",
    errno.EXDEV: "invalid_path",
    errno.ENAMETOOLONG: "invalid_path",
    errno.ENXIO: "not_regular",  # a FIFO without a reader, a socket: opened O_NONBLOCK
    errno.EFBIG: "no_space",
    errno.ETXTBSY: "permission_denied",
}
_PATH_CODES: dict[str, FsErrorCode] = {
    "invalid_path": "invalid_path",
    "not_visible": "permission_denied",
    "read_only": "read_only",
    "permission_denied": "permission_denied",
    "symlink_loop": "invalid_path",
}
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: Opens for I/O never wait for a FIFO's peer nor take a terminal.
_NO_WAIT = os.O_NONBLOCK | os.O_NOCTTY
_OVERFLOW_ID = 65534
#: The largest file ``replace`` rewrites (it holds the file in memory, as execd does).
REPLACE_LIMIT = 64 * 1024 * 1024


def _os_error(exc: OSError, path: str) -> FsError:
    code = _ERRNO.get(exc.errno or 0, "invalid_path")
    return FsError(code, f"{exc.strerror or 'error'}: {path}")


def _path_error(exc: PathError, path: str) -> FsError:
    return FsError(_PATH_CODES.get(exc.code, "invalid_path"), f"{exc.message} ({path})")


def _by_fd(fd: int) -> str:
    """Return the ``/proc/self/fd`` name of one of our own descriptors (for ``chmod``/``chown`` of an ``O_PATH`` fd)."""
    return f"/proc/self/fd/{fd}"


def _regular(fd: int, guest: str) -> os.stat_result:
    """Return the ``fstat`` of ``fd``; refuse a directory or anything but a regular file (``fd`` stays open)."""
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise FsError("is_a_directory", f"is a directory: {guest}")
    if not stat.S_ISREG(info.st_mode):
        raise FsError("not_regular", f"not a regular file: {guest}")
    return info


def _write_all(fd: int, data: bytes, offset: int | None = None) -> None:
    view = memoryview(data)
    while view:
        done = os.write(fd, view) if offset is None else os.pwrite(fd, view, offset)
        if offset is not None:
            offset += done
        view = view[done:]


@contextlib.contextmanager
def _errors(path: str) -> Iterator[None]:
    try:
        yield
    except PathError as exc:
        raise _path_error(exc, path) from exc
    except FsError:
        raise
    except OSError as exc:
        raise _os_error(exc, path) from exc


class HostFileSystem(FileSystem):
    """The files of one linux sandbox, seen through the emulator's ``FileSystem`` interface; thread-safe.

    It is a ``FileSystem`` (every public method overridden) so that the providers' records, which hold one,
    take it as it is; nothing of the in-memory tree is used.
    """

    blocking = True

    def __init__(
        self,
        sandbox: Callable[[], LinuxSandbox],
        *,
        user: str = "root",
        unmade: Callable[[], Mapping[str, Any] | None] | None = None,
    ) -> None:
        super().__init__(user=user, empty=True, quota=None)
        self._sandbox_of = sandbox
        self._unmade = unmade
        self._host_lock = threading.RLock()

    # -- the sandbox -------------------------------------------------------------------------------

    @property
    def sandbox(self) -> LinuxSandbox:
        """Return the sandbox these files belong to (made on first use by the callable)."""
        return self._sandbox_of()

    @property
    def _confine(self) -> Confinement:
        return self.sandbox.files

    def _base_ids(self) -> tuple[int, int]:
        layout = self.sandbox.layout
        return layout.uid, layout.gid

    def _resolve(self, path: str, *, follow: bool = True) -> Resolved:
        return self._confine.resolve(normpath(path), follow=follow)

    # -- names -------------------------------------------------------------------------------------

    def _user_name(self, host_uid: int) -> str:
        base = self._base_ids()[0]
        uid = host_uid - base if base <= host_uid < base + 65536 else _OVERFLOW_ID
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return str(uid)

    def _group_name(self, host_gid: int) -> str:
        base = self._base_ids()[1]
        gid = host_gid - base if base <= host_gid < base + 65536 else _OVERFLOW_ID
        try:
            return grp.getgrgid(gid).gr_name
        except KeyError:
            return str(gid)

    def _uid_of(self, name: str) -> int:
        if name.isdigit():
            return int(name)
        try:
            return pwd.getpwnam(name).pw_uid
        except KeyError:
            raise FsError("invalid_path", f"unknown user {name!r}") from None

    def _gid_of(self, name: str) -> int:
        if name.isdigit():
            return int(name)
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            raise FsError("invalid_path", f"unknown group {name!r}") from None

    def _file_info(self, guest: str, info: os.stat_result) -> FileInfo:
        is_dir = stat.S_ISDIR(info.st_mode)
        size = 4096 if is_dir else info.st_size
        return FileInfo(
            guest,
            size,
            stat.S_IMODE(info.st_mode),
            is_dir,
            info.st_mtime,
            self._user_name(info.st_uid),
            self._group_name(info.st_gid),
        )

    # -- opening ---------------------------------------------------------------------------------

    def _open(
        self, guest: str, flags: int, mode: int = 0o644, *, follow: bool = True, write: bool | None = None
    ) -> int:
        return self._confine.open(guest, flags | os.O_CLOEXEC, mode, follow=follow, write=write)

    @contextlib.contextmanager
    def _fd(self, guest: str, flags: int, *, follow: bool = True, write: bool | None = None) -> Iterator[int]:
        fd = self._open(guest, flags, follow=follow, write=write)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _parent(self, path: str, *, write: bool = True) -> Iterator[tuple[int, str, Resolved]]:
        """Yield a directory fd of ``path``'s parent (opened in the mount's root), the final name and the resolution."""
        resolved = self._resolve(path, follow=False)
        self._confine.check(resolved, write=write)
        if not resolved.relative:
            raise FsError("invalid_path", f"invalid target: {path}")
        fd = resolved.mount.open(resolved.relative[:-1], _DIR_FLAGS)
        try:
            yield fd, resolved.relative[-1], resolved
        finally:
            os.close(fd)

    # -- queries -----------------------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Return the metadata of ``path`` (symbolic links followed inside the sandbox)."""
        guest = normpath(path)
        with _errors(guest), self._fd(guest, os.O_PATH) as fd:
            return self._file_info(guest, os.fstat(fd))

    def open_stream(self, path: str) -> FileStream:
        """Open the regular file at ``path`` for reading in pieces (a FIFO, socket or device is ``not_regular``)."""
        guest = normpath(path)
        with _errors(guest):
            fd = self._open(guest, os.O_RDONLY | _NO_WAIT)
            try:
                info = _regular(fd, guest)
            except BaseException:
                os.close(fd)
                raise
        return FileStream(info.st_size, lambda offset, n: os.pread(fd, n, offset), lambda: os.close(fd))

    def read(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        """Return up to ``limit`` bytes of the file at ``path`` from ``offset`` (at most its size when opened)."""
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must be non-negative")
        guest = normpath(path)
        with self.open_stream(guest) as stream, _errors(guest):
            return b"".join(stream.chunks(offset, limit))

    def listdir(self, path: str) -> list[FileInfo]:
        """Return the entries of directory ``path`` sorted by name."""
        guest = normpath(path)
        with _errors(guest), self._fd(guest, _DIR_FLAGS) as fd:
            out = []
            for name in sorted(os.listdir(fd)):
                child = guest.rstrip("/") + "/" + name
                mount = self._confine.mount_of(child)
                if mount.guest == child and mount.visible:
                    with contextlib.suppress(FsError):
                        out.append(self.stat(child))
                    continue
                with contextlib.suppress(OSError):
                    out.append(self._file_info(child, os.stat(name, dir_fd=fd, follow_symlinks=False)))
            return out

    def walk(self, root: str) -> list[FileInfo]:
        """Return ``root`` and everything below it, depth first and sorted by name."""
        top = self.stat(root)
        out = [top]
        if top.is_dir:
            start_mount = self._confine.mount_of(self._resolve(top.path).guest)
            self._descend(top.path, start_mount.guest, out)
        return out

    def _descend(self, path: str, start_mount: str, out: list[FileInfo]) -> None:
        try:
            entries = self.listdir(path)
        except FsError:
            return
        for entry in entries:
            mount = self._confine.mount_of(entry.path)
            if not mount.visible:
                continue
            out.append(entry)
            descend = entry.is_dir and (mount.guest == start_mount or not mount.system)
            if descend and not self._is_link(entry.path):
                self._descend(entry.path, start_mount, out)

    def _is_link(self, path: str) -> bool:
        try:
            with self._parent(path, write=False) as (fd, name, _):
                return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except FsError as exc:
            return exc.code != "invalid_path"  # a mount point (no parent on its mount) is not a link
        except (OSError, PathError):
            return True

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
        """Create, overwrite or append to the regular file at ``path`` (``mode`` applies when it is created)."""
        guest = normpath(path)
        payload = data.encode() if isinstance(data, str) else bytes(data)
        if guest == "/":
            raise FsError("is_a_directory", "is a directory: /")
        with _errors(guest):
            if parents:
                parent = guest.rsplit("/", 1)[0] or "/"
                self.mkdir(parent, 0o755, parents=True)
            flags = os.O_WRONLY | _NO_WAIT | (os.O_APPEND if append else 0)
            try:
                fd, created = self._open(guest, flags | os.O_CREAT | os.O_EXCL, mode & 0o7777), True
            except FileExistsError:
                fd, created = self._open(guest, flags), False
            try:
                _regular(fd, guest)
                if created:
                    uid, gid = self._base_ids()
                    os.fchown(fd, uid, gid)
                    os.fchmod(fd, mode & 0o7777)
                elif not append:
                    os.ftruncate(fd, 0)
                os.set_blocking(fd, True)
                _write_all(fd, payload)
                return self._file_info(guest, os.fstat(fd))
            finally:
                os.close(fd)

    def mkdir(self, path: str, mode: int = 0o755, parents: bool = True) -> FileInfo:
        """Create directory ``path`` (and missing parents when ``parents``; an existing one is fine then)."""
        guest = normpath(path)
        with _errors(guest):
            uid, gid = self._base_ids()
            if parents:
                try:
                    found = self.stat(guest)
                except FsError as exc:
                    if exc.code != "not_found":
                        raise
                else:
                    if found.is_dir:
                        return found
                    raise FsError("exists", f"file exists: {guest}")
                self._confine.make_dirs(guest, mode & 0o7777, (uid, gid))
            else:
                with self._parent(guest) as (fd, name, _):
                    os.mkdir(name, mode & 0o7777, dir_fd=fd)
                    os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
            with self._fd(guest, os.O_PATH | os.O_DIRECTORY, write=True) as fd:
                os.chmod(_by_fd(fd), mode & 0o7777)
                return self._file_info(guest, os.fstat(fd))

    def remove(self, path: str, recursive: bool = False) -> None:
        """Delete a file or directory (a non-empty directory needs ``recursive``)."""
        guest = normpath(path)
        if guest == "/":
            raise FsError("invalid_path", "refusing to remove /")
        with _errors(guest), self._parent(guest) as (fd, name, resolved):
            if resolved.mount.guest == resolved.guest and resolved.mount.guest != "/":
                raise FsError("permission_denied", f"{guest} is a mount point")
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                os.unlink(name, dir_fd=fd)
            elif recursive:
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.rmdir(name, dir_fd=fd)

    def move(self, src: str, dst: str) -> FileInfo:
        """Rename ``src`` to ``dst`` (rename(2): a file or an empty directory there is replaced)."""
        source, target = normpath(src), normpath(dst)
        with _errors(source):
            if source == target:
                return self.stat(target)
            if source == "/" or target.startswith(source.rstrip("/") + "/"):
                raise FsError("invalid_path", f"cannot move {source} into itself: {target}")
            with self._parent(source) as (src_fd, src_name, _), self._parent(target) as (dst_fd, dst_name, _):
                os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                return self._file_info(target, os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False))

    def chmod(self, path: str, mode: int) -> FileInfo:
        """Set the permission bits of ``path`` (a link is followed inside the sandbox)."""
        guest = normpath(path)
        with _errors(guest), self._fd(guest, os.O_PATH, write=True) as fd:
            os.chmod(_by_fd(fd), mode & 0o7777)
            return self._file_info(guest, os.fstat(fd))

    def chown(self, path: str, owner: str | None = None, group: str | None = None) -> FileInfo:
        """Set the owner and/or group of ``path`` (sandbox user and group names, or numbers)."""
        guest = normpath(path)
        with _errors(guest):
            base_uid, base_gid = self._base_ids()
            uid = -1 if owner is None else base_uid + self._uid_of(owner)
            gid = -1 if group is None else base_gid + self._gid_of(group)
            with self._fd(guest, os.O_PATH, write=True) as fd:
                os.chown(_by_fd(fd), uid, gid)
                return self._file_info(guest, os.fstat(fd))

    def replace(self, path: str, old: bytes | str, new: bytes | str) -> int:
        """Replace every occurrence of ``old`` in the file at ``path``; return how many were replaced."""
        old_b = old.encode() if isinstance(old, str) else bytes(old)
        new_b = new.encode() if isinstance(new, str) else bytes(new)
        if not old_b:
            raise ValueError("old must not be empty")
        guest = normpath(path)
        with self._host_lock, _errors(guest):
            fd = self._open(guest, os.O_RDWR | _NO_WAIT)
            try:
                if _regular(fd, guest).st_size > REPLACE_LIMIT:
                    raise FsError("no_space", f"larger than {REPLACE_LIMIT} bytes: {guest}")
                data = b"".join(FileStream(REPLACE_LIMIT, lambda offset, n: os.pread(fd, n, offset)).chunks())
                count = data.count(old_b)
                if count:
                    os.ftruncate(fd, 0)
                    _write_all(fd, data.replace(old_b, new_b), 0)
                return count
            finally:
                os.close(fd)

    # -- snapshots ---------------------------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Return the writable files as an emulator ``FileSystem`` snapshot (see the module's limits).

        With ``unmade`` (it returns what the files will be while the sandbox is not made yet, else None), a
        sandbox that was never used is not made just to be dumped. FIFOs, sockets and devices are left out.
        """
        pending = self._unmade() if self._unmade is not None else None
        if pending is not None:
            return dict(pending)
        entries: list[dict[str, Any]] = []
        budget = DUMP_LIMIT
        for info in self.walk("/"):
            mount = self._confine.mount_of(info.path)
            if mount.guest != "/" or (info.path != "/" and self._is_link(info.path)):
                continue
            entry: dict[str, Any] = {
                "path": info.path,
                "type": "dir" if info.is_dir else "file",
                "mode": info.mode,
                "mtime": info.mtime,
                "owner": info.owner,
                "group": info.group,
            }
            if not info.is_dir:
                if info.size > budget:
                    continue
                try:
                    content = self.read(info.path, 0, budget + 1)
                except FsError:
                    continue
                if len(content) > budget:
                    continue
                budget -= len(content)
                entry["content"] = base64.b64encode(content).decode("ascii")
            entries.append(entry)
        return {"version": DUMP_VERSION, "user": self.user, "entries": entries}

    def load_dump(self, data: Mapping[str, Any]) -> None:
        """Write the files and directories of a ``FileSystem`` snapshot (``dump()`` output) into the sandbox."""
        if data.get("version") != DUMP_VERSION:
            raise ValueError(f"unsupported filesystem snapshot version: {data.get('version')!r}")
        for entry in data.get("entries", []):
            path = normpath(str(entry["path"]))
            if path == "/" or self._confine.mount_of(path).guest != "/":
                continue
            mode = int(entry.get("mode", 0o644)) & 0o7777
            try:
                if entry["type"] == "dir":
                    self.mkdir(path, mode, parents=True)
                    self.chmod(path, mode)
                else:
                    self.write(path, base64.b64decode(entry.get("content", "")), mode=mode, parents=True)
                    self.chmod(path, mode)
                with contextlib.suppress(FsError):
                    self.chown(path, str(entry.get("owner") or "root"), str(entry.get("group") or "root"))
            except FsError:
                continue
