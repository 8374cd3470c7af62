"""One running sandbox, seen from the host: processes, PTYs, freeze/thaw, files, ports, firewall, destroy.

A :class:`LinuxSandbox` is made by :meth:`mockserver.linux.runtime.LinuxRuntime.create_sandbox`. Every
method is thread-safe and quick: starting a process is one request to the sandbox's init and one reply
(no process is started on the host per command), output and exits stream back through the runtime's I/O
thread. Blocking methods have ``*_async`` twins for event loops.

Errors: :class:`SpawnError` when a process cannot start (``code`` is ``cwd_not_found``, ``not_found``,
``permission_denied`` or ``exec_failed``); :class:`SandboxStateError` when the sandbox is frozen or gone.

Known deviations: a process's exit is reported 50 ms after it ends at the latest even while a background
child it left behind still holds its stdout (that child's later output is read and dropped); requests to a
paused sandbox are refused (``SandboxStateError``) rather than queued; pausing without a cgroup freezer
stops processes with SIGSTOP, which they could observe.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .addresses import Link
from .cgroups import SandboxCgroup
from .channel import Channel, ChannelClosed
from .confine import Confinement
from .firewall import Firewall
from .kernel import CLONE_NEWUTS, enter_ns
from .launch import Layout
from .process import Exited, LinuxProcess, OutputChunk, StreamName
from .records import Limits, RunResult, SandboxStateError, SpawnError, Usage, spawn_error

__all__ = ["Limits", "LinuxSandbox", "RunResult", "SandboxState", "SandboxStateError", "SpawnError", "Usage"]

SandboxState = Literal["starting", "running", "frozen", "destroyed"]
SPAWN_TIMEOUT = 10.0
#: Seconds a signal waits for the init to confirm it (an init that does not read is not waited for).
SIGNAL_REPLY_WAIT = 0.5
_STREAMS: frozenset[str] = frozenset({"stdout", "stderr", "pty"})


@dataclass
class _Parts:
    """What the runtime made for the sandbox before starting it."""

    sandbox_id: str
    index: int
    link: Link
    netns_name: str
    netns_fd: int
    layout: Layout
    firewall: Firewall
    cgroup: SandboxCgroup | None
    limits: Limits
    hostname: str
    env: dict[str, str]
    on_destroy: Callable[[LinuxSandbox, bool], None] = field(default=lambda _sb, _rm: None)


def _task_state(pid: int) -> str | None:
    """Return the one-letter state of host process ``pid`` (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _cannot_run(pid: int) -> bool:
    """Tell whether host process ``pid`` cannot run: stopped, dead, or waiting for a ``vfork`` child.

    A shell that ``vfork``s (dash does) waits uninterruptibly ("D", in ``kernel_clone``) until its child
    execs or exits; with the child stopped it cannot run either, and the SIGSTOP it was sent stops it the
    moment the child lets it go.
    """
    state = _task_state(pid)
    if state in ("T", "t", "Z", "X", None):
        return True
    if state != "D":
        return False
    try:
        with open(f"/proc/{pid}/wchan") as handle:
            return handle.read().strip() in ("kernel_clone", "wait_for_vfork_done", "_do_fork", "do_fork")
    except OSError:
        return False


class LinuxSandbox:
    """A sandbox: bubblewrap namespaces around an init we talk to over a socket."""

    def __init__(self, parts: _Parts) -> None:
        self.id = parts.sandbox_id
        self.index = parts.index
        self.link = parts.link
        self.netns_name = parts.netns_name
        self.netns_fd = parts.netns_fd
        self.layout = parts.layout
        self.files = Confinement(parts.layout.mounts())
        self.firewall = parts.firewall
        self.cgroup = parts.cgroup
        self.limits = parts.limits
        self.hostname = parts.hostname
        self.env = dict(parts.env)
        self.state: SandboxState = "starting"
        self.bwrap_pid: int | None = None
        self.init_pid: int | None = None
        self.channel: Channel | None = None
        self.ready = threading.Event()
        self.frozen_by: Literal["cgroup", "signals"] | None = None
        self._on_destroy = parts.on_destroy
        self._lock = threading.RLock()
        self._processes: dict[int, LinuxProcess] = {}
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"LinuxSandbox({self.id!r}, state={self.state}, address={self.link.address})"

    @property
    def address(self) -> str:
        """Return the sandbox's address on its link to the world."""
        return self.link.address

    # -- identity ----------------------------------------------------------------------------------

    def set_hostname(self, hostname: str) -> None:
        """Give the sandbox a new hostname: its UTS namespace, ``/etc/hostname``, ``/etc/hosts`` and ``HOSTNAME``."""
        if self.init_pid is not None:
            fd = os.open(f"/proc/{self.init_pid}/ns/uts", os.O_RDONLY | os.O_CLOEXEC)
            try:
                with enter_ns(fd, CLONE_NEWUTS):
                    socket.sethostname(hostname)
            finally:
                os.close(fd)
        for name, text in self.layout.etc_files(hostname).items():
            with open(self.layout.etc / name, "r+") as handle:  # in place: the sandbox has the inode mounted
                handle.write(text)
                handle.truncate()
        self.hostname = hostname
        self.env["HOSTNAME"] = hostname

    def adopt(self, sandbox_id: str, base: Path, hostname: str, env: Mapping[str, str]) -> None:
        """Turn a sandbox started ahead of demand into ``sandbox_id`` (runtime use): folder, hostname, env."""
        self.layout.base.rename(base)  # the mounts hold the inodes, not the path
        self.layout = replace(self.layout, base=base)
        self.files = Confinement(self.layout.mounts())
        self.id = sandbox_id
        self.env = dict(env)
        self.set_hostname(hostname)

    # -- events from the I/O thread ----------------------------------------------------------------

    def on_event(self, header: dict[str, Any], payload: bytes) -> None:
        """Route an init event (runtime use)."""
        op = header["op"]
        if op == "ready":
            self.ready.set()
            return
        proc = self._processes.get(int(header.get("id", 0)))
        if proc is None:
            return
        if op == "out" and header.get("stream") in _STREAMS:
            stream: StreamName = header["stream"]
            proc.publish(OutputChunk(stream, payload))
        elif op == "exit":
            code, signum = header.get("code"), header.get("signal")
            killed = signum == signal.SIGKILL or code == 128 + signal.SIGKILL  # itself, or a shell's child
            oom = killed and self.cgroup is not None and self.cgroup.new_oom_kill()
            proc.publish(Exited(code, signum, bool(header.get("timed_out")), oom))
            with self._lock:
                self._processes.pop(proc.ident, None)

    def on_close(self) -> None:
        """The init is gone: every process still running is reported killed (runtime use)."""
        with self._lock:
            procs, self._processes = list(self._processes.values()), {}
        oom = self.cgroup is not None and self.cgroup.new_oom_kill()
        for proc in procs:
            proc.publish(Exited(None, signal.SIGKILL, oom_killed=oom, lost=True))

    # -- processes ---------------------------------------------------------------------------------

    def _check(self) -> Channel:
        if self.state == "destroyed" or self.channel is None or self.channel.closed:
            raise SandboxStateError("destroyed", f"sandbox {self.id} is gone")
        if self.state == "frozen":
            raise SandboxStateError("frozen", f"sandbox {self.id} is paused")
        return self.channel

    def _spawn(
        self,
        command: str | Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str,
        stdin: bool,
        pty: tuple[int, int] | None,
        timeout: float | None,
    ) -> tuple[LinuxProcess, Future[dict[str, Any]]]:
        channel = self._check()
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise SpawnError("exec_failed", "empty command")
        full_env = {**self.env, **({"TERM": "xterm-256color"} if pty else {}), **(env or {})}
        ident = next(self._ids)
        proc = LinuxProcess(ident, argv, pty=pty is not None, stdin=stdin, send=channel.send, signal=self._signal)
        with self._lock:
            self._processes[ident] = proc
        request: dict[str, Any] = {
            "op": "spawn",
            "id": ident,
            "argv": argv,
            "env": full_env,
            "cwd": cwd or "/",
            "stdin": "pipe" if stdin else "null",
            "pty": {"rows": pty[0], "cols": pty[1]} if pty else None,
            "timeout": timeout if timeout and timeout > 0 else None,
        }
        return proc, channel.request(request)

    def _started(self, proc: LinuxProcess, reply: Mapping[str, Any], cwd: str) -> LinuxProcess:
        if "error" in reply:
            with self._lock:
                self._processes.pop(proc.ident, None)
            raise spawn_error(reply, proc.argv, cwd)
        proc.pid = int(reply["pid"])
        return proc

    def start_process(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bool = False,
        pty: tuple[int, int] | None = None,
        timeout: float | None = None,
    ) -> LinuxProcess:
        """Start ``command`` (a shell line for ``/bin/sh -c``, or an argv) and return its handle.

        ``stdin=True`` gives it a pipe (see :meth:`LinuxProcess.write_stdin`), else ``/dev/null``; ``pty=(rows,
        cols)`` runs it on a new terminal instead (one ``pty`` stream, input through stdin). ``timeout``
        seconds after the start the init kills its process group (``Exited.timed_out``).
        """
        proc, future = self._spawn(command, env, cwd, stdin, pty, timeout)
        try:
            reply = future.result(SPAWN_TIMEOUT)
        except ChannelClosed as exc:
            raise SandboxStateError("destroyed", f"sandbox {self.id} is gone") from exc
        return self._started(proc, reply, cwd)

    async def start_process_async(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bool = False,
        pty: tuple[int, int] | None = None,
        timeout: float | None = None,
    ) -> LinuxProcess:
        """:meth:`start_process` without blocking the event loop."""
        proc, future = self._spawn(command, env, cwd, stdin, pty, timeout)
        try:
            reply = await asyncio.wait_for(asyncio.wrap_future(future), SPAWN_TIMEOUT)
        except ChannelClosed as exc:
            raise SandboxStateError("destroyed", f"sandbox {self.id} is gone") from exc
        return self._started(proc, reply, cwd)

    def pty(
        self,
        command: str | Sequence[str] = ("/bin/bash", "-i"),
        *,
        rows: int = 24,
        cols: int = 80,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
    ) -> LinuxProcess:
        """Start ``command`` on a new PTY of ``rows`` x ``cols``."""
        return self.start_process(command, env=env, cwd=cwd, pty=(rows, cols))

    def run(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> RunResult:
        """Run ``command`` to completion (feeding ``stdin``) and return its output and status."""
        proc = self.start_process(command, env=env, cwd=cwd, stdin=stdin is not None, timeout=timeout)
        if stdin is not None:
            proc.write_stdin(stdin)
            proc.close_stdin()
        status = proc.wait()
        assert status is not None
        return RunResult(proc.output("stdout"), proc.output("stderr"), status)

    def processes(self) -> list[LinuxProcess]:
        """Return the processes still running."""
        with self._lock:
            return list(self._processes.values())

    def _signal(self, ident: int, signum: int, group: bool) -> bool:
        """Signal a process through the init: False when the sandbox is gone; SandboxStateError when paused."""
        if self.state == "destroyed" or self.channel is None or self.channel.closed:
            return False
        channel = self._check()
        future = channel.request({"op": "signal", "id": ident, "signal": int(signum), "group": group})
        if channel.queued:  # the init is not reading (stopped): the signal goes when it reads again
            return True
        try:
            reply = future.result(SIGNAL_REPLY_WAIT)
        except ChannelClosed:
            return False
        except TimeoutError:  # the init does not answer now; the request stays queued for it
            return True
        return bool(reply.get("ok"))

    @property
    def alive(self) -> bool:
        """Tell whether the sandbox's init still answers (False once destroyed, or if the init died)."""
        return self.state != "destroyed" and self.channel is not None and not self.channel.closed

    def ping(self, timeout: float = 5.0) -> dict[str, Any]:
        """Round-trip to the init; return its reply (``pid``, ``children``)."""
        return self._check().call({"op": "ping"}, timeout)

    # -- pause and resume --------------------------------------------------------------------------

    def host_pids(self) -> list[int]:
        """Return the host pids of every process in the sandbox's PID namespace."""
        if self.init_pid is None:
            return []
        try:
            target = os.readlink(f"/proc/{self.init_pid}/ns/pid")
        except OSError:
            return []
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry}/ns/pid") == target:
                        pids.append(int(entry))
        return pids

    def usage(self) -> Usage:
        """Return the CPU time, memory (cgroup figure where there is one, else resident set) and process count."""
        ticks, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
        cpu, resident, count = 0.0, 0, 0
        for pid in self.host_pids():
            try:
                with open(f"/proc/{pid}/stat") as stat_file:
                    fields = stat_file.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/statm") as statm_file:
                    pages = int(statm_file.read().split()[1])
            except (OSError, IndexError, ValueError):
                continue
            cpu += (int(fields[11]) + int(fields[12])) / ticks
            resident += pages * page
            count += 1
        memory = self.cgroup.memory_usage() if self.cgroup is not None else None
        return Usage(cpu, memory if memory is not None else resident, count, os.cpu_count() or 1)

    def freeze(self) -> None:
        """Stop every process of the sandbox (the cgroup freezer, else SIGSTOP); idempotent."""
        with self._lock:
            if self.state == "frozen":
                return
            self._check()
            if self.cgroup is not None and self.cgroup.freeze(True):
                self.frozen_by = "cgroup"
            else:
                self._stop_all()
                self.frozen_by = "signals"
            self.state = "frozen"

    def _stop_all(self, timeout: float = 10.0) -> None:
        """SIGSTOP every process until two scans in a row find the same processes, all of them stopped.

        One scan is not enough: it lists the processes first and reads their states after, so a child forked
        by a process between the listing and that process's stop is missed, and it runs on. Once every
        listed process is seen stopped nothing can fork any more, so a later listing that shows no process
        the first one did not is complete. The later listing waits a few milliseconds: a task being forked
        is in ``/proc`` before its namespace links can be read, so a listing made at once can miss it too.
        A parent waiting for a stopped ``vfork`` child counts as stopped (see :func:`_cannot_run`).
        """
        deadline = time.monotonic() + timeout
        stopped: set[int] | None = None
        while True:
            pids = self.host_pids()
            running = [pid for pid in pids if not _cannot_run(pid)]
            if not running:
                if stopped is not None and set(pids) <= stopped:
                    return
                stopped = set(pids)
                time.sleep(0.005)
                continue
            stopped = None
            if time.monotonic() > deadline:
                return
            for pid in running:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            time.sleep(0.001)

    def thaw(self) -> None:
        """Let a frozen sandbox run again; idempotent."""
        with self._lock:
            if self.state != "frozen":
                return
            if self.frozen_by == "cgroup" and self.cgroup is not None:
                self.cgroup.freeze(False)
            else:
                for pid in self.host_pids():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
            self.frozen_by = None
            self.state = "running"

    # -- files -------------------------------------------------------------------------------------

    def host_path(self, path: str, *, write: bool = False, cwd: str = "/") -> Path:
        """Return the host file behind sandbox ``path``, confined to the sandbox's view (see ``confine``)."""
        return self.files.host_path(path, cwd=cwd, write=write)

    def read_file(self, path: str) -> bytes:
        """Return the contents of regular file ``path`` (opened race-free; a FIFO or socket is ENXIO)."""
        fd = _regular(self.files.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY), path)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def write_file(self, path: str, data: bytes, *, mode: int = 0o644, uid: int = 0, gid: int = 0) -> None:
        """Write regular file ``path`` (created or truncated), owned by sandbox user ``uid``:``gid``."""
        fd = _regular(self.files.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, mode), path)
        with os.fdopen(fd, "wb") as handle:
            os.ftruncate(fd, 0)
            os.fchown(handle.fileno(), self.layout.uid + uid, self.layout.gid + gid)
            handle.write(data)

    def make_dirs(self, path: str, *, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        """Create sandbox directory ``path`` and its missing parents, owned by sandbox user ``uid``:``gid``."""
        self.files.make_dirs(path, mode, (self.layout.uid + uid, self.layout.gid + gid))

    # -- teardown ----------------------------------------------------------------------------------

    def destroy(self, *, remove_files: bool = True) -> None:
        """Kill every process, remove the namespaces, cgroups and (by default) the files; idempotent.

        The files go in the background: the state directory is renamed away at once and deleted later.
        """
        with self._lock:
            if self.state == "destroyed":
                return
            was_frozen_by, self.state = self.frozen_by, "destroyed"
        if was_frozen_by == "cgroup" and self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.freeze(False, timeout=0.5)
        victim = self.init_pid if self.init_pid is not None else self.bwrap_pid  # bubblewrap reaps its init
        if victim is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        self.firewall.close()
        with contextlib.suppress(OSError):
            os.close(self.netns_fd)
        self._on_destroy(self, remove_files)


def _regular(fd: int, path: str) -> int:
    """Return ``fd`` when it is a regular file (blocking again); else close it and raise ENXIO or EISDIR."""
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        code = errno.EISDIR if kind == stat.S_IFDIR else errno.ENXIO
        raise OSError(code, os.strerror(code), path)
    os.set_blocking(fd, True)
    return fd
