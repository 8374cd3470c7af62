"""The linux runtime: one world namespace, one user namespace and one I/O thread shared by many sandboxes.

:class:`LinuxRuntime` checks the machine (:mod:`~mockserver.linux.requirements`), takes a lock file
``/run/sandproof/<id>.lock`` for its lifetime, removes what crashed runtimes left behind (namespaces,
cgroups, lock files whose lock nobody holds), makes its user namespace (root inside maps to
:data:`DEFAULT_UID_BASE` outside, 65536 ids), starts the world and the I/O thread, and then makes
sandboxes: :meth:`LinuxRuntime.create_sandbox` costs a network namespace with its veth link and firewall,
a cgroup, a state directory and one bubblewrap process running the sandbox's init.

Names carry the runtime id (five hex digits), so parallel runtimes (parallel test runs) never collide;
sandbox indexes are never reused within a runtime, so a link being torn down by the kernel never clashes
with a new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from mockserver.core.dns import DnsTable

from . import cgroups as cg
from .addresses import MAX_LINKS, link_for
from .channel import Channel, Hub
from .egress import EgressPlan
from .firewall import OPEN_PLAN, Firewall
from .launch import Layout, bwrap_command, find_bwrap, prepare_guest_code
from .netns import (
    connect_sandbox,
    create_netns,
    remove_netns,
    sandbox_netns_name,
    stale_names,
    world_veth_name,
    write_sysctls,
)
from .nftables import open_nft
from .requirements import RuntimeUnavailable, guest_python, require
from .sandbox import Limits, LinuxSandbox, SandboxStateError, _Parts
from .spawner import Launcher, LauncherError
from .world import World

__all__ = ["DEFAULT_UID_BASE", "LOCK_DIR", "LinuxRuntime", "SandboxStartError"]

DEFAULT_UID_BASE = 0x70000000
UID_COUNT = 65536
LOCK_DIR = Path("/run/sandproof")
READY_TIMEOUT = 10.0
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_SANDBOX_SYSCTLS = {
    "net/ipv4/ip_unprivileged_port_start": "0",
    "net/ipv4/ping_group_range": "0 2147483647",
    "net/ipv6/conf/all/disable_ipv6": "1",
    "net/ipv6/conf/default/disable_ipv6": "1",
}
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
}


class SandboxStartError(RuntimeError):
    """A sandbox's init did not come up; the message carries its log."""


def _make_userns(uid_base: int) -> int:
    """Return an fd of a new user namespace owned by ``uid_base`` mapping 0..65535 to it."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_r)
            os.close(go_w)
            os.setgroups([])
            os.setresgid(uid_base, uid_base, uid_base)
            os.setresuid(uid_base, uid_base, uid_base)
            from .kernel import CLONE_NEWUSER, unshare

            unshare(CLONE_NEWUSER)
            os.write(ready_w, b"1")
            os.read(go_r, 1)
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(go_r)
    try:
        if os.read(ready_r, 1) != b"1":
            raise RuntimeUnavailable("could not create the runtime's user namespace")
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as handle:
                handle.write(f"0 {uid_base} {UID_COUNT}\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)  # inheritable: handed to bwrap
    finally:
        os.close(go_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def _scratch() -> str:
    """Return where a default state folder goes: /dev/shm when it is a roomy tmpfs (fast), else the temp dir."""
    with contextlib.suppress(OSError):
        info = os.statvfs("/dev/shm")
        if info.f_bavail * info.f_frsize >= 1 << 30 and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    return tempfile.gettempdir()


def _make_searchable(directory: Path) -> None:
    """Let the sandboxes' unprivileged uid reach ``directory`` (bubblewrap binds from there as that uid)."""
    os.chmod(directory, os.stat(directory).st_mode | 0o011)
    for parent in directory.resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            raise RuntimeUnavailable(f"state folder {directory}: {parent} is not searchable by other users (o+x)")


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
    ) -> None:
        self.requirements = require()
        python, bwrap = guest_python(), find_bwrap()
        assert python is not None and bwrap is not None
        self.python, self.bwrap = python, bwrap
        self.uid_base = uid_base
        self.dns = dns if dns is not None else DnsTable()
        self._lock = threading.Lock()
        self._sandboxes: dict[str, LinuxSandbox] = {}
        self._next_index = 0
        self._closed = False
        self._lock_fd = self._take_id()
        self.userns_fd = -1
        self.world: World | None = None
        self.hub: Hub | None = None
        self.launcher: Launcher | None = None
        self._owns_state = state_dir is None
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix=f"sandproof-linux-{self.id}-", dir=_scratch()))
        self._trash: queue.Queue[Path | None] = queue.Queue()
        self._janitor = threading.Thread(target=self._sweep, name="sandproof-linux-janitor", daemon=True)
        self.cgroups = cg.CgroupSupport()
        self.stale_removed: list[str] = []
        self.guest_dir: Path | None = None
        self.guest_entry = "init.py"
        try:
            self.userns_fd = _make_userns(uid_base)  # forks: before any thread of ours starts
            self._janitor.start()
            self.stale_removed = self._remove_stale()
            self.state_dir.mkdir(parents=True, exist_ok=True)
            _make_searchable(self.state_dir)
            with contextlib.suppress(OSError):
                for leftover in (self.state_dir / ".trash").iterdir():
                    self._trash.put(leftover)
            self.cgroups = cg.detect()
            self.guest_dir = Path(_scratch()) / f"sandproof-linux-{self.id}-guest"
            self.guest_entry = prepare_guest_code(python, self.guest_dir)
            self.launcher = Launcher(python)
            self.world = World(self.id, self.dns).start()
            self.hub = Hub()
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

    def _remove_stale(self) -> list[str]:
        """Remove namespaces, cgroups and lock files of runtimes that are gone; return what was removed."""
        alive, stale_locks = _alive_runtimes()
        alive.add(self.id)
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
                    shutil.rmtree(leftover, ignore_errors=True)
        return removed

    # -- sandboxes ---------------------------------------------------------------------------------

    def create_sandbox(
        self,
        sandbox_id: str | None = None,
        *,
        hostname: str | None = None,
        env: Mapping[str, str] | None = None,
        memory_bytes: int | None = None,
        pids: int | None = None,
        egress: EgressPlan | None = None,
    ) -> LinuxSandbox:
        """Start a sandbox and return it once its init answers; raise SandboxStartError if it does not."""
        assert self.world is not None and self.hub is not None
        with self._lock:
            if self._closed:
                raise SandboxStateError("destroyed", "the runtime is closed")
            index = self._next_index
            self._next_index += 1
            sandbox_id = sandbox_id or f"sbx-{self.id}-{index}"
            if not _ID.fullmatch(sandbox_id) or sandbox_id in self._sandboxes:
                raise ValueError(f"sandbox id {sandbox_id!r} is invalid or in use")
        if index >= MAX_LINKS:
            raise SandboxStateError("destroyed", "this runtime has used all its link addresses")
        link = link_for(index)
        name = sandbox_netns_name(self.id, index)
        hostname = hostname or sandbox_id[:63]
        assert self.guest_dir is not None
        layout = Layout(self.state_dir / sandbox_id, self.uid_base, self.uid_base, self.guest_dir, self.guest_entry)
        layout.create(hostname)
        netns_fd = -1
        cgroup: cg.SandboxCgroup | None = None
        sandbox: LinuxSandbox | None = None
        try:
            netns_fd = create_netns(name)
            write_sysctls(netns_fd, _SANDBOX_SYSCTLS)
            assert self.world.netlink is not None
            connect_sandbox(self.world.netlink, netns_fd, world_veth_name(self.id, index), link)
            firewall = Firewall(open_nft(netns_fd), serve=self.world.ensure_served)
            firewall.apply(egress or OPEN_PLAN)
            if self.cgroups.hierarchies():
                cgroup = cg.SandboxCgroup(self.cgroups, self.id, f"sbx-{index}")
            enforced = set()
            if memory_bytes is not None and cgroup is not None and cgroup.set_memory(memory_bytes):
                enforced.add("memory")
            if pids is not None and cgroup is not None and cgroup.set_pids(pids):
                enforced.add("pids")
            parts = _Parts(
                sandbox_id, index, link, name, netns_fd, layout, firewall, cgroup,
                Limits(memory_bytes, pids, frozenset(enforced)), hostname,
                {**BASE_ENV, "HOSTNAME": hostname, **(env or {})}, self._forget,
            )  # fmt: skip
            sandbox = LinuxSandbox(parts)
            self.world.register(link.address, firewall)
            with self._lock:
                self._sandboxes[sandbox_id] = sandbox
            self._launch(sandbox)
            return sandbox
        except BaseException:
            if sandbox is not None:
                sandbox.destroy()
            else:
                if cgroup is not None:
                    cgroup.remove()
                if netns_fd >= 0:
                    os.close(netns_fd)
                remove_netns(name)
                shutil.rmtree(layout.base, ignore_errors=True)
            raise

    def _launch(self, sandbox: LinuxSandbox) -> None:
        assert self.hub is not None and self.launcher is not None
        host_end, guest_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        info_r, info_w = os.pipe()
        argv = bwrap_command(
            self.bwrap, sandbox.layout, python=self.python, userns_fd=3, ctl_fd=4, info_fd=5,
            hostname=sandbox.hostname,
        )  # fmt: skip
        log = os.open(sandbox.layout.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            sandbox.bwrap_pid = self.launcher.spawn(
                argv,
                netns_fd=sandbox.netns_fd,
                userns_fd=self.userns_fd,
                ctl_fd=guest_end.fileno(),
                info_fd=info_w,
                log_fd=log,
                cgroups=sandbox.cgroup.procs_files() if sandbox.cgroup is not None else [],
                uid=self.uid_base,
                gid=self.uid_base,
            )
        except LauncherError as exc:
            host_end.close()
            raise SandboxStartError(f"sandbox {sandbox.id} did not start: {exc}") from exc
        finally:
            os.close(log)
            guest_end.close()
            os.close(info_w)
        channel = Channel(host_end, sandbox.on_event, sandbox.on_close)
        sandbox.channel = channel
        self.hub.add(channel)
        try:
            with os.fdopen(info_r, "rb") as info:
                data = info.read()
            sandbox.init_pid = int(json.loads(data)["child-pid"]) if data else None
        except (ValueError, KeyError):
            sandbox.init_pid = None
        for pid in (sandbox.bwrap_pid, sandbox.init_pid):
            if pid is not None:
                with contextlib.suppress(OSError):
                    Path(f"/proc/{pid}/oom_score_adj").write_text("-1000")
        if not sandbox.ready.wait(READY_TIMEOUT):
            raise SandboxStartError(f"sandbox {sandbox.id} did not start: {self._log_tail(sandbox)}")
        sandbox.state = "running"

    @staticmethod
    def _log_tail(sandbox: LinuxSandbox) -> str:
        try:
            return sandbox.layout.log.read_text(errors="replace")[-2000:].strip() or "no output"
        except OSError:
            return "no log"

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

    # -- teardown ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Destroy every sandbox, stop the world and the I/O thread, release the id; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sandboxes = list(self._sandboxes.values())
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
        if self._owns_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
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
