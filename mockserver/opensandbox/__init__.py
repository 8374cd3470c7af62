"""A faithful mock of OpenSandbox 1.1.1: lifecycle server, in-sandbox execd, egress sidecar, faults.

from mockserver.opensandbox import OpenSandboxMock

mock = OpenSandboxMock(seed=1, api_key="k")
with mock.server() as srv:                      # real socket on 127.0.0.1
    config = mock.connection_config(srv.url)    # opensandbox.ConnectionConfig
config = mock.connection_config(in_process=True)  # httpx.ASGITransport, no socket
"""

from __future__ import annotations

from typing import Any

from .faults import FaultCatalogue
from .mock import OpenSandboxMock, PortDispatcher
from .models import CommandRecord, OpenSandboxState, SandboxRecord
from .profiles import EGRESS_PORT, EXECD_PORT, RuntimeProfile


def sdk_env(mock: OpenSandboxMock, url: str | None = None) -> dict[str, str]:
    """Return the environment that points the SDK's defaults at ``mock`` served on ``url``."""
    return mock.sdk_env(url)


def connection_config(mock: OpenSandboxMock, url: str | None = None, **options: Any) -> Any:
    """Return an ``opensandbox.ConnectionConfig`` for ``mock`` (see :meth:`OpenSandboxMock.connection_config`)."""
    return mock.connection_config(url, **options)


__all__ = [
    "EGRESS_PORT",
    "EXECD_PORT",
    "CommandRecord",
    "FaultCatalogue",
    "OpenSandboxMock",
    "OpenSandboxState",
    "PortDispatcher",
    "RuntimeProfile",
    "SandboxRecord",
    "connection_config",
    "sdk_env",
]
