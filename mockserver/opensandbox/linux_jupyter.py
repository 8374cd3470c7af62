"""The Jupyter port of the linux runtime's sandboxes: a listener on ``127.0.0.1:44771`` inside each sandbox.

A code-interpreter image runs Jupyter's kernel gateway on port 44771, and the code-interpreter SDK's strict
health check (``bash -c 'exec 3<>/dev/tcp/127.0.0.1/${JUPYTER_PORT:-44771}'``, run through execd) passes once
something accepts connections there. The mock runs its code contexts itself (:mod:`.linux_code`), so this
listener only accepts and closes: it is a socket made in the sandbox's network namespace and served by one
thread of the mock, so no process runs in the sandbox for it and nothing counts against its limits.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading

from mockserver.linux import LinuxSandbox
from mockserver.linux.kernel import socket_in

from .model.code import JUPYTER_PORT

__all__ = ["JupyterListeners"]


class JupyterListeners:
    """One listener per sandbox on its Jupyter port, served by one thread; thread-safe."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._sockets: dict[str, socket.socket] = {}
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None

    def open(self, key: str, sandbox: LinuxSandbox) -> None:
        """Listen on the Jupyter port inside ``sandbox`` (nothing when the port is taken there)."""
        sock = socket_in(sandbox.netns_fd)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", JUPYTER_PORT))
            sock.listen(16)
            sock.setblocking(False)
        except OSError:
            sock.close()
            return
        with self._lock:
            self.close(key)
            self._sockets[key] = sock
            self._selector.register(sock, selectors.EVENT_READ)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="sandproof-jupyter-port", daemon=True)
                self._thread.start()

    def close(self, key: str) -> None:
        """Stop listening in the sandbox of ``key`` (its namespace can then go)."""
        with self._lock:
            sock = self._sockets.pop(key, None)
            if sock is not None:
                with contextlib.suppress(KeyError, ValueError, OSError):
                    self._selector.unregister(sock)
                sock.close()

    def close_all(self) -> None:
        """Stop every listener."""
        with self._lock:
            for key in list(self._sockets):
                self.close(key)

    def _serve(self) -> None:
        while True:
            for selected, _ in self._selector.select(timeout=1.0):
                sock = selected.fileobj
                assert isinstance(sock, socket.socket)
                with contextlib.suppress(OSError):
                    conn, _ = sock.accept()
                    conn.close()
