"""Run nft scripts inside one network namespace, each script as one kernel transaction.

``libnftables`` (the library the ``nft`` command is built on) waits for the kernel with ``select()``, which
aborts the whole process when its socket is fd 1024 or above; a server holding a few fds per sandbox
gets there after some hundreds of sandboxes. So the library is never used in the runtime's own process:
:class:`NftHelper` is one small helper process (``standalone/nft_helper.py``) that loads it and keeps
only a handful of fds. :class:`HelperNft` sends it each script with the namespace's fd (SCM_RIGHTS) and a
key of its own; the helper applies the script with the context it keeps for that key (made in the namespace
on first use, freed when the namespace is closed) and answers. The helper is shared by every namespace of
the process, started on first use and started again if it dies. When the library
cannot be loaded, the ``nft`` binary is run with the namespace joined (``nft -f -``), which is also a
single transaction. Either way a script that fails changes nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Protocol

from .kernel import CLONE_NEWNET, setns

__all__ = [
    "HelperNft",
    "NftError",
    "NftHelper",
    "NftProcess",
    "Nftables",
    "libnftables_available",
    "open_nft",
    "shared_helper",
]

_LIBRARY_NAMES = ("libnftables.so.1", "libnftables.so")
_HELPER_SCRIPT = Path(__file__).resolve().parent / "standalone" / "nft_helper.py"
_LENGTH = struct.Struct("!I")
#: Seconds a script may take in the helper before the helper is deemed stuck and replaced.
HELPER_TIMEOUT = 30.0


class NftError(RuntimeError):
    """nft refused a script; the message is nft's error output."""


class Nftables(Protocol):
    """Something that applies nft scripts to one network namespace."""

    def run(self, script: str) -> str:
        """Apply ``script`` as one transaction and return nft's output; raise NftError on failure."""
        ...

    def close(self) -> None:
        """Release the context."""
        ...


def _load() -> ctypes.CDLL | None:
    """Load libnftables (to tell whether the helper can; nothing of it is ever called in this process)."""
    for name in (*_LIBRARY_NAMES, ctypes.util.find_library("nftables")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


_LIB: ctypes.CDLL | None = None
_LIB_LOADED = False
_LIB_LOCK = threading.Lock()


def _library() -> ctypes.CDLL | None:
    global _LIB, _LIB_LOADED
    with _LIB_LOCK:
        if not _LIB_LOADED:
            _LIB, _LIB_LOADED = _load(), True
        return _LIB


def libnftables_available() -> bool:
    """Tell whether libnftables can be loaded in-process."""
    return _library() is not None


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count:
        chunk = sock.recv(count)
        if not chunk:
            raise EOFError("the nft helper closed its socket")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


class NftHelper:
    """The helper process that applies scripts with libnftables (see the module docstring); thread-safe."""

    def __init__(self, python: str | None = None) -> None:
        self._python = python or sys.executable or shutil.which("python3") or "/usr/bin/python3"
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._keys = 0
        self.starts = 0

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [self._python, "-S", "-E", "-s", "-B", str(_HELPER_SCRIPT), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(HELPER_TIMEOUT)
        self._sock = ours
        self.starts += 1
        return ours

    def _stop(self) -> None:
        sock, proc, self._sock, self._proc = self._sock, self._proc, None, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)

    @property
    def pid(self) -> int | None:
        """Return the helper's pid (None before its first use)."""
        return self._proc.pid if self._proc is not None else None

    def new_key(self) -> int:
        """Return a key no namespace of this helper had before (the helper keeps one context per key)."""
        with self._lock:
            self._keys += 1
            return self._keys

    def _call(self, request: dict[str, object], netns_fd: int | None) -> dict[str, object]:
        body = json.dumps(request).encode()
        head = _LENGTH.pack(len(body))
        with self._lock:
            for attempt in (1, 2):
                try:
                    sock = self._sock or self._start()
                    if netns_fd is None:
                        sock.sendall(head + body)
                    else:
                        socket.send_fds(sock, [head], [netns_fd])
                        sock.sendall(body)
                    (length,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
                    reply = json.loads(_read_exactly(sock, length))
                    break
                except (OSError, EOFError, ValueError) as exc:
                    self._stop()
                    if attempt == 2 or netns_fd is None:
                        raise NftError(f"the nft helper failed: {exc}") from exc
        return reply if isinstance(reply, dict) else {"ok": False, "error": "bad reply from the nft helper"}

    def run(self, key: int, netns_fd: int, script: str) -> str:
        """Apply ``script`` in namespace ``netns_fd`` (known to the helper as ``key``); raise NftError on failure.

        A helper found dead is started again and the script sent once more (every script the runtime
        sends can be applied twice with the same result: a whole-table swap, or set additions).
        """
        reply = self._call({"op": "run", "key": key, "script": script}, netns_fd)
        if not reply.get("ok"):
            raise NftError(str(reply.get("error") or "nft failed"))
        return str(reply.get("output", ""))

    def forget(self, key: int) -> None:
        """Let the helper free the context of ``key`` (nothing to do when it is not running)."""
        if self._sock is None:
            return
        with contextlib.suppress(NftError):
            self._call({"op": "forget", "key": key}, None)

    def close(self) -> None:
        """Stop the helper (a later :meth:`run` starts a new one)."""
        with self._lock:
            self._stop()


_SHARED: NftHelper | None = None
_SHARED_LOCK = threading.Lock()


def shared_helper() -> NftHelper:
    """Return this process's nft helper (one for every namespace; its process starts on first use)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = NftHelper()
        return _SHARED


class HelperNft:
    """Scripts for one namespace, applied by the shared :class:`NftHelper`; holds its own fd of the namespace."""

    def __init__(self, netns_fd: int, helper: NftHelper | None = None) -> None:
        self._helper = helper or shared_helper()
        self._lock = threading.Lock()
        self._key = self._helper.new_key()
        self._fd = os.dup(netns_fd)
        os.set_inheritable(self._fd, False)

    def run(self, script: str) -> str:
        """Apply ``script`` as one transaction and return nft's output; raise NftError on failure."""
        with self._lock:
            if self._fd < 0:
                raise NftError("nft context is closed")
            return self._helper.run(self._key, self._fd, script)

    def close(self) -> None:
        """Release the namespace fd and the helper's context for it; idempotent."""
        with self._lock:
            if self._fd < 0:
                return
            os.close(self._fd)
            self._fd = -1
        self._helper.forget(self._key)


class NftProcess:
    """The fallback: ``nft -f -`` run with the namespace joined."""

    def __init__(self, netns_fd: int, binary: str | None = None) -> None:
        found = binary or shutil.which("nft") or "/usr/sbin/nft"
        self._binary = found
        self._fd = netns_fd

    def run(self, script: str) -> str:
        """Apply ``script`` as one transaction and return nft's output; raise NftError on failure."""
        fd = self._fd
        proc = subprocess.run(
            [self._binary, "-f", "-"],
            input=script.encode(),
            capture_output=True,
            preexec_fn=lambda: setns(fd, CLONE_NEWNET),
            pass_fds=(fd,),
            check=False,
        )
        if proc.returncode != 0:
            raise NftError(proc.stderr.decode(errors="replace").strip() or f"nft exited {proc.returncode}")
        return proc.stdout.decode(errors="replace")

    def close(self) -> None:
        """Nothing to release."""


def open_nft(netns_fd: int) -> Nftables:
    """Return the helper's scripts for ``netns_fd`` when libnftables loads, else the ``nft`` fallback."""
    if libnftables_available():
        return HelperNft(netns_fd)
    return NftProcess(netns_fd)
