"""The environment that points each provider's SDK at a URL, and sandproof's one default API key.

Defined once: the mocks (``TensorLakeMock``/``OpenSandboxMock``), ``sandproof env`` and the harness targets
all call :func:`sdk_env`.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

__all__ = ["ADMIN_TOKEN_ENV", "DEFAULT_API_KEY", "MOCK_KEY_ENV", "PROVIDERS", "sdk_env"]

#: The key sandproof's own clients send when none is given (any non-empty key works against the mocks).
DEFAULT_API_KEY = "sandproof-key"
PROVIDERS: tuple[str, ...] = ("tensorlake", "opensandbox")
#: ``sandproof env`` exports the mock key under this name too, so a cloud target can refuse to send it anywhere.
MOCK_KEY_ENV = "SANDPROOF_MOCK_API_KEY"
#: The admin token of a guarded mock: ``sandproof serve`` and the admin client read it when none is given.
ADMIN_TOKEN_ENV = "SANDPROOF_ADMIN_TOKEN"


def sdk_env(provider: str, url: str, api_key: str | None = None, *, cloud: bool = False) -> dict[str, str]:
    """Return the environment variables that point ``provider``'s SDK at ``url``.

    TensorLake: both ``TENSORLAKE_API_URL`` and ``TENSORLAKE_SANDBOX_API_URL`` are set (with the first alone,
    the SDK sends lifecycle calls for most hosts to the real cloud), and ``TENSORLAKE_SANDBOX_PROXY_URL`` (the
    data-plane fallback of SDKs up to 0.5.0, which otherwise go to ``http://localhost:9443``; the mock serves
    ``<id>.local`` hosts on its own port), unless ``cloud``. OpenSandbox:
    ``OPEN_SANDBOX_DOMAIN`` is the scheme-less ``host:port`` for plain HTTP. ``NO_PROXY`` keeps loopback and the
    target host off any proxy. Raise ``ValueError`` for an unknown provider or a URL that is not absolute.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{provider} URL must be an absolute http(s) URL, got {url!r}")
    url = url.rstrip("/")
    env: dict[str, str] = {}
    if provider == "tensorlake":
        env["TENSORLAKE_API_URL"] = url
        if not cloud:
            env["TENSORLAKE_SANDBOX_API_URL"] = url
            env["TENSORLAKE_SANDBOX_PROXY_URL"] = url
            env["INDEXIFY_NAMESPACE"] = "default"
        if api_key:
            env["TENSORLAKE_API_KEY"] = api_key
    elif provider == "opensandbox":
        domain = (parts.netloc + parts.path).rstrip("/")
        env["OPEN_SANDBOX_DOMAIN"] = domain if parts.scheme == "http" else url
        env["OPEN_SANDBOX_PROTOCOL"] = parts.scheme
        env["OPENSANDBOX_DISABLE_METRICS"] = "1"
        if api_key:
            env["OPEN_SANDBOX_API_KEY"] = api_key
    else:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    if not cloud:
        env["NO_PROXY"] = env["no_proxy"] = _join_no_proxy(
            os.environ.get("NO_PROXY") or os.environ.get("no_proxy"), parts.hostname
        )
    return env


def _join_no_proxy(existing: str | None, host: str) -> str:
    """Return ``existing`` NO_PROXY entries plus loopback and ``host``, without duplicates."""
    entries = [e.strip() for e in (existing or "").split(",") if e.strip()]
    for extra in ("127.0.0.1", "localhost", host):
        if extra not in entries:
            entries.append(extra)
    return ",".join(entries)
