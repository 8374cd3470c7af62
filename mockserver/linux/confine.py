"""Map a sandbox path to the host file behind it without ever leaving the sandbox's view.

A sandbox sees a few mounts: its writable root (a host directory), the host's system folders read-only,
a few generated files (``/etc/hosts``...), and kernel file systems (``/proc``, ``/dev``, ``/run``) the files API
does not reach. :class:`Confinement` resolves a path the way the sandbox's kernel
would: relative paths against a working directory, ``..`` clamped at ``/``, and symbolic links read from
the host file and followed *inside the sandbox's view* (an absolute target restarts at the sandbox root,
never the host's). The result names the mount and the host path.

:meth:`Confinement.open` then opens the host file race-free: it walks from the mount's host directory one
component at a time with ``O_NOFOLLOW``, so a symlink the sandbox swaps in after resolution makes the open
fail rather than escape.

Reads from the read-only system mounts are allowed only where the sandbox itself could read: its root is an
unprivileged user on the host, so a file must be readable by "other" (``/etc/shadow`` is refused).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Confinement", "Mount", "PathError", "PathErrorCode", "Resolved"]

PathErrorCode = Literal["invalid_path", "not_visible", "read_only", "permission_denied", "symlink_loop"]
MAX_LINKS = 40


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
        """Return the host path of a guest path this mount covers."""
        rest = guest[len(self.guest) :].lstrip("/") if self.guest != "/" else guest.lstrip("/")
        return self.host / rest if rest else self.host


@dataclass(frozen=True)
class Resolved:
    """A resolved sandbox path: its canonical guest form, its mount and its host path."""

    guest: str
    mount: Mount
    host: Path

    @property
    def relative(self) -> tuple[str, ...]:
        """Return the components below the mount's host directory."""
        rest = self.host.relative_to(self.mount.host)
        return tuple(p for p in rest.parts if p not in ("", "."))


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

    def resolve(self, path: str, *, cwd: str = "/", follow: bool = True) -> Resolved:
        """Return where ``path`` leads inside the sandbox; missing components are allowed (for creation)."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise PathError("invalid_path", f"invalid path {path!r}")
        start = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
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
            mount = self.mount_of(guest)
            last = not any(p not in ("", ".") for p in pending)
            try:
                info = os.lstat(mount.host_of(guest))
            except FileNotFoundError:
                parts.append(name)
                continue
            except NotADirectoryError:
                parts.append(name)
                continue
            if stat.S_ISLNK(info.st_mode) and (follow or not last):
                links += 1
                if links > MAX_LINKS:
                    raise PathError("symlink_loop", f"too many levels of symbolic links in {path!r}")
                target = os.readlink(mount.host_of(guest))
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
                mode = os.stat(current).st_mode
            except OSError:
                return  # a missing file is reported by whoever opens it
            if current == resolved.host:
                needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
            else:
                needed = stat.S_IXOTH
            if mode & needed != needed:
                raise PathError("permission_denied", f"{resolved.guest}: permission denied")

    def host_path(self, path: str, *, cwd: str = "/", write: bool = False, follow: bool = True) -> Path:
        """Return the host path behind sandbox ``path`` after :meth:`resolve` and :meth:`check`."""
        resolved = self.resolve(path, cwd=cwd, follow=follow)
        self.check(resolved, write=write)
        return resolved.host

    def open(self, path: str, flags: int = os.O_RDONLY, mode: int = 0o644, *, cwd: str = "/") -> int:
        """Open sandbox ``path`` race-free and return the fd; raise PathError or OSError (e.g. not found)."""
        write = bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
        resolved = self.resolve(path, cwd=cwd)
        self.check(resolved, write=write)
        if resolved.mount.is_file:  # a generated file mounted on its own (read-only)
            return os.open(resolved.mount.host, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
        with _walk(resolved) as (dirfd, name):
            if name is None:
                return os.open(".", flags & ~(os.O_CREAT | os.O_TRUNC) | os.O_DIRECTORY, dir_fd=dirfd)
            try:
                return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise PathError("symlink_loop", f"{resolved.guest}: path changed while opening") from None
                raise

    def make_dirs(self, path: str, mode: int = 0o755, owner: tuple[int, int] | None = None, *, cwd: str = "/") -> None:
        """Create sandbox directory ``path`` and its missing parents race-free, owned by host ``owner``."""
        resolved = self.resolve(path, cwd=cwd)
        self.check(resolved, write=True)
        flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(resolved.mount.host, flags)
        try:
            for part in resolved.relative:
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                    created = True
                except FileExistsError:
                    created = False
                try:
                    nxt = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    if _swapped(exc, part, fd):
                        raise PathError("symlink_loop", f"{resolved.guest}: path changed while creating") from None
                    raise
                if created and owner is not None:
                    os.chown(part, owner[0], owner[1], dir_fd=fd, follow_symlinks=False)
                os.close(fd)
                fd = nxt
        finally:
            os.close(fd)


def _swapped(exc: OSError, name: str, dirfd: int) -> bool:
    """Tell whether an open failed because ``name`` is (now) a symbolic link."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return False
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dirfd).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def _walk(resolved: Resolved) -> Iterator[tuple[int, str | None]]:
    """Yield an fd of the final component's directory (walked with O_NOFOLLOW) and the final name."""
    flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    parts = resolved.relative
    fd = os.open(resolved.mount.host, flags)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if _swapped(exc, part, fd):
                    raise PathError("symlink_loop", f"{resolved.guest}: path changed while opening") from None
                raise
            os.close(fd)
            fd = nxt
        yield fd, parts[-1] if parts else None
    finally:
        os.close(fd)
