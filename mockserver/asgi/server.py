"""Run an ASGI app under uvicorn in a background thread on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from types import TracebackType

import uvicorn
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from .connections import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, bounded_h11, default_max_connections


def _quiet_disconnects(app: ASGIApp) -> ASGIApp:
    """Return ``app`` ending quietly when its client went away mid-request (or a stalled body was cut).

    Nobody is left to answer, and a traceback logged for each of a thousand cut connections would cost
    the server more than the connections themselves.
    """

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        except ClientDisconnect:
            return

    return wrapped


class _Server(uvicorn.Server):
    """uvicorn's server, woken as soon as it is asked to stop: its own main loop looks every 0.1 s.

    ``stop`` then costs uvicorn's graceful shutdown alone, not a tick on top of it (a test suite stops
    hundreds of servers).
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        """uvicorn's loop (a tick every 0.1 s), whose wait ends early when :meth:`wake` is called."""
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            self._wake.clear()
            should_exit = await self.on_tick(counter)

    def wake(self) -> None:
        """Have the main loop look at ``should_exit`` now (callable from any thread)."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed already
                loop.call_soon_threadsafe(wake.set)


class MockServer:
    """Serve an ASGI app on a real socket from a daemon thread; a context manager.

    ``port=0`` picks a free port. ``timeout_keep_alive`` is how long an idle keep-alive
    connection stays open: set it below a client's pool expiry to exercise stale sockets.
    ``max_connections`` caps open connections (default: what the file-descriptor limit allows, at most
    1000); over it, connections that wait on their client (idle, or a request body that stalls) are closed,
    the longest-waiting first. A connection that has not sent a whole request head within ``header_timeout``
    seconds is closed, and so is one whose request body sends nothing for ``body_timeout`` seconds.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout_keep_alive: float = 5.0,
        log_level: str = "warning",
        ready_timeout: float = 10.0,
        max_connections: int | None = None,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port {port} is outside 0-65535")
        if timeout_keep_alive <= 0:
            raise ValueError("timeout_keep_alive must be positive")
        cap = default_max_connections() if max_connections is None else max_connections
        self.app = app
        self.host = host
        self.max_connections = cap
        self._requested_port = port
        self._config = uvicorn.Config(
            _quiet_disconnects(app),
            host=host,
            port=port,
            log_level=log_level,
            lifespan="off",
            timeout_keep_alive=int(timeout_keep_alive) if timeout_keep_alive >= 1 else 1,
            access_log=False,
            ws="auto",
            http=bounded_h11(cap, header_timeout, body_timeout),
            limit_concurrency=2 * cap,  # reached only when every connection is being answered (none to shed)
        )
        self._keep_alive = timeout_keep_alive
        self._ready_timeout = ready_timeout
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port = port

    @property
    def url(self) -> str:
        """Return the base URL, e.g. ``http://127.0.0.1:54321``."""
        return f"http://{self.host}:{self.port}"

    def start(self, *, wait: bool = True) -> MockServer:
        """Bind the socket and start serving; return once the server accepts connections (``wait=False``: at once,
        then :meth:`wait_started`)."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
            sock.listen(1024)
        except OSError:
            sock.close()
            raise
        sock.set_inheritable(True)
        self._socket = sock
        self.port = sock.getsockname()[1]
        server = _Server(self._config)
        server.config.timeout_keep_alive = self._keep_alive  # type: ignore[assignment]
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"sandproof-{self.port}", daemon=True
        )
        self._thread.start()
        if wait:
            self.wait_started()
        return self

    def wait_started(self) -> MockServer:
        """Return once the server accepts connections; RuntimeError if it did not start in time."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            raise RuntimeError("server not started")
        deadline = time.monotonic() + self._ready_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"mock server on {self.url} did not start")
            time.sleep(0.002)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread to end."""
        if self._server is not None:
            self._server.should_exit = True
            self._server.wake()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
