"""The runtime's nft helper: a small host process that applies nft scripts with libnftables, for every namespace.

libnftables waits for the kernel's answers with ``select()``, which aborts the process
(``bit out of range 0 - FD_SETSIZE``) when its netlink socket is fd 1024 or above. A runtime holding a few
fds per sandbox reaches that after some hundreds of sandboxes, so the library is never loaded there: this
process loads it instead and keeps only a handful of fds, so every socket the library opens is a low one.

Run as ``python3 -S -E -s -B nft_helper.py <fd>`` by root; ``<fd>`` is its end of a SOCK_STREAM socket to
the runtime; it ends when the runtime closes that socket (or dies). Each request is a 4-byte big-endian
length and that many bytes of JSON, answered in order with the same framing:

* ``{"op": "run", "key": k, "script": "..."}``, its first byte carrying one fd (SCM_RIGHTS): the network
  namespace. The helper applies the script (one transaction) with the context of ``key``, made in that
  namespace on first use, and answers ``{"ok": true, "output": "..."}`` or ``{"ok": false, "error": "..."}``;
* ``{"op": "forget", "key": k}``: the namespace is done with; its context is freed.

A context holds one netlink socket, and freeing one takes the library some milliseconds, so contexts are
kept (at most :data:`MAX_CONTEXTS`, the least recently used freed first, which keeps every fd of this
process far below 1024) and freed by a second thread, never while a request waits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import queue
import socket
import struct
import sys
import threading
from collections import OrderedDict

CLONE_NEWNET = 0x40000000
#: Contexts kept at once (one netlink socket each).
MAX_CONTEXTS = 256
_LENGTH = struct.Struct("!I")
_LIBRARY_NAMES = ("libnftables.so.1", "libnftables.so")


def load() -> ctypes.CDLL | None:
    """Return libnftables with its signatures set, or None when it cannot be loaded."""
    for name in (*_LIBRARY_NAMES, ctypes.util.find_library("nftables")):
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


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count:
        chunk = sock.recv(count)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def _send(sock: socket.socket, reply: dict[str, object]) -> None:
    body = json.dumps(reply).encode()
    sock.sendall(_LENGTH.pack(len(body)) + body)


class Contexts:
    """The kept libnftables contexts by key, least recently used first; a thread frees the dropped ones."""

    def __init__(self, lib: ctypes.CDLL, libc: ctypes.CDLL) -> None:
        self.lib = lib
        self.libc = libc
        self.home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self.kept: OrderedDict[int, int] = OrderedDict()
        self.dropped: queue.SimpleQueue[int] = queue.SimpleQueue()
        threading.Thread(target=self._free, daemon=True).start()

    def _free(self) -> None:
        while True:
            self.lib.nft_ctx_free(self.dropped.get())

    def forget(self, key: int) -> None:
        """Free the context of ``key`` (in the background)."""
        ctx = self.kept.pop(key, None)
        if ctx is not None:
            self.dropped.put(ctx)

    def _context(self, key: int, netns: int) -> int | None:
        kept = self.kept.get(key)
        if kept is not None:
            self.kept.move_to_end(key)
            return kept
        while len(self.kept) >= MAX_CONTEXTS:
            self.dropped.put(self.kept.popitem(last=False)[1])
        if self.libc.setns(netns, CLONE_NEWNET) != 0:
            return None
        try:
            ctx = self.lib.nft_ctx_new(0)  # its netlink socket belongs to the namespace for good
        finally:
            if self.libc.setns(self.home, CLONE_NEWNET) != 0:
                os._exit(3)  # never make the next context in a sandbox's namespace
        if not ctx:
            return None
        self.lib.nft_ctx_buffer_output(ctx)
        self.lib.nft_ctx_buffer_error(ctx)
        self.kept[key] = int(ctx)
        return int(ctx)

    def run(self, key: int, netns: int, script: str) -> dict[str, object]:
        """Apply ``script`` with the context of ``key`` (made in ``netns`` if it has none yet)."""
        ctx = self._context(key, netns)
        if ctx is None:
            return {"ok": False, "error": f"no nft context: {os.strerror(ctypes.get_errno()) or 'nft_ctx_new failed'}"}
        rc = self.lib.nft_run_cmd_from_buffer(ctx, script.encode())
        output = (self.lib.nft_ctx_get_output_buffer(ctx) or b"").decode(errors="replace")
        error = (self.lib.nft_ctx_get_error_buffer(ctx) or b"").decode(errors="replace")
        if rc != 0:
            return {"ok": False, "error": error.strip() or f"nft failed ({rc})"}
        return {"ok": True, "output": output}


def _answer(contexts: Contexts | None, request: dict[str, object], fds: list[int]) -> dict[str, object]:
    key = request.get("key")
    if not isinstance(key, int):
        return {"ok": False, "error": "a request needs an integer key"}
    if request.get("op") == "forget":
        if contexts is not None:
            contexts.forget(key)
        return {"ok": True}
    if contexts is None:
        return {"ok": False, "error": "libnftables is not available"}
    if request.get("op") != "run" or len(fds) != 1:
        return {"ok": False, "error": f"bad request {request.get('op')!r} with {len(fds)} fds"}
    return contexts.run(key, fds[0], str(request.get("script", "")))


def main(argv: list[str]) -> None:
    """Serve requests until the runtime closes the socket."""
    sock = socket.socket(fileno=int(argv[1]))
    os.set_inheritable(sock.fileno(), False)
    lib = load()
    contexts = Contexts(lib, ctypes.CDLL(None, use_errno=True)) if lib is not None else None
    while True:
        try:
            head, fds, _flags, _addr = socket.recv_fds(sock, _LENGTH.size, 1)
            if not head:
                return
            if len(head) < _LENGTH.size:
                head += _read_exactly(sock, _LENGTH.size - len(head))
            request = json.loads(_read_exactly(sock, _LENGTH.unpack(head)[0]))
        except (EOFError, OSError, ValueError):
            return
        try:
            reply = _answer(contexts, request if isinstance(request, dict) else {}, fds)
        finally:
            for fd in fds:
                os.close(fd)
        try:
            _send(sock, reply)
        except OSError:
            return


if __name__ == "__main__":
    main(sys.argv)
