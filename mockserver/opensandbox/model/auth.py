"""Who may call what: API keys to tenants, the lifecycle server's auth rules, and the sandbox-port credentials.

A :class:`KeyTable` is the mock's key configuration, in one of four modes:

* **off** (``api_key=None``): no authentication; everything belongs to the tenant ``default``;
* **single-tenant** (one key): the real server's ``server.api_key``. Lifecycle requests need the key;
  ``/health``, ``/version``, the docs and every server-proxy route are exempt, as on the real server;
* **multi-tenant** (a mapping of several keys to tenants): each tenant sees only its own sandboxes, and
  the proxy routes need a key too;
* **any key** (:data:`ANY_KEY`): any non-empty key is accepted and each key is its own tenant (named by a
  hash of the key, so state files and the journal never hold a key).

Known deviations: in multi-tenant and any-key mode the direct sandbox endpoint ``/direct/{id}/{port}`` is
authenticated too (on the real server it is the container itself, with no API-key check): a request
needs the owning tenant's ``OPEN-SANDBOX-API-KEY`` or the sandbox's ``OpenSandbox-Secure-Access`` token,
which the endpoint lookup hands out in ``headers`` (the header the real server uses for secured
sandboxes). No key answers 401 ``MISSING_API_KEY``, an unknown key 401 ``INVALID_API_KEY``, a wrong token
401 ``MISSING_OR_INVALID_SECURE_ACCESS``, and another tenant's key ``502 Bad Gateway``, the answer for a
sandbox that does not exist, so another tenant cannot even learn that the sandbox is there.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from mockserver.core import ApiError
from mockserver.core.environment import DEFAULT_API_KEY

__all__ = [
    "ADMIN_PREFIX",
    "ANY_KEY",
    "API_KEY_HEADER",
    "DEFAULT_TENANT",
    "DIRECT_PREFIX",
    "EXEMPT_PATHS",
    "SECURE_ACCESS_HEADER",
    "AnyKey",
    "KeyOption",
    "KeyTable",
    "invalid_key",
    "invalid_secure_access",
    "is_lifecycle_path",
    "key_tenant",
    "lifecycle_tenant",
    "missing_key",
    "pinned_keys",
]

API_KEY_HEADER = "open-sandbox-api-key"
SECURE_ACCESS_HEADER = "OpenSandbox-Secure-Access"
DIRECT_PREFIX = "/direct"
ADMIN_PREFIX = "/_mock"
EXEMPT_PATHS = ("/health", "/version", "/docs", "/redoc", "/openapi.json", "/openapi/")
DEFAULT_TENANT = "default"
_PROXY_PATH = re.compile(r"^(/v1)?/sandboxes/[^/]+/proxy/\d+(/|$)")


class AnyKey:
    """The type of :data:`ANY_KEY`: accept any non-empty key, each key its own tenant."""

    _instance: AnyKey | None = None

    def __new__(cls) -> AnyKey:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY_KEY"


#: Pass as ``api_key`` to accept any non-empty key, each key being its own tenant.
ANY_KEY: Final = AnyKey()
KeyOption = str | Mapping[str, str] | AnyKey | None


def missing_key() -> ApiError:
    """Return the real server's 401 for a request without a key."""
    return ApiError(
        401,
        "MISSING_API_KEY",
        "Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.",
    )


def invalid_key() -> ApiError:
    """Return the real server's 401 for a key it does not know."""
    return ApiError(401, "INVALID_API_KEY", "Authentication credentials are invalid. Check your API key and try again.")


def invalid_secure_access() -> ApiError:
    """Return the 401 for a secure-access token that is not the sandbox's."""
    return ApiError(401, "MISSING_OR_INVALID_SECURE_ACCESS", "Secure access token is missing or invalid.")


@functools.lru_cache(maxsize=4096)
def key_tenant(key: str) -> str:
    """Return the tenant a key names in any-key mode: ``key-`` and a hash of the key, never the key itself."""
    return "key-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class KeyTable:
    """The accepted API keys and the tenant each one names (see the module docstring for the modes)."""

    keys: Mapping[str, str] = field(default_factory=dict)
    any_key: bool = False

    @classmethod
    def from_option(cls, api_key: KeyOption) -> KeyTable:
        """Build the table from ``OpenSandboxMock(api_key=...)``: None, a key, a key→tenant mapping or ANY_KEY."""
        if isinstance(api_key, AnyKey):
            return cls(any_key=True)
        if isinstance(api_key, str):
            if not api_key:
                raise ValueError("api_key must not be empty (None turns authentication off)")
            return cls({api_key: DEFAULT_TENANT})
        keys = dict(api_key or {})
        if any(not k for k in keys):
            raise ValueError("API keys must not be empty")
        return cls(keys)

    @property
    def enabled(self) -> bool:
        """Tell whether requests are authenticated at all."""
        return self.any_key or bool(self.keys)

    @property
    def multi_tenant(self) -> bool:
        """Tell whether tenants are isolated from each other (several keys, or any key)."""
        return self.any_key or len(self.keys) > 1

    def client_key(self) -> str | None:
        """Return a key a client may send (the first configured one, the default key in any-key mode)."""
        if self.any_key:
            return DEFAULT_API_KEY
        return next(iter(self.keys), None)

    def tenant_of(self, key: str | None) -> str:
        """Return the tenant ``key`` names; raise 401 ``MISSING_API_KEY`` / ``INVALID_API_KEY``."""
        if not key:
            raise missing_key()
        if self.any_key:
            return key_tenant(key)
        tenant = self.keys.get(key)
        if tenant is None:
            raise invalid_key()
        return tenant


def pinned_keys(keys: Sequence[str]) -> KeyOption:
    """Return the key option of a standalone server started with ``keys``.

    None given: any non-empty key, each its own tenant; one: that key only (single-tenant); several: those
    keys, each its own tenant. Tenants are named by :func:`key_tenant` in every mode, so a state file keeps
    its sandboxes when the server restarts in another mode.
    """
    if not keys:
        return ANY_KEY
    return {key: key_tenant(key) for key in keys}


def is_lifecycle_path(path: str) -> bool:
    """Tell whether a path is the lifecycle server's (not the admin API, not a direct sandbox port)."""
    return not path.startswith((ADMIN_PREFIX, DIRECT_PREFIX))


def lifecycle_tenant(table: KeyTable, path: str, key: str | None) -> str | None:
    """Authenticate a lifecycle request: return its tenant, None when it needs no key; raise the 401.

    With one key the server-proxy routes are exempt (a path with ``..`` never is), as on the real server.
    """
    if not table.enabled or path.startswith(EXEMPT_PATHS):
        return None
    if not table.multi_tenant and ".." not in path and _PROXY_PATH.match(path):
        return None
    return table.tenant_of(key)
