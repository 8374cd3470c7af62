"""The runtime's launcher: a small host process that forks bubblewrap for each new sandbox.

Forking costs time in proportion to the forking process's memory, and the runtime lives in large
processes (test runners, servers with SDKs loaded). This process stays small, so a fork costs well under a
millisecond. Run as ``python3 -S -E -s -B launcher.py <fd>`` by root; ``<fd>`` is its end of a
SOCK_SEQPACKET socket to the runtime. It dies with the runtime (``PR_SET_PDEATHSIG``), and bubblewrap's
``--die-with-parent`` then ends every sandbox.

Request ``spawn`` {req, argv, uid, gid, cgroups: [cgroup.procs paths]} carries four fds (SCM_RIGHTS): the
network namespace to join, then the fds that become 3, 4 and 5 in the child (bubblewrap's user namespace,
the init socket and the info pipe), and a fifth that becomes stdout and stderr (the init log). The child
joins the namespace and the cgroups, drops to ``uid``/``gid`` and execs ``argv``. Reply {req, pid} or
{req, error}; later ``exited`` {pid, status} when bubblewrap ends. The launcher is a child subreaper, so a
sandbox process orphaned by a dying bubblewrap is reaped here, never left to the host's init.
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
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_FDS = 5


def _child(msg: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: enter the namespace and cgroups, drop privileges, exec bubblewrap."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fds[0], CLONE_NEWNET) != 0:
            os._exit(120)
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
            packet, fds, _flags, _addr = socket.recv_fds(ctl, MAX_MESSAGE, _FDS)
            if not packet:
                os._exit(0)
            msg, _ = unpack_request(packet)
            reply: dict[str, Any] = {"op": "reply", "req": msg.get("req")}
            if msg["op"] == "spawn" and len(fds) == _FDS:
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
