"""The real-cloud guard: a test that uses sandproof's fixtures never reaches a host beyond this machine by accident.

While such a test runs, ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` point at a loopback *tripwire* and ``NO_PROXY``
covers only loopback and the target's own hosts. Both SDKs honour those variables (the TensorLake SDK's Rust client
too), so a call bound for the real cloud reaches the tripwire instead, which refuses it (403) and remembers its
first line; the test then fails with one message naming the host. A test marked ``sandproof_cloud`` opts out, and
so does a run on the ``tensorlake-cloud`` target. Traffic that ignores proxy variables (a client built with
``trust_env=False``, raw sockets) is not seen.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

__all__ = [
    "CLOUD_MARKER",
    "GUARDED_FIXTURES",
    "PROXY_VARIABLES",
    "TRAPPED_KEY",
    "Trapped",
    "Tripwire",
    "guarded_env",
    "message",
    "should_guard",
]

#: The marker that lets a test reach the network beyond this machine.
CLOUD_MARKER = "sandproof_cloud"
#: The plugin's fixtures whose use turns the guard on for a test.
GUARDED_FIXTURES = frozenset(
    {"sandproof_target", "tensorlake_mock", "opensandbox_mock", "tensorlake_sdk_args", "opensandbox_asgi"}
)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(4096).decode("latin-1").strip()
        server = self.server
        assert isinstance(server, Tripwire)
        server.record(line)
        self.wfile.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")


class Tripwire(socketserver.ThreadingTCPServer):
    """A loopback proxy that refuses every request and keeps its first line (``CONNECT host:443 HTTP/1.1``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self._hits: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, name="sandproof-tripwire", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Return the proxy URL the guarded tests' clients are sent to."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def record(self, line: str) -> None:
        """Remember one trapped request."""
        with self._lock:
            self._hits.append(line)

    def hits(self) -> list[str]:
        """Return every trapped request line so far."""
        with self._lock:
            return list(self._hits)

    def drain(self, start: int) -> list[str]:
        """Return and forget the request lines trapped from index ``start`` on (a test that trips it on purpose)."""
        with self._lock:
            taken, self._hits[start:] = self._hits[start:], []
            return taken

    def close(self) -> None:
        """Stop serving."""
        self.shutdown()
        self.server_close()


def should_guard(item: pytest.Item, target_kind: str) -> bool:
    """Tell whether ``item`` runs behind the guard: it uses a sandproof fixture and did not opt out."""
    if target_kind == "cloud" or item.get_closest_marker(CLOUD_MARKER) is not None:
        return False
    return bool(GUARDED_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def _no_proxy(hosts: Iterable[str]) -> str:
    found = list(_LOOPBACK)
    for host in hosts:
        if host and host not in found:
            found.append(host)
    return ",".join(found)


class Trapped:
    """What one guarded test sent to the tripwire, read as it goes (``new()`` gives what was not reported yet)."""

    def __init__(self, tripwire: Tripwire) -> None:
        self._tripwire = tripwire
        self._start = len(tripwire.hits())
        self._reported = 0

    def all(self) -> list[str]:
        """Return every request line trapped since the guard went up."""
        return self._tripwire.hits()[self._start :]

    def new(self) -> list[str]:
        """Return the lines trapped since the last call, and mark them reported."""
        found = self.all()
        fresh, self._reported = found[self._reported :], len(found)
        return fresh


@contextmanager
def guarded_env(tripwire: Tripwire, target_urls: Iterable[str]) -> Iterator[Trapped]:
    """Route non-loopback traffic to ``tripwire`` for the ``with`` block; yield what it traps."""
    patch = pytest.MonkeyPatch()
    trapped = Trapped(tripwire)
    try:
        for name in PROXY_VARIABLES:
            patch.setenv(name, tripwire.url)
        no_proxy = _no_proxy(urlsplit(url).hostname or "" for url in target_urls)
        patch.setenv("NO_PROXY", no_proxy)
        patch.setenv("no_proxy", no_proxy)
        yield trapped
    finally:
        patch.undo()


def _host(line: str) -> str:
    """Return where a trapped request line was going: ``host:port`` of a CONNECT, the host of a proxied URL."""
    parts = line.split()
    if len(parts) < 2:
        return line
    return urlsplit(parts[1]).netloc if "://" in parts[1] else parts[1]


#: Where a guarded test keeps its :class:`Trapped`, so the call phase can fail on what it sent.
TRAPPED_KEY = pytest.StashKey["Trapped"]()


def message(trapped: list[str]) -> str:
    """Return the one line a guarded test fails with."""
    hosts = sorted({_host(line) for line in trapped})
    return (
        f"sandproof: this test tried to reach {', '.join(hosts)} beyond this machine (trapped, never sent); point "
        "the SDK at the mock (tensorlake_sdk_args, --sandproof-sdk-env) or mark the test "
        f"@pytest.mark.{CLOUD_MARKER} to let it out"
    )
