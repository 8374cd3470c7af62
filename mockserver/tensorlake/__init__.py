"""A faithful mock of the TensorLake sandbox API: lifecycle, sandbox proxy and in-sandbox management API.

The public names load lazily, so that ``import mockserver.tensorlake.model`` (the rules) loads no web stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockserver.core.lazy import lazy_dir, lazy_name

if TYPE_CHECKING:
    from mockserver.core.environment import DEFAULT_API_KEY

    from .mock import DEFAULT_INGRESS_DOMAIN, DEFAULT_PORT, TensorLakeMock, sdk_env
    from .model.egress import TensorLakeGate
    from .model.store import Timings

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_INGRESS_DOMAIN",
    "DEFAULT_PORT",
    "TensorLakeGate",
    "TensorLakeMock",
    "Timings",
    "sdk_env",
]

_HOMES = {
    "DEFAULT_API_KEY": "mockserver.core.environment",
    "DEFAULT_INGRESS_DOMAIN": "mockserver.tensorlake.mock",
    "DEFAULT_PORT": "mockserver.tensorlake.mock",
    "TensorLakeMock": "mockserver.tensorlake.mock",
    "sdk_env": "mockserver.tensorlake.mock",
    "TensorLakeGate": "mockserver.tensorlake.model.egress",
    "Timings": "mockserver.tensorlake.model.store",
}


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return lazy_dir(__name__, __all__)
