"""Listen on the host ports a mock publishes for its sandboxes, while they are published.

A bridge-mode OpenSandbox server hands out endpoints on host ports of its own (``{host}:{hostPort}``, one pair
per sandbox), and a client connects to them directly. :class:`HostPortListeners` makes those endpoints answer:
``published()`` says which host ports are published now and what each maps (a hashable key, e.g. a sandbox
and its port), ``rewrite(key, path)`` the path of the mock's own app that serves a request on it. Each
published port gets a :class:`~.server.MockServer` on ``host`` relaying to that same app with the path
rewritten (so the sandbox-port gate, the journal and the faults apply as on the mock's own socket); a port
no longer published stops listening, and a connection to it is refused.

:meth:`HostPortListeners.in_step` wraps the app so that every answer is preceded by a reconcile (an endpoint
lookup binds its ports before the client reads them, a delete closes them before the client reads 204), and
:meth:`HostPortListeners.start` reconciles every ``interval`` seconds as well (a timeout that passes with no
request). A port that cannot be bound (another process holds it) is retried on each reconcile and reported
once through ``report``. Stopping a listener never blocks an answer: it runs in a thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .server import MockServer

__all__ = ["HostPortListeners"]

K = TypeVar("K", bound=Hashable)

#: Seconds between two reconciles when no request comes.
DEFAULT_INTERVAL = 1.0


def _relay(app: ASGIApp, key: K, rewrite: Callable[[K, str], str]) -> ASGIApp:
    """Return the app of one host port: ``app`` with each request's path rewritten for ``key``."""

    async def relayed(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        path = rewrite(key, scope["path"])
        raw = scope.get("raw_path")
        raw_path = rewrite(key, raw.decode("latin-1")).encode("latin-1") if raw else path.encode()
        await app({**scope, "path": path, "raw_path": raw_path}, receive, send)

    return relayed


class HostPortListeners(Generic[K]):
    """The listeners of the published host ports of one mock; ``server_options`` go to each :class:`MockServer`."""

    def __init__(
        self,
        published: Callable[[], Mapping[int, K]],
        rewrite: Callable[[K, str], str],
        *,
        host: str = "127.0.0.1",
        report: Callable[[str], None] = lambda _: None,
        interval: float = DEFAULT_INTERVAL,
        **server_options: Any,
    ) -> None:
        self.published = published
        self.rewrite = rewrite
        self.host = host
        self.report = report
        self.interval = interval
        self.server_options = server_options
        self.app: ASGIApp | None = None
        self._listening: dict[int, tuple[K, MockServer]] = {}
        self._reported: set[int] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def in_step(self, app: ASGIApp) -> ASGIApp:
        """Return ``app`` reconciling before each HTTP answer starts (after each WebSocket); relay to it."""

        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                try:
                    await app(scope, receive, send)
                finally:
                    self.reconcile()
                return

            async def send_in_step(message: Message) -> None:
                if message["type"] == "http.response.start":
                    self.reconcile()
                await send(message)

            await app(scope, receive, send_in_step)

        self.app = wrapped
        return wrapped

    def ports(self) -> dict[int, K]:
        """Return the host ports listened on now and what each maps."""
        with self._lock:
            return {port: key for port, (key, _) in self._listening.items()}

    def reconcile(self) -> None:
        """Listen on every published port, with the mapping published; stop listening on the others."""
        if self.app is None or self._closed.is_set():
            return
        wanted = dict(self.published())
        stopping: list[MockServer] = []
        with self._lock:
            for port, (key, server) in list(self._listening.items()):
                if wanted.get(port) != key:
                    stopping.append(server)
                    del self._listening[port]
            for port, key in wanted.items():
                if port not in self._listening:
                    self._listen(port, key)
        if stopping:
            threading.Thread(target=_stop_all, args=(stopping,), name="sandproof-host-ports-stop", daemon=True).start()

    def _listen(self, port: int, key: K) -> None:
        assert self.app is not None
        server = MockServer(_relay(self.app, key, self.rewrite), host=self.host, port=port, **self.server_options)
        try:
            server.start(wait=False)  # bound and listening: a connection waits in the backlog until it is served
        except OSError as exc:
            if port not in self._reported:
                self._reported.add(port)
                self.report(f"cannot listen on host port {self.host}:{port}: {exc.strerror or exc}; retrying")
            return
        self._reported.discard(port)
        self._listening[port] = (key, server)

    def start(self) -> HostPortListeners[K]:
        """Reconcile now and then every ``interval`` seconds from a daemon thread, until :meth:`close`."""
        self.reconcile()

        def loop() -> None:
            while not self._closed.wait(self.interval):
                self.reconcile()

        self._thread = threading.Thread(target=loop, name="sandproof-host-ports", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop reconciling and stop every listener; idempotent."""
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)
        with self._lock:
            servers = [server for _, server in self._listening.values()]
            self._listening.clear()
        _stop_all(servers)


def _stop_all(servers: list[MockServer]) -> None:
    for server in servers:
        server.stop()
