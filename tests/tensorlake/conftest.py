"""Fixtures for the TensorLake mock tests: one mock server for the session, the SDK pointed at it, a tripwire.

The SDK reads ``TENSORLAKE_API_URL`` and ``TENSORLAKE_API_KEY`` once, at import, so they are set here,
before ``tensorlake`` is imported (and put back afterwards; each test sets them again). Every SDK call in
these tests also passes ``api_url``/``api_key`` explicitly, in case another module imported the SDK first. With some settings the SDK silently talks to the real cloud
(``https://sandbox.tensorlake.ai``), so every test also runs with ``HTTP(S)_PROXY`` pointing at a
loopback tripwire and ``NO_PROXY`` covering only loopback: any request for another host lands on the
tripwire instead of the internet, and the test fails loudly.
"""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from mockserver.asgi.server import MockServer
from mockserver.core.journal import JournalEntry
from mockserver.tensorlake import TensorLakeMock, sdk_env

API_KEY = "tl_apiKey_tests"
OTHER_KEY = "tl_apiKey_someone_else"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class _Tripwire(socketserver.ThreadingTCPServer):
    """Record the first line of every request a proxied client sends, and refuse it."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _TripwireHandler)
        self.hits: list[str] = []


class _TripwireHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(4096).decode("latin-1").strip()
        server = self.server
        assert isinstance(server, _Tripwire)
        server.hits.append(line)
        self.wfile.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")


_MOCK = TensorLakeMock(seed=7)
_SERVER = MockServer(_MOCK.app, timeout_keep_alive=30).start()
_TRIPWIRE = _Tripwire()
threading.Thread(target=_TRIPWIRE.serve_forever, name="tensorlake-tripwire", daemon=True).start()
TRIPWIRE_URL = f"http://127.0.0.1:{_TRIPWIRE.server_address[1]}"
SDK_ENV = sdk_env(_SERVER.url, API_KEY)
_SAVED_ENV = {key: os.environ.get(key) for key in SDK_ENV}
os.environ.update(SDK_ENV)

import tensorlake.sandbox as tl_sandbox  # noqa: E402  (the environment must be set first)
from tensorlake.sandbox import _defaults  # noqa: E402

# The SDK has read what it reads at import; every test sets the variables again (see _never_the_cloud),
# so tests elsewhere in the session see the environment they started with.
for _key, _value in _SAVED_ENV.items():
    if _value is None:
        os.environ.pop(_key, None)
    else:
        os.environ[_key] = _value


def _is_loopback_url(url: str) -> bool:
    return (urlsplit(url).hostname or "") in LOOPBACK


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the session's mock server and tripwire."""
    _SERVER.stop()
    _TRIPWIRE.shutdown()
    _TRIPWIRE.server_close()


@pytest.fixture(autouse=True)
def _never_the_cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point every SDK client at the mock, trap non-loopback traffic, and fail loudly if any happened."""
    if not _is_loopback_url(_defaults.API_URL):
        pytest.fail(f"tensorlake was imported with TENSORLAKE_API_URL={_defaults.API_URL!r}: not loopback")
    for key, value in SDK_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, TRIPWIRE_URL)
    before = len(_TRIPWIRE.hits)
    yield
    escaped = _TRIPWIRE.hits[before:]
    if escaped:
        pytest.fail(f"the SDK tried to reach a non-loopback host (trapped by the tripwire): {escaped}")


@pytest.fixture
def mock() -> Iterator[TensorLakeMock]:
    """Return the session's mock, reset to a fresh state with an auto clock."""
    _MOCK.reset()
    _MOCK.clock.set_mode("auto")
    _MOCK.seed(7)
    yield _MOCK
    _MOCK.reset()


@pytest.fixture
def server_url(mock: TensorLakeMock) -> str:
    """Return the mock server's base URL."""
    return _SERVER.url


@pytest.fixture
def tl(server_url: str) -> dict[str, Any]:
    """Return the keyword arguments that bind an SDK call to the mock explicitly."""
    return {"api_url": server_url, "api_key": API_KEY}


@pytest.fixture
def client(tl: dict[str, Any]) -> Any:
    """Return an SDK ``SandboxClient`` bound to the mock."""
    return tl_sandbox.SandboxClient(**tl)


@pytest.fixture(scope="session")
def _clients() -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Return two httpx clients for the whole session (building one costs a TLS context)."""
    auth = {"authorization": f"Bearer {API_KEY}"}
    with (
        httpx.Client(base_url=_SERVER.url, headers=auth, timeout=10, trust_env=False) as keyed,
        httpx.Client(base_url=_SERVER.url, timeout=10, trust_env=False) as bare,
    ):
        yield keyed, bare


@pytest.fixture
def http(mock: TensorLakeMock, _clients: tuple[httpx.Client, httpx.Client]) -> httpx.Client:
    """Return a plain httpx client for the mock, authenticated with the test key."""
    _clients[0].cookies.clear()
    return _clients[0]


@pytest.fixture
def anon(mock: TensorLakeMock, _clients: tuple[httpx.Client, httpx.Client]) -> httpx.Client:
    """Return a plain httpx client for the mock without credentials."""
    _clients[1].cookies.clear()
    return _clients[1]


def port_of(url: str) -> int:
    """Return the port of a URL."""
    port = urlsplit(url).port
    assert port is not None
    return port


def free_socket(url: str) -> socket.socket:
    """Return a socket connected to the mock server (for clients that derive Host from the URL)."""
    return socket.create_connection(("127.0.0.1", port_of(url)))


@pytest.fixture
def tripwire() -> _Tripwire:
    """Return the tripwire (a test that trips it on purpose must remove its own hits)."""
    return _TRIPWIRE


def journal(mock: TensorLakeMock, count: int, **filters: Any) -> list[JournalEntry]:
    """Return the journal entries matching ``filters``, waiting (up to 2 s) until there are ``count``.

    The journal records a request just after its response went out, so a fast client can look first.
    """
    deadline = time.monotonic() + 2.0
    while True:
        found = mock.journal.entries(**filters)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.005)
