"""Bounded connections for the mock servers: a header-read timeout and a cap that sheds idle sockets first.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but a connection that never sends
a request stays open forever, so enough idle sockets exhaust the process's file descriptors and the server
stops answering. :func:`bounded_h11` returns uvicorn's h11 protocol with two additions:

* a connection whose request head has not fully arrived within ``header_timeout`` seconds is closed;
* when more than ``max_connections`` are open, the longest-idle connections (no request in flight) are
  closed to make room; if every connection is busy, uvicorn's ``limit_concurrency`` answers 503.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT", "bounded_h11", "default_max_connections"]

DEFAULT_HEADER_TIMEOUT = 10.0
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


def bounded_h11(max_connections: int, header_timeout: float) -> type[H11Protocol]:
    """Return an h11 protocol class that enforces ``header_timeout`` and sheds idle connections over the cap."""
    if max_connections < 1 or header_timeout <= 0:
        raise ValueError("max_connections must be >= 1 and header_timeout > 0")

    class BoundedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _idle_since: float = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._idle_since = time.monotonic()
            self._header_timer = self.loop.call_later(header_timeout, self._header_timed_out)
            if len(self.connections) > max_connections:
                self._shed(len(self.connections) - max_connections)

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self._current() is not None:
                self._cancel_header_timer()

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
            idle: list[Any] = [c for c in self.connections if c is not self and not getattr(c, "_busy", _busy)()]
            idle.sort(key=lambda c: getattr(c, "_idle_since", 0.0))
            for connection in idle[:count]:
                if not connection.transport.is_closing():
                    connection.transport.close()

    return BoundedH11Protocol
