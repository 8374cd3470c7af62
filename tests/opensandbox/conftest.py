"""Fixtures for the OpenSandbox mock tests: a fresh mock, a threaded server and SDK connection configs.

The mock runs sandboxes on the command emulator unless a module overrides the ``runtime`` fixture: the SDK
flow modules parametrise it over ``RUNTIMES`` (the linux run skips with the requirements message where the
machine cannot run it); a linux mock is closed (its sandboxes destroyed) after the test.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from opensandbox.config import ConnectionConfig
from opensandbox.transport import RetryAsyncTransport, RetryPolicy

from mockserver.asgi.server import MockServer
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock

T = TypeVar("T")
API_KEY = "test-key"
#: The SDK's default retry policy with millisecond backoff, so retried faults stay fast.
FAST_RETRY = RetryPolicy(initial_backoff=timedelta(milliseconds=5), max_backoff=timedelta(milliseconds=20))
MODES = ["socket-direct", "socket-proxy", "inproc-direct", "inproc-proxy"]
#: The runtimes an SDK flow module runs on (see the module docstring).
RUNTIMES = ["emulator", pytest.param("linux", marks=pytest.mark.runtime("linux"))]

os.environ.setdefault("OPENSANDBOX_DISABLE_METRICS", "1")


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine to completion on a fresh event loop."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


@pytest.fixture
def runtime() -> str:
    """Return the runtime the test's mock runs sandboxes on (modules parametrise this over ``RUNTIMES``)."""
    return "emulator"


@pytest.fixture
def mock(runtime: str) -> Iterator[OpenSandboxMock]:
    """Return a fresh Docker-profile mock with auth on and an auto-advancing clock."""
    made = OpenSandboxMock(seed=7, api_key=API_KEY, runtime="linux" if runtime == "linux" else "emulator")
    yield made
    made.close()


@pytest.fixture
def manual_mock() -> OpenSandboxMock:
    """Return a mock whose clock only moves when a test advances it."""
    return OpenSandboxMock(seed=7, api_key=API_KEY, clock=VirtualClock("manual"))


@pytest.fixture
def server(mock: OpenSandboxMock) -> Iterator[MockServer]:
    """Serve ``mock`` on a 127.0.0.1 socket for the test."""
    with mock.server() as srv:
        yield srv


def sdk_config(
    mock: OpenSandboxMock, mode: str, url: str | None = None, *, retry: RetryPolicy = FAST_RETRY, **options: Any
) -> ConnectionConfig:
    """Build the SDK config for ``mode`` (socket/inproc x direct/proxy); in process keeps SDK retries."""
    transport, routing = mode.split("-")
    kwargs: dict[str, Any] = {"use_server_proxy": routing == "proxy", "retry_policy": retry, **options}
    if transport == "socket":
        assert url is not None, "socket mode needs a running server"
        return mock.connection_config(url, **kwargs)
    wrapped = RetryAsyncTransport(mock.transport(), retry)
    return mock.connection_config(None, transport=wrapped, **kwargs)


@pytest.fixture(params=MODES)
def mode_config(request: pytest.FixtureRequest, mock: OpenSandboxMock) -> Iterator[Callable[..., ConnectionConfig]]:
    """Yield a factory of SDK configs for each transport and routing mode."""
    mode = str(request.param)
    if mode.startswith("socket"):
        with mock.server() as srv:
            yield lambda **kw: sdk_config(mock, mode, srv.url, **kw)
    else:
        yield lambda **kw: sdk_config(mock, mode, **kw)
