"""Named network namespaces, the veth link joining a sandbox to the world, and per-namespace sysctls.

A namespace is made in-process (``unshare`` on the calling thread, then a bind mount of the thread's
namespace on ``/run/netns/<name>``, as ``ip netns add`` does) and a sandbox's link is configured over
rtnetlink (:mod:`~mockserver.linux.rtnetlink`), so a sandbox's network starts no process; the world's
one-time setup uses ``ip -batch``. Every name starts with :data:`PREFIX` and
carries the runtime id, so :func:`stale_names` can find what a crashed runtime left behind.

The veth pair is created from inside the world namespace with its peer placed straight into the sandbox
namespace: neither end ever exists in the host namespace, and deleting either namespace deletes the pair.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from .addresses import Link
from .kernel import CLONE_NEWNET, KernelError, bind_mount, enter_netns, make_shared, setns, unmount, unshare
from .rtnetlink import Netlink

__all__ = [
    "NETNS_DIR",
    "PREFIX",
    "NetnsError",
    "connect_sandbox",
    "create_netns",
    "ip_batch",
    "open_netns",
    "remove_netns",
    "sandbox_netns_name",
    "stale_names",
    "world_netns_name",
    "world_veth_name",
    "write_sysctls",
]

NETNS_DIR = Path("/run/netns")
PREFIX = "sandproof-"


class NetnsError(RuntimeError):
    """A namespace or link could not be made or configured."""


def world_netns_name(runtime_id: str) -> str:
    """Return the name of a runtime's world namespace."""
    return f"{PREFIX}{runtime_id}-world"


def sandbox_netns_name(runtime_id: str, index: int) -> str:
    """Return the name of sandbox ``index``'s namespace."""
    return f"{PREFIX}{runtime_id}-{index}"


def world_veth_name(runtime_id: str, index: int) -> str:
    """Return the world end's interface name of sandbox ``index``'s link (at most 15 characters)."""
    name = f"sp{runtime_id}x{index}"
    if len(name) > 15:
        raise NetnsError(f"interface name {name!r} is longer than 15 characters")
    return name


def runtime_of(name: str) -> str | None:
    """Return the runtime id a namespace name carries, or None when it is not one of ours."""
    if not name.startswith(PREFIX):
        return None
    rest = name[len(PREFIX) :]
    runtime_id, sep, _ = rest.partition("-")
    return runtime_id if sep and runtime_id else None


_prepared = False


def _prepare_dir() -> None:
    """Make /run/netns a shared mount of its own, as ``ip netns add`` does, once per process.

    Mount namespaces made later (ours or anybody's) copy the namespace names mounted there; with the folder
    shared, removing a name here removes the copies too, so a removed namespace is never kept alive by them.
    """
    global _prepared
    if _prepared:
        return
    NETNS_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    try:
        make_shared(str(NETNS_DIR))
    except KernelError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: not a mount point yet
            raise
        bind_mount(str(NETNS_DIR), str(NETNS_DIR))
        make_shared(str(NETNS_DIR))
    _prepared = True


def create_netns(name: str) -> int:
    """Make a new network namespace named ``name`` and return an fd for it (the caller closes it)."""
    _prepare_dir()
    path = NETNS_DIR / name
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
    except FileExistsError:
        raise NetnsError(f"network namespace {name} already exists") from None
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        unshare(CLONE_NEWNET)
        try:
            bind_mount("/proc/thread-self/ns/net", str(path))
        finally:
            setns(home, CLONE_NEWNET)
    except KernelError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        raise NetnsError(f"cannot make network namespace {name}: {exc}") from exc
    finally:
        os.close(home)
    return open_netns(name)


def open_netns(name: str) -> int:
    """Return a new fd for the named namespace."""
    return os.open(NETNS_DIR / name, os.O_RDONLY | os.O_CLOEXEC)


def remove_netns(name: str) -> None:
    """Drop the name of a namespace; it disappears (with its links) once nothing uses it. Idempotent."""
    path = NETNS_DIR / name
    with contextlib.suppress(OSError):
        unmount(str(path))
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def stale_names(alive: Iterable[str]) -> list[str]:
    """Return our namespace names whose runtime id is not in ``alive``."""
    keep = set(alive)
    try:
        entries = sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []
    return [name for name in entries if (rid := runtime_of(name)) is not None and rid not in keep]


def _ip_binary() -> str:
    return shutil.which("ip") or "/usr/sbin/ip"


def ip_batch(netns: str, commands: Sequence[str]) -> None:
    """Run ``ip`` commands inside the named namespace in one process; raise NetnsError naming the failure."""
    proc = subprocess.run(
        [_ip_binary(), "-n", netns, "-batch", "-"],
        input="\n".join(commands).encode() + b"\n",
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise NetnsError(f"ip in {netns} failed: {detail}")


def write_sysctls(netns_fd: int, values: dict[str, str]) -> None:
    """Write ``net/...`` sysctls (keys as paths under /proc/sys) inside the namespace ``netns_fd``."""
    with enter_netns(netns_fd):
        for key, value in values.items():
            with open(f"/proc/sys/{key}", "w") as handle:
                handle.write(value)


def connect_sandbox(world: Netlink, sandbox_fd: int, veth: str, link: Link) -> None:
    """Create the veth pair from the world into ``sandbox_fd`` and address, raise and route both ends."""
    world.add_veth(veth, "eth0", sandbox_fd)
    outer = world.index(veth)
    world.add_address(outer, link.gateway, 31)
    world.set_up(outer)
    with Netlink(sandbox_fd) as inner:
        inner.set_up(1)  # the loopback is always interface 1
        eth0 = inner.index("eth0")
        inner.add_address(eth0, link.address, 31)
        inner.set_up(eth0)
        inner.add_default_route(link.gateway, eth0)
