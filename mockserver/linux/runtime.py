"""The linux runtime: one world namespace, one user namespace and one I/O thread shared by many sandboxes.

:class:`LinuxRuntime` checks the machine (:mod:`~mockserver.linux.requirements`), takes a lock file
``/run/sandproof/<id>.lock`` for its lifetime, removes what crashed runtimes left behind (namespaces,
cgroups, lock files whose lock nobody holds), makes its user namespace (root inside maps to
:data:`DEFAULT_UID_BASE` outside, 65536 ids), compiles the init, starts the launcher, the world and the
I/O thread, and then makes sandboxes (see :mod:`~mockserver.linux.assembly`): a network namespace with its
veth link and firewall, a cgroup, a state folder and one bubblewrap process running the sandbox's init.
A warm pool (:mod:`~mockserver.linux.pool`, ``warm`` sandboxes, 1 by default) starts the next sandbox
ahead of demand, so :meth:`LinuxRuntime.create_sandbox` is mostly a hand-over.

A runtime takes its id and sweeps leftovers under one host-wide mutex (:func:`sweep_mutex`): a sweep never
sees a runtime whose lock file exists but is not locked yet, so it never removes a starting runtime's names.

Names carry the runtime id (five hex digits), so parallel runtimes (parallel test runs) never collide;
sandbox indexes are never reused within a runtime, so a link being torn down by the kernel never clashes
with a new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import queue
import re
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from mockserver.core.clock import VirtualClock
from mockserver.core.dns import DnsTable

from . import cgroups as cg
from . import fdlimit
from .assembly import BASE_ENV, Assembler, SandboxStartError, make_userns
from .channel import Hub
from .clockfile import ClockFile
from .egress import EgressPlan
from .kernel import mount_state_tmpfs, open_tree_clone, unmount
from .launch import CLOCK_FILE, find_bwrap, prepare_guest_code, release_mounts
from .limits import SandboxLimits
from .netns import remove_netns, stale_names
from .pool import WarmPool
from .records import Limits, SandboxStateError
from .requirements import RuntimeUnavailable, guest_python, require
from .sandbox import LinuxSandbox
from .spawner import Launcher
from .world import World

__all__ = [
    "DEFAULT_UID_BASE",
    "LOCK_DIR",
    "LinuxRuntime",
    "SandboxCapacityError",
    "SandboxStartError",
    "remove_stale",
    "sweep_mutex",
]

DEFAULT_UID_BASE = 0x70000000
LOCK_DIR = Path("/run/sandproof")
#: Held while a runtime takes its id or sweeps (not a ``*.lock``: the sweep's glob never sees it).
SWEEP_MUTEX = LOCK_DIR / "sweep.mutex"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class SandboxCapacityError(SandboxStartError):
    """The runtime's process has no room (file descriptors) for another sandbox."""


@contextlib.contextmanager
def sweep_mutex() -> Iterator[None]:
    """Hold the host-wide mutex under which runtimes take their ids and remove dead runtimes' leftovers."""
    LOCK_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    fd = os.open(SWEEP_MUTEX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _scratch() -> str:
    """Return where a default state folder goes: /dev/shm when it is a roomy tmpfs (fast), else the temp dir."""
    with contextlib.suppress(OSError):
        info = os.statvfs("/dev/shm")
        if info.f_bavail * info.f_frsize >= 1 << 30 and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    return tempfile.gettempdir()


def remove_stale(own_id: str | None = None) -> list[str]:
    """Remove namespaces, cgroups and lock files of runtimes that are gone; return what was removed.

    Call it holding :func:`sweep_mutex`. ``own_id`` is the caller's runtime id, kept even if its lock were free.
    """
    alive, stale_locks = _alive_runtimes()
    if own_id is not None:
        alive.add(own_id)
    removed = []
    for name in stale_names(alive):
        remove_netns(name)
        removed.append(f"netns {name}")
    for path in cg.remove_stale(cg.detect(), alive):
        removed.append(f"cgroup {path}")
    for path in stale_locks:
        with contextlib.suppress(OSError):
            path.unlink()
        for place in {Path(tempfile.gettempdir()), Path(_scratch())}:
            for leftover in place.glob(f"sandproof-linux-{path.stem}-*"):
                release_mounts(leftover)  # the sandboxes' root tmpfs, the state folder's own (see _mount_state)
                shutil.rmtree(leftover, ignore_errors=True)
    return removed


def _mount_state(directory: Path) -> bool:
    """Give a state folder on ``/dev/shm`` a tmpfs of its own; tell whether it got one.

    The sandboxes' mounts are binds from the state folder, and ``/proc/self/mountinfo`` inside a sandbox
    names a bind's source by its path in the source's file system: on a file system of its own that path
    starts at the state folder, so the host's folder names (``/dev/shm/sandproof-linux-...``) stay unseen.
    A state folder on a disk (small ``/dev/shm``) is left as it is, not moved into memory.
    """
    if directory.parent != Path("/dev/shm"):
        return False
    try:
        mount_state_tmpfs(str(directory))
    except OSError:
        return False
    return True


def _unmount_state(directory: Path) -> None:
    with contextlib.suppress(OSError):
        unmount(str(directory))
    with contextlib.suppress(OSError):
        directory.rmdir()


def _make_searchable(directory: Path) -> None:
    """Let the sandboxes' unprivileged uid reach ``directory`` (bubblewrap binds from there as that uid)."""
    os.chmod(directory, os.stat(directory).st_mode | 0o011)
    for parent in directory.resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            raise RuntimeUnavailable(f"state folder {directory}: {parent} is not searchable by other users (o+x)")


def _clones_mounts(directory: Path) -> bool:
    """Tell whether the kernel copies a mount into a file descriptor (``open_tree``, Linux 5.2+).

    Then the launcher keeps a private mount namespace and each sandbox's root reaches bubblewrap as such a
    copy (:mod:`~mockserver.linux.spawner`), so a start costs the same however many sandboxes are live;
    without it the launcher shares the host's mount table and bubblewrap copies every live sandbox's mounts.
    """
    try:
        os.close(open_tree_clone(str(directory)))
    except OSError:
        return False
    return True


def _alive_runtimes() -> tuple[set[str], list[Path]]:
    """Return the ids whose lock is held, and the lock files nobody holds."""
    alive: set[str] = set()
    stale: list[Path] = []
    for path in LOCK_DIR.glob("*.lock"):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            alive.add(path.stem)
        else:
            stale.append(path)
        finally:
            os.close(fd)
    return alive, stale


class LinuxRuntime:
    """Sandboxes that run real programs in Linux namespaces; :meth:`close` (or ``with``) when done."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str] | None = None,
        *,
        dns: DnsTable | None = None,
        uid_base: int = DEFAULT_UID_BASE,
        warm: int = 1,
        limits: SandboxLimits | None = None,
    ) -> None:
        self.requirements = require()
        self.limits = limits or SandboxLimits()
        python, bwrap = guest_python(), find_bwrap()
        assert python is not None and bwrap is not None
        self.python, self.bwrap = python, bwrap
        self.uid_base = uid_base
        self.dns = dns if dns is not None else DnsTable()
        self._lock = threading.Lock()
        self._sandboxes: dict[str, LinuxSandbox] = {}
        self._reserved: set[str] = set()
        self._indexes = itertools.count()
        self._names = itertools.count()
        self._closed = False
        with sweep_mutex():
            self._lock_fd = self._take_id()
        self.userns_fd = -1
        self.world: World | None = None
        self.hub: Hub | None = None
        self.launcher: Launcher | None = None
        self._owns_state = state_dir is None
        self._state_mounted = False
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix=f"sandproof-linux-{self.id}-", dir=_scratch()))
        self._trash: queue.Queue[Path | None] = queue.Queue()
        self._janitor = threading.Thread(target=self._sweep, name="sandproof-linux-janitor", daemon=True)
        self.cgroups = cg.CgroupSupport()
        self.stale_removed: list[str] = []
        self.guest_dir: Path | None = None
        self._clock_file: ClockFile | None = None
        self.pool: WarmPool | None = None
        try:
            self.userns_fd = make_userns(uid_base)  # forks: before any thread of ours starts
            self._janitor.start()
            with sweep_mutex():
                self.stale_removed = remove_stale(self.id)
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._state_mounted = self._owns_state and _mount_state(self.state_dir)
            _make_searchable(self.state_dir)
            with contextlib.suppress(OSError):
                for leftover in (self.state_dir / ".trash").iterdir():
                    self._trash.put(leftover)
            self.cgroups = cg.detect()
            self.guest_dir = (
                self.state_dir / ".guest"
                if self._state_mounted
                else Path(_scratch()) / f"sandproof-linux-{self.id}-guest"
            )
            guest_entry = prepare_guest_code(python, self.guest_dir)
            self.launcher = Launcher(python, private_mounts=_clones_mounts(self.state_dir))
            self.world = World(self.id, self.dns).start()
            self.hub = Hub()
            self.assembler = Assembler(
                self.id, uid_base, self.userns_fd, bwrap, python, self.guest_dir, guest_entry, self.world,
                self.hub, self.launcher, self.cgroups, self._next_index, self._forget, self.limits.disk_bytes,
            )  # fmt: skip
            self.pool = WarmPool(self._warm_one, warm, room=lambda: fdlimit.has_room(2))
        except BaseException:
            self.close()
            raise

    def _take_id(self) -> int:
        LOCK_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        while True:
            candidate = secrets.token_hex(3)[:5]
            try:
                fd = os.open(LOCK_DIR / f"{candidate}.lock", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{os.getpid()}\n".encode())
            self.id = candidate
            return fd

    # -- sandboxes ---------------------------------------------------------------------------------

    def _next_index(self) -> int:
        with self._lock:
            return next(self._indexes)

    def _warm_one(self) -> LinuxSandbox:
        """Make a generic sandbox for the warm pool."""
        n = next(self._names)
        return self.assembler.assemble(f"warm-{n}", self.state_dir / f".warm-{n}", "sandbox", {})

    def create_sandbox(
        self,
        sandbox_id: str | None = None,
        *,
        hostname: str | None = None,
        env: Mapping[str, str] | None = None,
        memory_bytes: int | None = None,
        pids: int | None = None,
        disk_bytes: int | None = None,
        egress: EgressPlan | None = None,
    ) -> LinuxSandbox:
        """Return a running sandbox (from the warm pool when one is ready); raise SandboxStartError if it fails.

        :class:`SandboxCapacityError` (a SandboxStartError) when the process has no file descriptors left for
        it (see :mod:`~mockserver.linux.fdlimit`): the providers' models refuse creates before that point.

        ``sandbox_id`` names its state folder ``<state>/<id>``; ``hostname`` defaults to the id; ``env`` is
        added to every process's environment; ``memory_bytes`` and ``pids`` are cgroup limits (recorded when no
        cgroup can enforce them, see ``sandbox.limits``) and ``disk_bytes`` the size of its root tmpfs, each
        the runtime's default (:attr:`limits`, :mod:`~mockserver.linux.limits`) when None; ``egress`` is the
        plan its firewall starts with.
        """
        with self._lock:
            if self._closed:
                raise SandboxStateError("destroyed", "the runtime is closed")
            sandbox_id = sandbox_id or f"sbx-{self.id}-{next(self._names)}"
            if not _ID.fullmatch(sandbox_id) or sandbox_id in self._sandboxes or sandbox_id in self._reserved:
                raise ValueError(f"sandbox id {sandbox_id!r} is invalid or in use")
            self._reserved.add(sandbox_id)
        hostname = hostname or sandbox_id[:63]
        try:
            sandbox = self.pool.take() if self.pool is not None else None
            if sandbox is not None and sandbox.alive:
                sandbox.adopt(sandbox_id, self.state_dir / sandbox_id, hostname, {**BASE_ENV, **(env or {})})
            else:
                if sandbox is not None:
                    sandbox.destroy()
                if not fdlimit.has_room():
                    raise SandboxCapacityError(
                        f"no room for another sandbox: {fdlimit.open_fds()} of {fdlimit.soft_limit()} file "
                        "descriptors are open"
                    )
                sandbox = self.assembler.assemble(sandbox_id, self.state_dir / sandbox_id, hostname, env or {})
            try:
                self._configure(
                    sandbox,
                    self.limits.memory_bytes if memory_bytes is None else memory_bytes,
                    self.limits.pids if pids is None else pids,
                    self.limits.disk_bytes if disk_bytes is None else disk_bytes,
                    egress,
                )
            except BaseException:
                sandbox.destroy()
                raise
            with self._lock:
                self._sandboxes[sandbox_id] = sandbox
            return sandbox
        finally:
            with self._lock:
                self._reserved.discard(sandbox_id)

    @staticmethod
    def _configure(
        sandbox: LinuxSandbox, memory_bytes: int, pids: int, disk_bytes: int, egress: EgressPlan | None
    ) -> None:
        enforced = set()
        if sandbox.cgroup is not None and sandbox.cgroup.set_memory(memory_bytes):
            enforced.add("memory")
        if sandbox.cgroup is not None and sandbox.cgroup.set_pids(pids):
            enforced.add("pids")
        if "disk" in sandbox.limits.enforced and (
            disk_bytes == sandbox.limits.disk_bytes or sandbox.layout.resize(disk_bytes)
        ):
            enforced.add("disk")
        sandbox.limits = Limits(memory_bytes, pids, frozenset(enforced), disk_bytes)
        if egress is not None:
            sandbox.firewall.apply(egress)

    def _forget(self, sandbox: LinuxSandbox, remove_files: bool) -> None:
        """Finish a sandbox's destruction (called by :meth:`LinuxSandbox.destroy`)."""
        if self.world is not None:
            self.world.unregister(sandbox.address)
        if self.launcher is not None and sandbox.bwrap_pid is not None:
            self.launcher.wait(sandbox.bwrap_pid, 5)
        if self.hub is not None and sandbox.channel is not None:
            self.hub.remove(sandbox.channel)
        remove_netns(sandbox.netns_name)
        if sandbox.cgroup is not None:
            sandbox.cgroup.remove()
        if remove_files:
            sandbox.layout.release()
            trash = self.state_dir / ".trash" / f"{sandbox.id}-{sandbox.index}"
            try:
                trash.parent.mkdir(exist_ok=True)
                sandbox.layout.base.rename(trash)
            except OSError:
                trash = sandbox.layout.base
            self._trash.put(trash)
        with self._lock:
            self._sandboxes.pop(sandbox.id, None)

    def _sweep(self) -> None:
        while (path := self._trash.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)

    def sandbox(self, sandbox_id: str) -> LinuxSandbox:
        """Return the live sandbox with this id; KeyError if there is none."""
        with self._lock:
            return self._sandboxes[sandbox_id]

    def sandboxes(self) -> list[LinuxSandbox]:
        """Return the live sandboxes."""
        with self._lock:
            return list(self._sandboxes.values())

    def follow_clock(self, clock: VirtualClock) -> None:
        """Let every sandbox's ``sleep`` follow ``clock`` under its ``manual`` mode (:mod:`.clockfile`)."""
        if self.guest_dir is None or self._clock_file is not None:
            return
        self._clock_file = ClockFile(self.guest_dir / CLOCK_FILE, clock)

    # -- teardown ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Destroy every sandbox, stop the world and the I/O thread, release the id; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sandboxes = list(self._sandboxes.values())
        if self._clock_file is not None:
            self._clock_file.close()
        if self.pool is not None:
            self.pool.close()
        for sandbox in sandboxes:
            with contextlib.suppress(Exception):
                sandbox.destroy()
        if self.world is not None:
            self.world.close()
        if self.hub is not None:
            self.hub.close()
        if self.launcher is not None:
            self.launcher.close()
        self._trash.put(None)
        if self._janitor.is_alive():
            self._janitor.join(timeout=30)
        if self.userns_fd >= 0:
            os.close(self.userns_fd)
            self.userns_fd = -1
        for hierarchy in self.cgroups.hierarchies():
            cg.remove_tree(hierarchy.runtime_dir(self.id))
        for sandbox_dir in self.state_dir.iterdir() if self.state_dir.is_dir() else ():
            release_mounts(sandbox_dir)  # the sandboxes' root tmpfs (the state folder's own goes below)
        if self._owns_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            if self._state_mounted:
                _unmount_state(self.state_dir)
        if self.guest_dir is not None:
            shutil.rmtree(self.guest_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            (LOCK_DIR / f"{self.id}.lock").unlink()
        os.close(self._lock_fd)

    def __enter__(self) -> LinuxRuntime:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten runtime must not leave its sandboxes behind
        with contextlib.suppress(Exception):
            if not getattr(self, "_closed", True):
                for sandbox in self.sandboxes():
                    for pid in (sandbox.init_pid, sandbox.bwrap_pid):
                        if pid is not None:
                            os.kill(pid, signal.SIGKILL)
