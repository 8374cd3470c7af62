"""What every target module shares: the providers, capabilities, :class:`TargetError` and SDK environments."""

from __future__ import annotations

import importlib
from typing import Any, Literal

from mockserver.core import environment
from mockserver.core.environment import DEFAULT_API_KEY, MOCK_KEY_ENV, PROVIDERS

__all__ = [
    "API_KEY_ENV",
    "CAPABILITIES",
    "DEFAULT_API_KEY",
    "MOCK_KEY_ENV",
    "PROVIDERS",
    "TENSORLAKE_CLOUD_URL",
    "Capability",
    "TargetError",
    "import_object",
    "sdk_env",
]

Capability = Literal["api", "admin", "engine"]
CAPABILITIES: tuple[Capability, ...] = ("api", "admin", "engine")
TENSORLAKE_CLOUD_URL = "https://api.tensorlake.ai"
API_KEY_ENV = {"tensorlake": "TENSORLAKE_API_KEY", "opensandbox": "OPEN_SANDBOX_API_KEY"}


class TargetError(ValueError):
    """Raise when a target string, policy engine or target start-up is invalid."""


# --- SDK environment ----------------------------------------------------------------------------------


def sdk_env(provider: str, url: str, api_key: str | None = None, *, cloud: bool = False) -> dict[str, str]:
    """Return the environment variables that point ``provider``'s SDK at ``url`` (see :func:`environment.sdk_env`)."""
    try:
        return environment.sdk_env(provider, url, api_key, cloud=cloud)
    except ValueError as exc:
        raise TargetError(str(exc)) from exc


def import_object(path: str) -> Any:
    """Import ``module:attr`` (attr may be dotted) and return the object."""
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
