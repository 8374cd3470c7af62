"""The few Linux system calls the runtime needs that Python 3.11 does not wrap: setns, unshare, mount, open_tree.

:func:`mount_tmpfs` and :func:`resize_tmpfs` give each sandbox's writable root its own size-limited tmpfs
(its disk quota: ``df`` inside shows that size).

``setns`` on a network namespace changes only the calling thread, so a socket made between
:func:`enter_netns` and its exit belongs to that namespace for its whole life, whichever thread uses it
later. That is how the host process serves sockets inside the world namespace and reaches ports inside a
sandbox without starting a helper process.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import socket
from collections.abc import Iterator

__all__ = [
    "CLONE_NEWNET",
    "CLONE_NEWUSER",
    "CLONE_NEWUTS",
    "KernelError",
    "bind_mount",
    "enter_netns",
    "enter_ns",
    "make_shared",
    "mount_state_tmpfs",
    "mount_tmpfs",
    "open_tree_clone",
    "resize_tmpfs",
    "setns",
    "socket_in",
    "unmount",
    "unshare",
]

CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_SHARED = 1 << 20
MNT_DETACH = 0x2
SYS_OPEN_TREE = 428  # the same number on every architecture (system calls added since Linux 5.1 share theirs)
OPEN_TREE_CLONE = 0x1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
AT_FDCWD = -100

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.syscall.restype = ctypes.c_long


class KernelError(OSError):
    """A failed system call, with errno and the call named."""


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise KernelError(code, f"{what}: {os.strerror(code)}")


def setns(fd: int, nstype: int) -> None:
    """Move the calling thread into the namespace ``fd`` refers to."""
    _check(_libc.setns(fd, nstype), "setns")


def unshare(flags: int) -> None:
    """Move the calling thread (or process, for a user namespace) into new namespaces."""
    _check(_libc.unshare(flags), "unshare")


def bind_mount(source: str, target: str) -> None:
    """Bind-mount ``source`` on ``target`` (used to give a network namespace a name under /run/netns)."""
    _check(_libc.mount(source.encode(), target.encode(), None, MS_BIND, None), f"mount {source} on {target}")


def mount_state_tmpfs(target: str) -> None:
    """Mount a tmpfs of its own on ``target`` (a runtime's state folder, so no sandbox sees the host path of it).

    A bind mount's line in ``/proc/self/mountinfo`` names its source as a path inside the source's file
    system: on a file system of its own the state folder's host path is not part of it.
    """
    _check(_libc.mount(b"sandproof", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0711"), f"mount {target}")


def mount_tmpfs(target: str, size: int, *, uid: int, gid: int, mode: int = 0o755) -> None:
    """Mount a tmpfs of at most ``size`` bytes (and as many inodes as 4 KiB files fill it) on ``target``."""
    data = f"size={size},nr_inodes={max(1024, size // 4096)},mode={mode:o},uid={uid},gid={gid}".encode()
    flags = MS_NOSUID | MS_NODEV
    _check(_libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, data), f"mount tmpfs on {target}")


def resize_tmpfs(target: str, size: int) -> None:
    """Change the size limit of the tmpfs mounted on ``target`` (ENOSPC-like EBUSY if it holds more)."""
    data = f"size={size},nr_inodes={max(1024, size // 4096)}".encode()
    flags = MS_REMOUNT | MS_NOSUID | MS_NODEV
    _check(_libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, data), f"resize tmpfs on {target}")


def open_tree_clone(path: str) -> int:
    """Return an fd holding a detached copy of the mount at ``path`` alone (no mounts below it; Linux 5.2+).

    The copy shares the file system: another mount namespace can attach it with ``move_mount`` (what the
    launcher does with a sandbox's root, see :mod:`~mockserver.linux.spawner`). Not inheritable.
    """
    fd = _libc.syscall(
        ctypes.c_long(SYS_OPEN_TREE),
        ctypes.c_int(AT_FDCWD),
        path.encode(),
        ctypes.c_uint(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise KernelError(code, f"open_tree {path}: {os.strerror(code)}")
    return int(fd)


def make_shared(target: str) -> None:
    """Make the mount at ``target`` (and below) shared, so unmounts there reach its peers too."""
    _check(_libc.mount(b"none", target.encode(), None, MS_SHARED | MS_REC, None), f"make {target} shared")


def unmount(target: str) -> None:
    """Lazily unmount ``target``."""
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


_NS_NAMES = {CLONE_NEWNET: "net", CLONE_NEWUTS: "uts"}


@contextlib.contextmanager
def enter_ns(fd: int, nstype: int) -> Iterator[None]:
    """Run the block with the calling thread inside namespace ``fd`` (net or uts), then move it back."""
    home = os.open(f"/proc/thread-self/ns/{_NS_NAMES[nstype]}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(fd, nstype)
        try:
            yield
        finally:
            setns(home, nstype)
    finally:
        os.close(home)


def enter_netns(fd: int) -> contextlib.AbstractContextManager[None]:
    """Run the block with the calling thread inside network namespace ``fd``, then move it back."""
    return enter_ns(fd, CLONE_NEWNET)


def socket_in(netns_fd: int, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """Return a new socket that lives in the network namespace ``netns_fd``."""
    with enter_netns(netns_fd):
        return socket.socket(family, kind)
