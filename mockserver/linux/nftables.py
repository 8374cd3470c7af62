"""Run nft scripts inside one network namespace, each script as one kernel transaction.

:class:`NftContext` loads ``libnftables`` (the library the ``nft`` command is built on) in-process: a
context opens its netlink socket when it is made, so one made while the thread is inside a sandbox's
namespace keeps talking to that namespace from any thread, with no process started per change. When the
library cannot be loaded, the ``nft`` binary is run with the namespace joined (``nft -f -``), which is
also a single transaction. Either way a script that fails changes nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import subprocess
import threading
from typing import Protocol

from .kernel import CLONE_NEWNET, enter_netns, setns

__all__ = ["NftContext", "NftError", "NftProcess", "Nftables", "libnftables_available", "open_nft"]

_LIBRARY_NAMES = ("libnftables.so.1", "libnftables.so")


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
    names = [*_LIBRARY_NAMES, ctypes.util.find_library("nftables")]
    for name in names:
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_output_buffer.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_output_buffer.restype = ctypes.c_char_p
        lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nft_run_cmd_from_buffer.restype = ctypes.c_int
        return lib
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


class NftContext:
    """A libnftables context bound to the network namespace it was made in."""

    def __init__(self, netns_fd: int) -> None:
        lib = _library()
        if lib is None:
            raise NftError("libnftables is not available")
        self._lib = lib
        self._lock = threading.Lock()
        with enter_netns(netns_fd):
            ctx = lib.nft_ctx_new(0)
        if not ctx:
            raise NftError("nft_ctx_new failed")
        self._ctx: int | None = ctx
        lib.nft_ctx_buffer_output(ctx)
        lib.nft_ctx_buffer_error(ctx)

    def run(self, script: str) -> str:
        """Apply ``script`` as one transaction and return nft's output; raise NftError on failure."""
        with self._lock:
            if self._ctx is None:
                raise NftError("nft context is closed")
            rc = self._lib.nft_run_cmd_from_buffer(self._ctx, script.encode())
            output = (self._lib.nft_ctx_get_output_buffer(self._ctx) or b"").decode(errors="replace")
            error = (self._lib.nft_ctx_get_error_buffer(self._ctx) or b"").decode(errors="replace")
        if rc != 0:
            raise NftError(error.strip() or f"nft failed ({rc})")
        return output

    def close(self) -> None:
        """Free the context (and its netlink socket)."""
        with self._lock:
            if self._ctx is not None:
                self._lib.nft_ctx_free(self._ctx)
                self._ctx = None


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
    """Return an in-process context for ``netns_fd`` when libnftables loads, else the ``nft`` fallback."""
    if libnftables_available():
        return NftContext(netns_fd)
    return NftProcess(netns_fd)
