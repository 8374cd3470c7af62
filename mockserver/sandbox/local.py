"""Opt-in backend that runs REAL commands on the host, in a per-sandbox temporary directory.

WARNING: this is NOT a sandbox. Commands run as the current user with real network access, real
processes and the whole host filesystem reachable; the temporary directory is only a working
directory, not a jail. Use it solely for trusted code (e.g. to compare the emulator against a real
shell). It exposes the same `run(...) -> Iterator[Step]` interface as `CommandEmulator`, streaming
output as it arrives; it never yields `Sleep` steps, since real time passes by itself.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from .filesystem import normpath
from .steps import Exit, Output, Step, Stream

_CHUNK = 65536
_DRAIN_GRACE = 0.2


class LocalBackend:
    """Run commands with subprocess under a temporary root; NOT isolated, trusted code only."""

    def __init__(self, *, env: Mapping[str, str] | None = None, inherit_env: bool = True) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sandproof-local-"))
        base = dict(os.environ) if inherit_env else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        self.env: dict[str, str] = {**base, "HOME": str(self.root), **(env or {})}
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    def host_path(self, path: str) -> Path:
        """Map a sandbox-absolute path to its location under the temporary root."""
        return self.root / normpath(path, "/").lstrip("/")

    def run(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bytes = b"",
    ) -> Iterator[Step]:
        """Return the steps of running `command` (via /bin/sh -c for a str); ends with Exit."""
        return self._run(command, dict(env or {}), cwd, stdin)

    def _run(self, command: str | Sequence[str], env: dict[str, str], cwd: str, stdin: bytes) -> Iterator[Step]:
        if self._closed:
            raise RuntimeError("LocalBackend is closed")
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            yield Exit(0)
            return
        workdir = self.host_path(cwd)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.Popen(
                argv,
                cwd=workdir,
                env={**self.env, "PWD": str(workdir), **env},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            yield Output("stderr", f"{argv[0]}: not found\n".encode())
            yield Exit(127)
            return
        except PermissionError:
            yield Output("stderr", f"{argv[0]}: Permission denied\n".encode())
            yield Exit(126)
            return
        with self._lock:
            self._running.add(proc)
        chunks: queue.Queue[tuple[Stream, bytes]] = queue.Queue()
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        threads = [
            threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True),
            threading.Thread(target=_pump, args=(proc.stdout, "stdout", chunks), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, "stderr", chunks), daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            open_streams, exited_at = 2, None
            while open_streams:
                try:
                    stream, data = chunks.get(timeout=0.05)
                except queue.Empty:
                    if proc.poll() is not None:
                        exited_at = exited_at or time.monotonic()
                        if time.monotonic() - exited_at > _DRAIN_GRACE:
                            break
                    continue
                if data:
                    yield Output(stream, data)
                else:
                    open_streams -= 1
            code = proc.wait()
            yield Exit(128 - code if code < 0 else code)
        finally:
            _kill(proc)
            for thread in threads:
                thread.join(timeout=1)
            _close_pipes(proc)
            with self._lock:
                self._running.discard(proc)

    def close(self) -> None:
        """Kill running commands and delete the temporary directory."""
        self._closed = True
        with self._lock:
            running = list(self._running)
        for proc in running:
            _kill(proc)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        if data:
            pipe.write(data)
    except (BrokenPipeError, ValueError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            pipe.close()


def _pump(pipe: IO[bytes], stream: Stream, chunks: queue.Queue[tuple[Stream, bytes]]) -> None:
    try:
        while data := os.read(pipe.fileno(), _CHUNK):
            chunks.put((stream, data))
    except (OSError, ValueError):
        pass
    finally:
        chunks.put((stream, b""))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command's whole process group (it runs in its own session), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
