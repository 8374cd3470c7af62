"""PID 1 of a sandbox: start processes for the runtime, relay their output, stdin and signals, report exits.

Run as ``python3 -S -E -s -B /.sandproof/init.py <fd>`` inside bubblewrap, where ``<fd>`` is this end of
the runtime's SOCK_SEQPACKET socket (read and written with plain ``read``/``write``: one call, one message).
It imports only modules built into the interpreter or tiny C extensions, so it starts in ~10 ms. One
single-threaded ``epoll`` loop serves the socket, every child's pipes or PTY master, the SIGCHLD wake-up
pipe and the timeouts; no thread and no helper process.

Requests (runtime -> init; ``req`` is echoed in the reply of those that have one):

* ``spawn`` {id, argv, env, cwd, stdin: "pipe"|"null", pty: {rows, cols}|None, timeout: s|None} -> reply
  {pid} or {error: "cwd"|"exec"|"setup", errno, message}. Each process leads its own session and process
  group; with ``pty`` its controlling terminal is a new PTY whose master carries stdin and output.
* ``stdin`` {id} + payload, ``stdin_close`` {id} (a PTY gets ^D), ``resize`` {id, rows, cols}: no reply.
* ``credit`` {id, bytes}: no reply; the runtime has taken ``bytes`` more of the process's output.
* ``signal`` {id, signal, group} -> reply {ok}: to the process group when ``group``.
* ``ping`` -> reply {pid, children}.

Events (init -> runtime): ``ready`` {pid}; ``out`` {id, stream: stdout|stderr|pty} + payload; ``exit`` {id,
code, signal, timed_out}. Output is flow-controlled: at most :data:`WINDOW` bytes of a process's output go
out before the runtime sends ``credit`` for them; without credit its pipes are not read (the process
blocks on a full pipe), so a flood goes no faster than the runtime takes it. A process's ``exit`` follows
all of its output: once the process itself has
ended, init waits up to :data:`DRAIN_GRACE` seconds for its pipes to close (they stay open while a
background child it left behind holds them); later output of such children is read and dropped, so they
never see a broken pipe. A timeout kills the whole process group with SIGKILL. Orphans are reaped.
When the runtime's end of the socket closes, init kills every process and exits, ending the sandbox.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module: signal.py would import enum
import errno
import fcntl
import os
import select
import struct
import sys
import termios
import time

STARTED = time.monotonic()  # reported in ``ready``, to see how long the start took
TYPE_CHECKING = False  # typing itself would cost tens of milliseconds at every start
if TYPE_CHECKING:
    from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wire import CHUNK, MAX_MESSAGE, pack_event, unpack_request  # type: ignore[import-not-found]  # noqa: E402

DRAIN_GRACE = 0.05
WINDOW = 1024 * 1024  # the runtime's ``mockserver.linux.process.WINDOW``
SIGKILL = 9
_RESET = ("SIGCHLD", "SIGPIPE", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGXFSZ", "SIGUSR1", "SIGUSR2")
_IGNORE = ("SIGTERM", "SIGINT", "SIGHUP", "SIGPIPE")
_READ = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
_WRITE = select.EPOLLOUT


class Child:
    """One process the runtime asked for, and its pipes."""

    def __init__(self, ident: int, pid: int, outputs: dict[int, str], stdin_fd: int | None, timeout: Any) -> None:
        self.ident = ident
        self.pid = pid
        self.outputs = outputs
        self.stdin_fd = stdin_fd
        self.tty = "pty" in outputs.values()
        self.pending = b""
        self.close_stdin = False
        self.deadline: float | None = time.monotonic() + float(timeout) if timeout else None
        self.timed_out = False
        self.status: int | None = None
        self.drain_until: float | None = None
        self.reported = False
        self.credit = WINDOW

    @property
    def readable(self) -> bool:
        """Tell whether its output may be read now (credit left, or already reported: read and dropped)."""
        return self.credit > 0 or self.reported


def _set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _exec_child(argv: list[str], env: dict[str, str], cwd: str, fds: tuple[int, int, int], tty: bool, err: int) -> None:
    """Become the requested program (in the forked child); report a failure on ``err`` and exit 127."""
    stage = "setup"
    try:
        _signal.set_wakeup_fd(-1)
        for name in _RESET:
            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, [])
        os.setsid()
        if tty:
            fcntl.ioctl(fds[0], termios.TIOCSCTTY, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        stage = "cwd"
        os.chdir(cwd)
        stage = "exec"
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(err, f"{stage} {exc.errno or 0}".encode())
    except BaseException:
        os.write(err, f"{stage} 0".encode())
    os._exit(127)


class Init:
    """The loop of PID 1."""

    def __init__(self, ctl: int) -> None:
        self.ctl = ctl
        self.poll = select.epoll()
        self.children: dict[int, Child] = {}
        self.by_pid: dict[int, Child] = {}
        self.fd_owner: dict[int, Child] = {}
        self.masks: dict[int, int] = {}
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self.wake_r = wake_r
        _signal.set_wakeup_fd(wake_w)
        _signal.signal(_signal.SIGCHLD, lambda _signum, _frame: None)
        for name in _IGNORE:
            _signal.signal(getattr(_signal, name), _signal.SIG_IGN)
        self.poll.register(ctl, _READ)
        self.poll.register(wake_r, _READ)

    def send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        """Send one message to the runtime (blocking)."""
        os.write(self.ctl, pack_event(header, payload))

    def _watch(self, fd: int) -> None:
        """(Re)register ``fd`` for what its child needs: output to read, stdin to write."""
        child = self.fd_owner.get(fd)
        mask = 0
        if child is not None:
            if fd in child.outputs and child.readable:
                mask |= _READ
            if fd == child.stdin_fd and child.pending:
                mask |= _WRITE
        old = self.masks.get(fd)
        if old == mask:
            return
        if old is None:
            if mask:
                self.poll.register(fd, mask)
                self.masks[fd] = mask
        elif not mask:
            self.poll.unregister(fd)
            del self.masks[fd]
        else:
            self.poll.modify(fd, mask)
            self.masks[fd] = mask

    def _release(self, child: Child, fd: int) -> None:
        child.outputs.pop(fd, None)
        if child.stdin_fd == fd:
            child.stdin_fd = None
        self._watch(fd)
        if fd not in child.outputs and child.stdin_fd != fd:
            self.fd_owner.pop(fd, None)
            os.close(fd)

    # -- requests ----------------------------------------------------------------------------------

    def spawn(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Start a process; return the reply."""
        argv = [str(a) for a in msg["argv"]]
        env = {str(k): str(v) for k, v in (msg.get("env") or {}).items()}
        cwd = str(msg.get("cwd") or "/")
        pty = msg.get("pty")
        close_after: list[int] = []
        stdin_fd: int | None
        if pty:
            master, slave = os.openpty()
            _set_winsize(master, int(pty.get("rows") or 24), int(pty.get("cols") or 80))
            fds = (slave, slave, slave)
            outputs = {master: "pty"}
            stdin_fd = master
            close_after.append(slave)
        else:
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            if msg.get("stdin") == "pipe":
                in_r, in_w = os.pipe()
                stdin_fd = in_w
            else:
                in_r, stdin_fd = os.open(os.devnull, os.O_RDONLY), None
            fds = (in_r, out_w, err_w)
            outputs = {out_r: "stdout", err_r: "stderr"}
            close_after += [in_r, out_w, err_w]
        report_r, report_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _exec_child(argv, env, cwd, fds, bool(pty), report_w)
        os.close(report_w)
        for fd in close_after:
            os.close(fd)
        failure = b""
        while chunk := os.read(report_r, 64):
            failure += chunk
        os.close(report_r)
        mine = {*outputs, *([stdin_fd] if stdin_fd is not None else [])}
        if failure:
            os.waitpid(pid, 0)
            for fd in mine:
                os.close(fd)
            stage, _, code = failure.decode().partition(" ")
            number = int(code or 0)
            return {"error": stage, "errno": number, "message": os.strerror(number) if number else "setup failed"}
        child = Child(int(msg["id"]), pid, outputs, stdin_fd, msg.get("timeout"))
        self.children[child.ident] = child
        self.by_pid[pid] = child
        for fd in mine:
            os.set_blocking(fd, False)
            self.fd_owner[fd] = child
            self._watch(fd)
        return {"pid": pid}

    def handle(self, msg: dict[str, Any], payload: bytes) -> None:
        """Serve one request."""
        op = msg["op"]
        child = self.children.get(int(msg.get("id", -1)))
        reply: dict[str, Any] | None = None
        if op == "spawn":
            try:
                reply = self.spawn(msg)
            except (OSError, KeyError, TypeError, ValueError) as exc:
                reply = {"error": "setup", "errno": getattr(exc, "errno", 0) or 0, "message": str(exc)}
        elif op == "stdin" and child is not None and child.stdin_fd is not None and not child.close_stdin:
            child.pending += payload
            self._flush_stdin(child)
        elif op == "stdin_close" and child is not None and child.stdin_fd is not None and not child.close_stdin:
            if child.tty:
                child.pending += b"\x04"  # a terminal's end of input
            child.close_stdin = True
            self._flush_stdin(child)
        elif op == "credit" and child is not None:
            paused = not child.readable
            child.credit += int(msg["bytes"])
            if paused and child.readable:
                for fd in list(child.outputs):
                    self._watch(fd)
        elif op == "resize" and child is not None and child.stdin_fd is not None and child.tty:
            _set_winsize(child.stdin_fd, int(msg["rows"]), int(msg["cols"]))
        elif op == "signal":
            reply = {"ok": self.signal(child, int(msg["signal"]), bool(msg.get("group", True)))}
        elif op == "ping":
            reply = {"pid": os.getpid(), "children": len(self.by_pid)}
        if reply is not None:
            reply["op"], reply["req"] = "reply", msg.get("req")
            self.send(reply)

    def signal(self, child: Child | None, signum: int, group: bool) -> bool:
        """Send ``signum`` to a running child (its whole group when ``group``); tell whether it was sent."""
        if child is None or child.status is not None:
            return False
        try:
            if group:
                os.killpg(child.pid, signum)
            else:
                os.kill(child.pid, signum)
        except ProcessLookupError:
            return False
        return True

    def _flush_stdin(self, child: Child) -> None:
        fd = child.stdin_fd
        if fd is None:
            return
        while child.pending:
            try:
                written = os.write(fd, child.pending[:CHUNK])
            except BlockingIOError:
                break
            except OSError:
                child.pending = b""
                break
            child.pending = child.pending[written:]
        if child.close_stdin and not child.pending and not child.tty:
            self._release(child, fd)
        else:
            self._watch(fd)

    # -- events ------------------------------------------------------------------------------------

    def _read_output(self, child: Child, fd: int) -> None:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:  # EIO: every holder of the PTY's other side has gone
            if exc.errno != errno.EIO:
                raise
            data = b""
        if not data:
            self._release(child, fd)
            self._maybe_finish(child)
            return
        if not child.reported:
            self.send({"op": "out", "id": child.ident, "stream": child.outputs[fd]}, data)
            child.credit -= len(data)
            if not child.readable:
                for out in list(child.outputs):
                    self._watch(out)

    def reap(self) -> None:
        """Collect every ended child (ours and orphans)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.by_pid.pop(pid, None)
            if child is not None:
                child.status = status
                child.drain_until = time.monotonic() + DRAIN_GRACE
                self._maybe_finish(child)

    def _maybe_finish(self, child: Child, force: bool = False) -> None:
        if child.reported or child.status is None or (child.outputs and not force):
            return
        child.reported = True
        status = child.status
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        self.send({"op": "exit", "id": child.ident, "code": code, "signal": signum, "timed_out": child.timed_out})
        if child.stdin_fd is not None and not child.tty:
            self._release(child, child.stdin_fd)
        self.children.pop(child.ident, None)  # pipes a background process still holds stay in fd_owner

    def _timers(self) -> float:
        now = time.monotonic()
        nearest: float | None = None
        for child in list(self.children.values()):
            if child.deadline is not None and child.status is None:
                if now >= child.deadline:
                    child.timed_out = True
                    child.deadline = None
                    self.signal(child, SIGKILL, True)
                else:
                    nearest = child.deadline if nearest is None else min(nearest, child.deadline)
            if child.drain_until is not None and not child.reported:
                if not child.readable:  # output waits for credit: the grace runs from when it is read again
                    child.drain_until = now + DRAIN_GRACE
                elif now >= child.drain_until:
                    self._maybe_finish(child, force=True)
                else:
                    nearest = child.drain_until if nearest is None else min(nearest, child.drain_until)
        return -1.0 if nearest is None else max(0.0, nearest - now)

    def shutdown(self) -> None:
        """Kill every process (the runtime has gone) and exit."""
        try:  # noqa: SIM105 - contextlib costs the init's start time
            os.kill(-1, SIGKILL)  # as PID 1: every other process of the namespace
        except OSError:
            pass
        os._exit(0)

    def run(self) -> None:
        """Serve until the runtime closes the socket."""
        self.send({"op": "ready", "pid": os.getpid(), "started": STARTED, "now": time.monotonic()})
        while True:
            try:
                events = self.poll.poll(self._timers())
            except InterruptedError:
                continue
            for fd, mask in events:
                if fd == self.ctl:
                    packet = os.read(self.ctl, MAX_MESSAGE)
                    if not packet:
                        self.shutdown()
                    msg, payload = unpack_request(packet)
                    self.handle(msg, payload)
                elif fd == self.wake_r:
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                    self.reap()
                else:
                    owner = self.fd_owner.get(fd)
                    if owner is None:
                        continue
                    if mask & _WRITE:
                        self._flush_stdin(owner)
                    if mask & _READ and fd in owner.outputs:
                        self._read_output(owner, fd)


def main(argv: list[str]) -> None:
    """Serve the runtime on the socket whose fd is ``argv[1]``."""
    ctl = int(argv[1])
    os.set_inheritable(ctl, False)
    # Bubblewrap leaves its --userns fd (3) and --info-fd open: no process of the sandbox may inherit them.
    os.closerange(3, ctl)
    os.closerange(ctl + 1, 65536)
    Init(ctl).run()


if __name__ == "__main__":
    main(sys.argv)
