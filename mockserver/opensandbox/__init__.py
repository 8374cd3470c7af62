"""A faithful mock of OpenSandbox 1.1.1: lifecycle server, in-sandbox execd, egress sidecar, faults.

from mockserver.opensandbox import OpenSandboxMock

mock = OpenSandboxMock(seed=1, api_key="k")
with mock.server() as srv:                      # real socket on 127.0.0.1
    config = mock.connection_config(srv.url)    # opensandbox.ConnectionConfig
config = mock.connection_config(in_process=True)  # httpx.ASGITransport, no socket

Layout: :mod:`.model` holds every rule and loads no web stack; :mod:`.routes` is the HTTP face (parse, call
the model, render); :mod:`.commands` runs commands; :mod:`.faults` is the named fault catalogue;
:mod:`.mock` composes them. The names below are loaded on first use, so ``import mockserver.opensandbox.model``
stays free of starlette, uvicorn and httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockserver.core.lazy import lazy_name

if TYPE_CHECKING:
    from .faults import OpenSandboxFaults
    from .mock import OpenSandboxMock
    from .model.auth import ANY_KEY
    from .model.operations import OpenSandboxModel
    from .model.profiles import EGRESS_PORT, EXECD_PORT, RuntimeProfile
    from .model.records import CommandRecord, SandboxRecord
    from .model.store import OpenSandboxState
    from .routes.ports import PortDispatcher

_LAZY = {
    "ANY_KEY": ".model.auth",
    "EGRESS_PORT": ".model.profiles",
    "EXECD_PORT": ".model.profiles",
    "CommandRecord": ".model.records",
    "OpenSandboxFaults": ".faults",
    "OpenSandboxMock": ".mock",
    "OpenSandboxModel": ".model.operations",
    "OpenSandboxState": ".model.store",
    "PortDispatcher": ".routes.ports",
    "RuntimeProfile": ".model.profiles",
    "SandboxRecord": ".model.records",
}


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _LAZY, name)


def sdk_env(mock: OpenSandboxMock, url: str | None = None) -> dict[str, str]:
    """Return the environment that points the SDK's defaults at ``mock`` served on ``url``."""
    return mock.sdk_env(url)


def connection_config(mock: OpenSandboxMock, url: str | None = None, **options: Any) -> Any:
    """Return an ``opensandbox.ConnectionConfig`` for ``mock`` (see :meth:`OpenSandboxMock.connection_config`)."""
    return mock.connection_config(url, **options)


__all__ = [
    "ANY_KEY",
    "EGRESS_PORT",
    "EXECD_PORT",
    "CommandRecord",
    "OpenSandboxFaults",
    "OpenSandboxMock",
    "OpenSandboxModel",
    "OpenSandboxState",
    "PortDispatcher",
    "RuntimeProfile",
    "SandboxRecord",
    "connection_config",
    "sdk_env",
]
