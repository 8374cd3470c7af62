"""Bounded connections for the mock servers: header and body timeouts, and a cap that sheds stalled sockets.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but a connection that never sends
a request (or sends a head and then only part of its body) stays open forever, so enough such sockets
exhaust the process's file descriptors and uvicorn's concurrency limit, and the server answers nothing but
503. :func:`bounded_h11` returns uvicorn's h11 protocol with three additions:

* a connection whose request head has not fully arrived within ``header_timeout`` seconds is closed;
* a request whose body stalls (no byte of it for ``body_timeout`` seconds while the server waits for it)
  is cut: its connection is closed and the application sees the client disconnect;
* when more than ``max_connections`` are open, connections that wait on their client are closed to make
  room, the one that has waited longest first: idle ones (no request in flight, waiting since their last
  response) and those whose request body is still arriving (waiting since its last byte). Only when
  every connection is being answered (none to close) does uvicorn's ``limit_concurrency`` (twice the
  cap, see :class:`~mockserver.asgi.server.MockServer`) answer 503, so stalled clients never lock out
  the admin API or other tenants.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_HEADER_TIMEOUT", "bounded_h11", "default_max_connections"]

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 10.0
#: File descriptors kept back for everything that is not a client connection (listeners, files, pipes).
_RESERVED_FDS = 64


def default_max_connections() -> int:
    """Return a connection cap that fits this process's file-descriptor limit (at most 1000)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1000
    return max(16, min(1000, soft - _RESERVED_FDS))


def _busy() -> bool:
    return True


def _no_wait() -> float | None:
    return None


def bounded_h11(
    max_connections: int, header_timeout: float, body_timeout: float = DEFAULT_BODY_TIMEOUT
) -> type[H11Protocol]:
    """Return an h11 protocol class that enforces the header and body timeouts and sheds stalled connections."""
    if max_connections < 1 or header_timeout <= 0 or body_timeout <= 0:
        raise ValueError("max_connections must be >= 1, header_timeout and body_timeout > 0")

    class BoundedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _body_timer: asyncio.TimerHandle | None = None
        _idle_since: float = 0.0
        _last_data: float = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._idle_since = time.monotonic()
            self._header_timer = self.loop.call_later(header_timeout, self._header_timed_out)
            if len(self.connections) > max_connections:
                self._shed(len(self.connections) - max_connections)

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_timer()
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self._last_data = time.monotonic()
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            if self._current() is not None:
                self._cancel_header_timer()
                if self._body_timer is None and self._waiting_since() is not None:
                    self._body_timer = self.loop.call_later(body_timeout, self._check_body)

        def _waiting_since(self) -> float | None:
            """Return since when this connection waits for its request body to go on (None: it does not)."""
            cycle = self._current()
            if cycle is None or not cycle.more_body or cycle.response_complete or cycle.disconnected:
                return None
            if self.flow.read_paused:  # the application has not taken what came: not the client's fault
                return None
            return self._last_data

        def _check_body(self) -> None:
            self._body_timer = None
            since = self._waiting_since()
            if since is None or self.transport.is_closing():
                return
            left = since + body_timeout - time.monotonic()
            if left <= 0:
                self.transport.close()
            else:
                self._body_timer = self.loop.call_later(left, self._check_body)

        def on_response_complete(self) -> None:
            self._idle_since = time.monotonic()
            super().on_response_complete()

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            self._header_timer = None
            if self._current() is None and not self.transport.is_closing():
                self.transport.close()

        def _current(self) -> Any:
            return self.cycle  # None until the first request head arrived (uvicorn types it otherwise)

        def _busy(self) -> bool:
            cycle = self._current()
            return cycle is not None and not cycle.response_complete

        def _shed(self, count: int) -> None:
            # A connection upgraded to a WebSocket has another protocol class: it counts as busy.
            others = [c for c in self.connections if c is not self and not c.transport.is_closing()]
            count -= len(self.connections) - 1 - len(others)  # closing already: they make room when they go
            waiting: list[tuple[float, Any]] = []
            for connection in others:
                if not getattr(connection, "_busy", _busy)():
                    waiting.append((getattr(connection, "_idle_since", 0.0), connection))
                elif (since := getattr(connection, "_waiting_since", _no_wait)()) is not None:
                    waiting.append((since, connection))
            waiting.sort(key=lambda pair: pair[0])
            for _, connection in waiting[:count]:
                connection.transport.close()

    return BoundedH11Protocol
