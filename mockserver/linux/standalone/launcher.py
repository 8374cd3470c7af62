"""The runtime's launcher: a small host process that forks bubblewrap for each new sandbox.

Forking costs time in proportion to the forking process's memory, and the runtime lives in large
processes (test runners, servers with SDKs loaded). This process stays small, so a fork costs well under a
millisecond. Run as ``python3 -S -E -s -B launcher.py <fd>`` by root; ``<fd>`` is its end of a
SOCK_SEQPACKET socket to the runtime. It dies with the runtime (``PR_SET_PDEATHSIG``), and bubblewrap's
``--die-with-parent`` then ends every sandbox.

Request ``spawn`` {req, argv, uid, gid, cgroups: [cgroup.procs paths]} carries four fds (SCM_RIGHTS): the
network namespace to join, then the fds that become 3, 4 and 5 in the child (bubblewrap's user namespace,
the init socket and the info pipe), and a fifth that becomes stdout and stderr (the init log). The child
joins the namespace and the cgroups, drops to ``uid``/``gid`` and execs ``argv``. With ``root`` (a path) the
request carries a sixth fd, a detached copy of the sandbox's root mount (``open_tree``): the child takes a
mount namespace of its own and attaches the copy at ``root`` before bubblewrap starts. Reply {req, pid} or
{req, error}; later ``exited`` {pid, status} when bubblewrap ends. The launcher is a child subreaper, so a
sandbox process orphaned by a dying bubblewrap is reaped here, never left to the host's init.

Run with ``--private-mounts`` the launcher first takes a private copy of the host's mount namespace: the
mounts the runtime makes later (every sandbox's root tmpfs, every network namespace's name) stay out of it,
so bubblewrap, which copies its parent's mount table and takes it apart again at every start and exit,
handles the same few mounts however many sandboxes are live. Each sandbox's root reaches its own child
through the sixth fd above.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import selectors
import signal
import socket
import sys

TYPE_CHECKING = False  # typing itself would cost tens of milliseconds at every start
if TYPE_CHECKING:
    from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wire import MAX_MESSAGE, pack_event, unpack_request  # type: ignore[import-not-found]  # noqa: E402

CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
SYS_MOVE_MOUNT = 429  # the same number on every architecture
AT_FDCWD = -100
MOVE_MOUNT_F_EMPTY_PATH = 0x4
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_FDS = 5


def _child(msg: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: enter the namespace and cgroups, drop privileges, exec bubblewrap."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fds[0], CLONE_NEWNET) != 0:
            os._exit(120)
        if msg.get("root"):
            if libc.unshare(CLONE_NEWNS) != 0:
                os._exit(122)
            where = ctypes.c_char_p(str(msg["root"]).encode())
            empty, here = ctypes.c_char_p(b""), ctypes.c_int(AT_FDCWD)
            flags = ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)
            if libc.syscall(ctypes.c_long(SYS_MOVE_MOUNT), ctypes.c_int(fds[5]), empty, here, where, flags) != 0:
                os._exit(123)
        pid = str(os.getpid()).encode()
        for path in msg.get("cgroups") or []:
            fd = os.open(path, os.O_WRONLY)
            os.write(fd, pid)
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        plan = {0: null, 1: fds[4], 2: fds[4], 3: fds[1], 4: fds[2], 5: fds[3]}
        moved = {source: fcntl.fcntl(source, fcntl.F_DUPFD, 64) for source in set(plan.values())}
        for target, source in plan.items():
            os.dup2(moved[source], target, inheritable=True)
        os.closerange(6, 65536)
        for signum in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        gid, uid = int(msg["gid"]), int(msg["uid"])
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        argv = [str(a) for a in msg["argv"]]
        os.execv(argv[0], argv)
    except BaseException:
        pass
    os._exit(121)


def main(argv: list[str]) -> None:
    """Serve spawn requests until the runtime closes the socket."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1)  # whatever bubblewrap leaves is ours to reap, not the host's init
    if os.getppid() == 1:
        os._exit(0)
    # If the kernel refuses, the launcher stays in the host's mounts: slower starts, the same sandboxes (each
    # child still attaches its root in a mount namespace of its own).
    if "--private-mounts" in argv[2:] and libc.unshare(CLONE_NEWNS) == 0:
        libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    ctl = socket.socket(fileno=int(argv[1]))
    os.set_inheritable(ctl.fileno(), False)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ, "ctl")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    while True:
        for key, _ in sel.select():
            if key.data == "wake":
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                while True:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    ctl.send(pack_event({"op": "exited", "pid": pid, "status": status}))
                continue
            packet, fds, _flags, _addr = socket.recv_fds(ctl, MAX_MESSAGE, _FDS + 1)
            if not packet:
                os._exit(0)
            msg, _ = unpack_request(packet)
            reply: dict[str, Any] = {"op": "reply", "req": msg.get("req")}
            if msg["op"] == "spawn" and len(fds) == _FDS + (1 if msg.get("root") else 0):
                try:
                    pid = os.fork()
                except OSError as exc:
                    reply["error"] = str(exc)
                else:
                    if pid == 0:
                        _child(msg, fds)
                    reply["pid"] = pid
            else:
                reply["error"] = f"bad request {msg['op']!r} with {len(fds)} fds"
            for fd in fds:
                os.close(fd)
            ctl.send(pack_event(reply))


if __name__ == "__main__":
    main(sys.argv)
