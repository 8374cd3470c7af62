"""Map a sandbox path to the host file behind it without ever leaving the sandbox's view.

A sandbox sees a few mounts: its writable root (a host directory), the host's system folders read-only,
a few generated files (``/etc/hosts``...), and kernel file systems (``/proc``, ``/dev``, ``/run``) the files API
does not reach. :class:`Confinement` resolves a path the way the sandbox's kernel
would: relative paths against a working directory, ``..`` clamped at ``/``, and symbolic links read from
the host file and followed *inside the sandbox's view* (an absolute target restarts at the sandbox root,
never the host's). The result names the mount and the host path.

The rule of path resolution: nothing on the host is ever reached by a host path below a mount's directory.
Every look at the sandbox's files (the ``lstat`` and ``readlink`` of the resolution, the final open) is an
``openat2(2)`` relative to a descriptor of the mount's own directory with ``RESOLVE_IN_ROOT |
RESOLVE_NO_MAGICLINKS``: a symbolic link the sandbox swaps in after the resolution, however it points,
is resolved by the kernel with that directory as ``/`` and so never leads onto the host, and ``/proc``
magic links are refused. :meth:`Confinement.open` returns the descriptor; callers work on it (``fstat``,
``fchmod``, ``*at`` calls with ``AT_SYMLINK_NOFOLLOW``) and never on a path again, so there is no gap
between check and use. :func:`openat2` needs Linux 5.6; :func:`openat2_problem` says when it is missing.

Reads from the read-only system mounts are allowed only where the sandbox itself could read: its root is an
unprivileged user on the host, so a file must be readable by "other" (``/etc/shadow`` is refused).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "PATH_MAX",
    "RESOLVE_IN_ROOT",
    "RESOLVE_NO_MAGICLINKS",
    "Confinement",
    "Mount",
    "PathError",
    "PathErrorCode",
    "Resolved",
    "openat2",
    "openat2_problem",
]

PathErrorCode = Literal["invalid_path", "not_visible", "read_only", "permission_denied", "symlink_loop"]
MAX_LINKS = 40
#: The longest path (bytes) resolved, as the kernel's ``PATH_MAX``; a longer one is ``invalid_path``.
PATH_MAX = 4096

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10
#: How every path below a mount's directory is resolved (see the module docstring).
IN_ROOT = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
_SYS_OPENAT2 = 437  # the same number on every architecture (the generic syscall table)
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def openat2(dirfd: int, path: str, flags: int, mode: int = 0, resolve: int = IN_ROOT) -> int:
    """Return ``openat2(dirfd, path, {flags, mode, resolve})``; raise OSError as ``os.open`` does.

    ``EAGAIN`` (a rename raced a ``..`` under ``RESOLVE_IN_ROOT``) is retried a few times.
    """
    tmpfile = getattr(os, "O_TMPFILE", 0)
    mode = mode if flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile) else 0
    how = _OpenHow(flags | os.O_CLOEXEC, mode, resolve)
    raw = os.fsencode(path or ".")
    for _ in range(8):
        fd = _syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_long(dirfd), raw, ctypes.byref(how), ctypes.c_size_t(24))
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err != errno.EAGAIN:
            break
    raise OSError(err, os.strerror(err), path)


def openat2_problem() -> str | None:
    """Return why ``openat2(RESOLVE_IN_ROOT)`` is unusable here (kernel older than 5.6, seccomp), or None."""
    try:
        fd = os.open("/", _DIR)
    except OSError as exc:
        return f"cannot open / ({exc.strerror})"
    try:
        os.close(openat2(fd, "..", _DIR))
    except OSError as exc:
        return f"openat2(2) with RESOLVE_IN_ROOT (Linux 5.6+): {exc.strerror}"
    finally:
        os.close(fd)
    return None


class PathError(Exception):
    """A sandbox path the files API must refuse; ``code`` is stable, ``message`` names the path."""

    def __init__(self, code: PathErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: PathErrorCode = code
        self.message = message


@dataclass(frozen=True)
class Mount:
    """One mount of the sandbox: ``guest`` path, the ``host`` path behind it, and how the sandbox may use it."""

    guest: str
    host: Path
    writable: bool
    system: bool = False
    is_file: bool = False
    visible: bool = True

    def covers(self, guest: str) -> bool:
        """Tell whether the canonical guest path lies on this mount."""
        if self.is_file:
            return guest == self.guest
        return self.guest == "/" or guest == self.guest or guest.startswith(self.guest + "/")

    def host_of(self, guest: str) -> Path:
        """Return the host path of a guest path this mount covers (a name for messages: never opened)."""
        return self.host.joinpath(*self.parts_of(guest))

    def parts_of(self, guest: str) -> tuple[str, ...]:
        """Return the components of a guest path this mount covers, below the mount's directory."""
        rest = guest[len(self.guest) :] if self.guest != "/" else guest
        return tuple(p for p in rest.split("/") if p not in ("", "."))

    def open_root(self) -> int:
        """Return an ``O_PATH`` descriptor of the mount's own directory (or file)."""
        flags = os.O_PATH | os.O_CLOEXEC | (0 if self.is_file else os.O_DIRECTORY)
        return os.open(self.host, flags)

    def open(self, parts: Sequence[str], flags: int, mode: int = 0o644) -> int:
        """Open the components below the mount's directory with ``RESOLVE_IN_ROOT`` (see the module docstring)."""
        if self.is_file:
            if parts:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(self.host_of("/".join(parts))))
            return os.open(self.host, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        root = self.open_root()
        try:
            return openat2(root, "/".join(parts), flags, mode)
        finally:
            os.close(root)


@dataclass(frozen=True)
class Resolved:
    """A resolved sandbox path: its canonical guest form, its mount and its host path (a name, never opened)."""

    guest: str
    mount: Mount
    host: Path

    @property
    def relative(self) -> tuple[str, ...]:
        """Return the components below the mount's host directory."""
        return self.mount.parts_of(self.guest)


class Confinement:
    """The mount table of one sandbox and path resolution over it."""

    def __init__(self, mounts: Sequence[Mount]) -> None:
        if not any(m.guest == "/" for m in mounts):
            raise ValueError("a mount table needs a root mount")
        self.mounts = sorted(mounts, key=lambda m: (m.is_file, m.guest.count("/"), len(m.guest)), reverse=True)

    def mount_of(self, guest: str) -> Mount:
        """Return the innermost mount covering the canonical guest path."""
        for mount in self.mounts:
            if mount.covers(guest):
                return mount
        raise AssertionError("the root mount covers every path")

    def _lstat(self, guest: str) -> tuple[os.stat_result, str | None] | None:
        """Return the ``lstat`` of a guest path and its link target (None when missing), looked at in the root."""
        mount = self.mount_of(guest)
        parts = mount.parts_of(guest)
        try:
            if not parts:
                return os.stat(mount.host, follow_symlinks=False), None
            parent = mount.open(parts[:-1], _DIR)
            try:
                info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                link = os.readlink(parts[-1], dir_fd=parent) if stat.S_ISLNK(info.st_mode) else None
                return info, link
            finally:
                os.close(parent)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathError("symlink_loop", f"too many levels of symbolic links in {guest!r}") from None
            raise

    def resolve(self, path: str, *, cwd: str = "/", follow: bool = True) -> Resolved:
        """Return where ``path`` leads inside the sandbox; missing components are allowed (for creation)."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise PathError("invalid_path", f"invalid path {path!r}")
        start = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
        if len(os.fsencode(start)) > PATH_MAX:
            raise PathError("invalid_path", f"file name too long ({len(start)} characters)")
        pending = deque(p for p in start.split("/") if p not in ("", "."))
        parts: list[str] = []
        links = 0
        while pending:
            name = pending.popleft()
            if name == "..":
                if parts:
                    parts.pop()
                continue
            guest = "/" + "/".join([*parts, name])
            last = not any(p not in ("", ".") for p in pending)
            found = self._lstat(guest)
            if found is not None and found[1] is not None and (follow or not last):
                links += 1
                if links > MAX_LINKS:
                    raise PathError("symlink_loop", f"too many levels of symbolic links in {path!r}")
                target = found[1]
                if target.startswith("/"):
                    parts = []
                pending.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))
                continue
            parts.append(name)
        guest = "/" + "/".join(parts)
        mount = self.mount_of(guest)
        return Resolved(guest, mount, mount.host_of(guest))

    def check(self, resolved: Resolved, *, write: bool) -> None:
        """Refuse hidden mounts, writes outside the writable ones and reads the sandbox itself could not make."""
        if not resolved.mount.visible:
            raise PathError("not_visible", f"{resolved.guest}: not reachable through the files API")
        if write and not resolved.mount.writable:
            raise PathError("read_only", f"{resolved.guest}: read-only file system")
        if not resolved.mount.system or write:
            return
        current = resolved.mount.host
        for part in (None, *resolved.relative):
            current = current / part if part else current
            try:
                mode = os.stat(current).st_mode  # a system mount: the host's own folder, which no sandbox writes
            except OSError:
                return  # a missing file is reported by whoever opens it
            if current == resolved.host:
                needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
            else:
                needed = stat.S_IXOTH
            if mode & needed != needed:
                raise PathError("permission_denied", f"{resolved.guest}: permission denied")

    def host_path(self, path: str, *, cwd: str = "/", write: bool = False, follow: bool = True) -> Path:
        """Return the host path behind sandbox ``path`` after :meth:`resolve` and :meth:`check`.

        The name is for tests and messages: anything that acts on the file uses :meth:`open`.
        """
        resolved = self.resolve(path, cwd=cwd, follow=follow)
        self.check(resolved, write=write)
        return resolved.host

    def open(
        self,
        path: str,
        flags: int = os.O_RDONLY,
        mode: int = 0o644,
        *,
        cwd: str = "/",
        follow: bool = True,
        write: bool | None = None,
    ) -> int:
        """Open sandbox ``path`` race-free and return the fd; raise PathError or OSError (e.g. not found).

        ``follow=False`` opens a final symbolic link itself (``O_NOFOLLOW``; with ``O_PATH`` that is an fd of
        the link). ``write`` overrides what the flags say about the mount check (a ``chmod`` through an
        ``O_PATH`` fd is a write).
        """
        writing = bool(flags & _WRITE_FLAGS) if write is None else write
        resolved = self.resolve(path, cwd=cwd, follow=follow)
        self.check(resolved, write=writing)
        if not follow:
            flags |= os.O_NOFOLLOW
        try:
            return resolved.mount.open(resolved.relative, flags, mode)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathError("symlink_loop", f"{resolved.guest}: a symbolic link where none may be") from None
            raise

    def make_dirs(self, path: str, mode: int = 0o755, owner: tuple[int, int] | None = None, *, cwd: str = "/") -> None:
        """Create sandbox directory ``path`` and its missing parents race-free, owned by host ``owner``."""
        resolved = self.resolve(path, cwd=cwd)
        self.check(resolved, write=True)
        fd = resolved.mount.open_root()
        try:
            for part in resolved.relative:
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                    created = True
                except FileExistsError:
                    created = False
                try:
                    nxt = openat2(fd, part, _DIR | os.O_NOFOLLOW)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise PathError("symlink_loop", f"{resolved.guest}: path changed while creating") from None
                    raise
                if created and owner is not None:
                    os.chown(part, owner[0], owner[1], dir_fd=fd, follow_symlinks=False)
                os.close(fd)
                fd = nxt
        finally:
            os.close(fd)
