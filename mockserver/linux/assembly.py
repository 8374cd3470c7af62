"""Putting one sandbox together: its network, firewall, cgroups and files, then its bubblewrap and init.

:class:`Assembler` holds what every sandbox of a runtime shares (the world, the I/O thread, the launcher,
the user namespace, the guest code) and :meth:`Assembler.assemble` makes a *generic* sandbox: open egress,
no cgroup limits, a root tmpfs of the default disk size, the given id, folder and hostname. The runtime
then adopts it (id, hostname, env) and applies limits (resizing the tmpfs when asked) and egress, whether it was made on demand or ahead of demand by the warm pool.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import cgroups as cg
from .addresses import MAX_LINKS, link_for
from .channel import Channel, Hub
from .firewall import OPEN_PLAN, Firewall
from .kernel import CLONE_NEWUSER, KernelError, open_tree_clone, unshare
from .launch import Layout, bwrap_command, release_mounts
from .netns import connect_sandbox, create_netns, remove_netns, sandbox_netns_name, world_veth_name, write_sysctls
from .nftables import open_nft
from .records import Limits, SandboxStateError
from .requirements import RuntimeUnavailable
from .sandbox import LinuxSandbox, _Parts
from .spawner import Launcher, LauncherError
from .world import World

__all__ = ["BASE_ENV", "UID_COUNT", "Assembler", "SandboxStartError", "make_userns"]

UID_COUNT = 65536
READY_TIMEOUT = 10.0
SANDBOX_SYSCTLS = {
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


def make_userns(uid_base: int) -> int:
    """Return an fd of a new user namespace owned by ``uid_base`` mapping 0..65535 to it (forks once)."""
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


@dataclass
class Assembler:
    """What the sandboxes of one runtime share, and how one is put together."""

    runtime_id: str
    uid_base: int
    userns_fd: int
    bwrap: str
    python: str
    guest_dir: Path
    guest_entry: str
    world: World
    hub: Hub
    launcher: Launcher
    cgroups: cg.CgroupSupport
    next_index: Callable[[], int]
    on_destroy: Callable[[LinuxSandbox, bool], None]
    disk_bytes: int | None = None

    def assemble(self, sandbox_id: str, base: Path, hostname: str, env: Mapping[str, str]) -> LinuxSandbox:
        """Make and start a sandbox with open egress and no limits; raise SandboxStartError if it fails."""
        index = self.next_index()
        if index >= MAX_LINKS:
            raise SandboxStateError("destroyed", "this runtime has used all its link addresses")
        link = link_for(index)
        name = sandbox_netns_name(self.runtime_id, index)
        layout = Layout(base, self.uid_base, self.uid_base, self.guest_dir, self.guest_entry)
        try:
            sized = layout.create(hostname, self.disk_bytes)
        except BaseException:
            release_mounts(layout.base)
            shutil.rmtree(layout.base, ignore_errors=True)
            raise
        limits = Limits(disk_bytes=self.disk_bytes, enforced=frozenset({"disk"} if sized else ()))
        netns_fd = -1
        cgroup: cg.SandboxCgroup | None = None
        sandbox: LinuxSandbox | None = None
        try:
            netns_fd = create_netns(name)
            write_sysctls(netns_fd, SANDBOX_SYSCTLS)
            assert self.world.netlink is not None
            connect_sandbox(self.world.netlink, netns_fd, world_veth_name(self.runtime_id, index), link)
            firewall = Firewall(open_nft(netns_fd), serve=self.world.ensure_served)
            firewall.apply(OPEN_PLAN)
            if self.cgroups.hierarchies():
                cgroup = cg.SandboxCgroup(self.cgroups, self.runtime_id, f"sbx-{index}")
            parts = _Parts(
                sandbox_id, index, link, name, netns_fd, layout, firewall, cgroup, limits, hostname,
                {**BASE_ENV, "HOSTNAME": hostname, **env}, self.on_destroy,
            )  # fmt: skip
            sandbox = LinuxSandbox(parts)
            self.world.register(link.address, firewall)
            self.launch(sandbox)
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
                release_mounts(layout.base)
                shutil.rmtree(layout.base, ignore_errors=True)
            raise

    def launch(self, sandbox: LinuxSandbox) -> None:
        """Start the sandbox's bubblewrap through the launcher and wait until its init answers."""
        host_end, guest_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        info_r, info_w = os.pipe()
        argv = bwrap_command(
            self.bwrap, sandbox.layout, python=self.python, userns_fd=3, ctl_fd=4, info_fd=5,
            hostname=sandbox.hostname,
        )  # fmt: skip
        log = os.open(sandbox.layout.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        root_fd = -1
        try:
            if self.launcher.private_mounts and "disk" in sandbox.limits.enforced:
                root_fd = open_tree_clone(str(sandbox.layout.root))  # the launcher's mounts predate this one
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
                root=(str(sandbox.layout.root), root_fd) if root_fd >= 0 else None,
            )
        except (LauncherError, KernelError) as exc:
            host_end.close()
            os.close(info_r)
            raise SandboxStartError(f"sandbox {sandbox.id} did not start: {exc}") from exc
        finally:
            os.close(log)
            if root_fd >= 0:
                os.close(root_fd)
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
            raise SandboxStartError(f"sandbox {sandbox.id} did not start: {_log_tail(sandbox)}")
        sandbox.state = "running"


def _log_tail(sandbox: LinuxSandbox) -> str:
    try:
        return sandbox.layout.log.read_text(errors="replace")[-2000:].strip() or "no output"
    except OSError:
        return "no log"
