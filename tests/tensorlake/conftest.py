"""Fixtures for the TensorLake mock tests: one mock server for the session, the SDK pointed at it, a tripwire.

Tests run on the command emulator unless their module overrides the ``runtime`` fixture: the SDK flow
modules parametrise it (``RUNTIMES``), and the ``linux`` run uses a second session mock built with
``runtime="linux"`` (made on first use; skipped with the requirements message where the machine cannot run it).

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
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from harness.plugin.guard import Tripwire
from mockserver.asgi.server import MockServer
from mockserver.core.journal import JournalEntry
from mockserver.tensorlake import TensorLakeMock, sdk_env

API_KEY = "tl_apiKey_tests"
OTHER_KEY = "tl_apiKey_someone_else"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


_MOCK = TensorLakeMock(seed=7)
_SERVER = MockServer(_MOCK.app, timeout_keep_alive=30).start()
_LINUX: dict[str, tuple[TensorLakeMock, MockServer]] = {}
#: The runtimes an SDK flow module runs on: ``runtime = pytest.fixture(params=RUNTIMES)(lambda request: ...)``.
RUNTIMES = ["emulator", pytest.param("linux", marks=pytest.mark.runtime("linux"))]


def _served(runtime: str) -> tuple[TensorLakeMock, MockServer]:
    """Return the session mock and server of ``runtime`` (the linux one made on first use)."""
    if runtime == "emulator":
        return _MOCK, _SERVER
    if "linux" not in _LINUX:
        linux = TensorLakeMock(seed=7, runtime="linux")
        _LINUX["linux"] = (linux, MockServer(linux.app, timeout_keep_alive=30).start())
    return _LINUX["linux"]


_TRIPWIRE = Tripwire()
TRIPWIRE_URL = _TRIPWIRE.url
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
    """Stop the session's mock servers (and the linux mock's sandboxes) and the tripwire."""
    _SERVER.stop()
    for linux, server in _LINUX.values():
        server.stop()
        linux.close()
    _TRIPWIRE.close()


@pytest.fixture(autouse=True)
def _never_the_cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point every SDK client at the mock, trap non-loopback traffic, and fail loudly if any happened."""
    if not _is_loopback_url(_defaults.API_URL):
        pytest.fail(f"tensorlake was imported with TENSORLAKE_API_URL={_defaults.API_URL!r}: not loopback")
    for key, value in SDK_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, TRIPWIRE_URL)
    before = len(_TRIPWIRE.hits())
    yield
    escaped = _TRIPWIRE.hits()[before:]
    if escaped:
        pytest.fail(f"the SDK tried to reach a non-loopback host (trapped by the tripwire): {escaped}")


@pytest.fixture
def runtime() -> str:
    """Return the runtime the test's mock runs sandboxes on (modules parametrise this over ``RUNTIMES``)."""
    return "emulator"


@pytest.fixture
def mock(runtime: str) -> Iterator[TensorLakeMock]:
    """Return the session's mock of ``runtime``, reset to a fresh state with an auto clock."""
    chosen = _served(runtime)[0]
    chosen.reset()
    chosen.clock.set_mode("auto")
    chosen.seed(7)
    yield chosen
    chosen.reset()


@pytest.fixture
def server_url(mock: TensorLakeMock, runtime: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Return the mock server's base URL (and point the SDK's environment at it)."""
    url = _served(runtime)[1].url
    for key, value in sdk_env(url, API_KEY).items():
        monkeypatch.setenv(key, value)
    return url


@pytest.fixture
def tl(server_url: str) -> dict[str, Any]:
    """Return the keyword arguments that bind an SDK call to the mock explicitly."""
    return {"api_url": server_url, "api_key": API_KEY}


@pytest.fixture
def client(tl: dict[str, Any]) -> Any:
    """Return an SDK ``SandboxClient`` bound to the mock."""
    return tl_sandbox.SandboxClient(**tl)


@pytest.fixture(scope="session")
def _clients() -> Iterator[dict[str, tuple[httpx.Client, httpx.Client]]]:
    """Return two httpx clients per server for the whole session (building one costs a TLS context)."""
    made: dict[str, tuple[httpx.Client, httpx.Client]] = {}
    yield made
    for keyed, bare in made.values():
        keyed.close()
        bare.close()


def _clients_for(url: str, made: dict[str, tuple[httpx.Client, httpx.Client]]) -> tuple[httpx.Client, httpx.Client]:
    if url not in made:
        auth = {"authorization": f"Bearer {API_KEY}"}
        made[url] = (
            httpx.Client(base_url=url, headers=auth, timeout=10, trust_env=False),
            httpx.Client(base_url=url, timeout=10, trust_env=False),
        )
    return made[url]


@pytest.fixture
def http(server_url: str, _clients: dict[str, tuple[httpx.Client, httpx.Client]]) -> httpx.Client:
    """Return a plain httpx client for the mock, authenticated with the test key."""
    keyed = _clients_for(server_url, _clients)[0]
    keyed.cookies.clear()
    return keyed


@pytest.fixture
def anon(server_url: str, _clients: dict[str, tuple[httpx.Client, httpx.Client]]) -> httpx.Client:
    """Return a plain httpx client for the mock without credentials."""
    bare = _clients_for(server_url, _clients)[1]
    bare.cookies.clear()
    return bare


def port_of(url: str) -> int:
    """Return the port of a URL."""
    port = urlsplit(url).port
    assert port is not None
    return port


def free_socket(url: str) -> socket.socket:
    """Return a socket connected to the mock server (for clients that derive Host from the URL)."""
    return socket.create_connection(("127.0.0.1", port_of(url)))


@pytest.fixture
def tripwire() -> Tripwire:
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
