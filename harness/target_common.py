"""What every target module shares: the providers, capabilities, :class:`TargetError` and SDK environments."""

from __future__ import annotations

import importlib
import os
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = [
    "API_KEY_ENV",
    "CAPABILITIES",
    "DEFAULT_API_KEY",
    "PROVIDERS",
    "TENSORLAKE_CLOUD_URL",
    "Capability",
    "TargetError",
    "import_object",
    "sdk_env",
]

PROVIDERS: tuple[str, ...] = ("tensorlake", "opensandbox")
Capability = Literal["api", "admin", "engine"]
CAPABILITIES: tuple[Capability, ...] = ("api", "admin", "engine")
TENSORLAKE_CLOUD_URL = "https://api.tensorlake.ai"
DEFAULT_API_KEY = "sandproof-key"
API_KEY_ENV = {"tensorlake": "TENSORLAKE_API_KEY", "opensandbox": "OPEN_SANDBOX_API_KEY"}


class TargetError(ValueError):
    """Raise when a target string, policy engine or target start-up is invalid."""


# --- SDK environment ----------------------------------------------------------------------------------


def sdk_env(provider: str, url: str, api_key: str | None = None, *, cloud: bool = False) -> dict[str, str]:
    """Return the environment variables that point ``provider``'s SDK at ``url``."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    no_proxy = _join_no_proxy(os.environ.get("NO_PROXY") or os.environ.get("no_proxy"), host)
    env: dict[str, str] = {}
    if provider == "tensorlake":
        env["TENSORLAKE_API_URL"] = url
        if not cloud:
            # Without this the Rust client sends lifecycle calls for most hosts to the real cloud.
            env["TENSORLAKE_SANDBOX_API_URL"] = url
        if api_key:
            env["TENSORLAKE_API_KEY"] = api_key
    elif provider == "opensandbox":
        domain = (parts.netloc + parts.path).rstrip("/")
        env["OPEN_SANDBOX_DOMAIN"] = domain if parts.scheme == "http" else url.rstrip("/")
        env["OPENSANDBOX_DISABLE_METRICS"] = "1"
        if api_key:
            env["OPEN_SANDBOX_API_KEY"] = api_key
    else:
        raise TargetError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    if not cloud:
        env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


def _join_no_proxy(existing: str | None, host: str) -> str:
    """Return ``existing`` NO_PROXY entries plus loopback and ``host``, without duplicates."""
    entries = [e.strip() for e in (existing or "").split(",") if e.strip()]
    for extra in ("127.0.0.1", "localhost", host):
        if extra not in entries:
            entries.append(extra)
    return ",".join(entries)


def import_object(path: str) -> Any:
    """Import ``module:attr`` (attr may be dotted) and return the object."""
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
