"""The runtime's side of the launcher process (``standalone/launcher.py``): spawn bubblewrap, learn its exit.

Starting the launcher uses ``subprocess`` without a ``preexec_fn``, so Python spawns it with vfork: cheap
however large the runtime's process is. After that each sandbox start is one request and one reply.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from .standalone import GUEST_DIR
from .standalone.wire import MAX_MESSAGE, pack_request, unpack_event

__all__ = ["Launcher", "LauncherError"]

SCRIPT = GUEST_DIR / "launcher.py"


class LauncherError(RuntimeError):
    """The launcher could not start a process, or is gone."""


class Launcher:
    """A running launcher process; thread-safe."""

    def __init__(self, python: str, *, private_mounts: bool = False) -> None:
        """Start the launcher; ``private_mounts``: in a private copy of the mount namespace (see :meth:`spawn`)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.private_mounts = private_mounts
        self._proc = subprocess.Popen(
            [python, "-S", "-E", "-s", "-B", str(SCRIPT), str(theirs.fileno())]
            + (["--private-mounts"] if private_mounts else []),
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._exits: dict[int, int] = {}
        self._exited = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="sandproof-launcher", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                packet = self._sock.recv(MAX_MESSAGE)
            except OSError:
                packet = b""
            if not packet:
                break
            msg, _ = unpack_event(packet)
            if msg["op"] == "reply":
                future = self._pending.pop(int(msg.get("req") or 0), None)
                if future is not None:
                    future.set_result(msg)
            elif msg["op"] == "exited":
                with self._exited:
                    self._exits[int(msg["pid"])] = int(msg["status"])
                    self._exited.notify_all()
        self._closed = True
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(LauncherError("the launcher is gone"))
        with self._exited:
            self._exited.notify_all()

    def spawn(
        self,
        argv: Sequence[str],
        *,
        netns_fd: int,
        userns_fd: int,
        ctl_fd: int,
        info_fd: int,
        log_fd: int,
        cgroups: Sequence[str],
        uid: int,
        gid: int,
        root: tuple[str, int] | None = None,
        timeout: float = 10.0,
    ) -> int:
        """Start ``argv`` in ``netns_fd`` and ``cgroups`` as ``uid``:``gid`` with fds 3, 4, 5 set; return its pid.

        ``root`` is (path, fd of a detached copy of the mount there, see
        :func:`~mockserver.linux.kernel.open_tree_clone`): the process starts in a mount namespace of its own
        with the copy attached at the path. A launcher with private mounts needs it for every mount made
        after it started that ``argv`` uses (a sandbox's root tmpfs).
        """
        if self._closed:
            raise LauncherError("the launcher is gone")
        req = next(self._ids)
        future: Future[dict[str, Any]] = Future()
        self._pending[req] = future
        header = {"op": "spawn", "req": req, "argv": list(argv), "uid": uid, "gid": gid, "cgroups": list(cgroups)}
        fds = [netns_fd, userns_fd, ctl_fd, info_fd, log_fd]
        if root is not None:
            header["root"] = root[0]
            fds.append(root[1])
        with self._lock:
            socket.send_fds(self._sock, [pack_request(header)], fds)
        reply = future.result(timeout)
        if "error" in reply:
            raise LauncherError(str(reply["error"]))
        return int(reply["pid"])

    def wait(self, pid: int, timeout: float | None = None) -> int | None:
        """Wait for process ``pid`` (one this launcher started) to end; return its wait status (None: timeout)."""
        with self._exited:
            self._exited.wait_for(lambda: pid in self._exits or self._closed, timeout)
            return self._exits.pop(pid, None)

    def close(self) -> None:
        """Stop the launcher (processes it started get SIGKILL through --die-with-parent)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=2)

    @property
    def pid(self) -> int:
        """Return the launcher's pid."""
        return self._proc.pid

    def alive(self) -> bool:
        """Tell whether the launcher still runs."""
        return self._proc.poll() is None and not self._closed
