"""Who is calling: bearer keys, the set of keys the mock accepts, tenants, and browser session cookies.

Every lifecycle call needs ``Authorization: Bearer <key>``; the key names the tenant (its project), and the
tenant's sandboxes live in the namespace of the path (``default`` on the flat paths). A missing or malformed
header answers 401 ``unauthorized``; a key outside the accepted set answers 401 ``invalid_api_key``. The rule
(:func:`tenant_of`) is applied once per request to every path under the lifecycle prefixes
(:func:`is_lifecycle_path`), before routing, by :mod:`mockserver.tensorlake.routes.gate`.

The sandbox proxy also accepts a browser session: the ``tl.session_token`` cookie (or the legacy
``tl-session``) of a session issued for a project, together with that project's ``organizationId`` and
``projectId`` query parameters (see :mod:`.ingress`).

Known deviations from the real service: any non-empty bearer key is accepted unless the mock was given a set
of ``api_keys`` (each key is then its own project, as moto treats AWS keys); session tokens are whatever the
admin API issued.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mockserver.core.errors import ApiError

from .records import owner_id

__all__ = [
    "LIFECYCLE_ROOTS",
    "SESSION_COOKIES",
    "KeyRing",
    "Tenant",
    "bearer_key",
    "is_lifecycle_path",
    "lifecycle_namespace",
    "parse_cookies",
    "session_token",
    "tenant_of",
]

#: The first segment of every lifecycle path, flat or under ``/v1/namespaces/{ns}``.
LIFECYCLE_ROOTS = ("sandboxes", "snapshots", "archived-sandboxes", "sandbox-pools")
_ROOTS = "|".join(map(re.escape, LIFECYCLE_ROOTS))
_LIFECYCLE_PATH = re.compile(rf"^(?:/v1/namespaces/(?P<ns>[^/]+))?/(?:{_ROOTS})(?:/|$)")
#: The platform's session cookies, the current name first.
SESSION_COOKIES = ("tl.session_token", "tl-session")


def bearer_key(authorization: str | None) -> str | None:
    """Return the key of an ``Authorization: Bearer <key>`` header value, or None when it is not one."""
    scheme, _, key = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return key.strip() or None


@dataclass(frozen=True)
class KeyRing:
    """The API keys the mock accepts: ``keys=None`` accepts any non-empty key, each its own project."""

    keys: frozenset[str] | None = None

    @classmethod
    def of(cls, keys: Iterable[str] | None) -> KeyRing:
        """Return the ring of ``keys`` (None: any key)."""
        return cls(None if keys is None else frozenset(keys))

    def accepts(self, key: str) -> bool:
        """Tell whether ``key`` is an API key the mock accepts."""
        return self.keys is None or key in self.keys

    def to_json(self) -> dict[str, list[str] | None]:
        """Return ``{"api_keys": [...] | null}``, the admin API's view of the ring."""
        return {"api_keys": None if self.keys is None else sorted(self.keys)}


@dataclass(frozen=True)
class Tenant:
    """Whose sandboxes a lifecycle call acts on: the key's owner id and the path's namespace."""

    owner: str
    namespace: str

    def label(self) -> str:
        """Return ``owner/namespace``, as the journal records it."""
        return f"{self.owner}/{self.namespace}"


def tenant_of(authorization: str | None, namespace: str, keys: KeyRing) -> Tenant:
    """Return the tenant of a lifecycle call; 401 without a bearer key or with a key the ring refuses."""
    key = bearer_key(authorization)
    if key is None:
        raise ApiError(401, "unauthorized", "missing or malformed Authorization: Bearer <api key>")
    if not keys.accepts(key):
        raise ApiError(401, "invalid_api_key", "the API key is not valid")
    return Tenant(owner_id(key), namespace)


def lifecycle_namespace(path: str) -> str | None:
    """Return the namespace of a lifecycle path (``default`` on the flat tree), None for any other path.

    A lifecycle path is one under the lifecycle routes' prefixes (:data:`LIFECYCLE_ROOTS`), whether a route
    serves it or not: every such request is authenticated first (a bad key answers 401 before a 404 or 405).
    """
    found = _LIFECYCLE_PATH.match(path)
    if found is None:
        return None
    return found["ns"] or "default"


def is_lifecycle_path(path: str) -> bool:
    """Tell whether ``path`` is under the lifecycle routes' prefixes, where every request needs a key."""
    return lifecycle_namespace(path) is not None


def parse_cookies(header: str | None) -> dict[str, str]:
    """Return the cookies of a ``Cookie`` header value (the last value wins for a repeated name)."""
    cookies: dict[str, str] = {}
    for part in (header or "").split(";"):
        name, sep, value = part.partition("=")
        name, value = (name.strip(), value.strip()) if sep else ("", name.strip())
        if name or value:
            cookies[name] = value
    return cookies


def session_token(cookies: Mapping[str, str]) -> str | None:
    """Return the platform session token among ``cookies`` (the current cookie name first), or None."""
    return next((cookies[name] for name in SESSION_COOKIES if cookies.get(name)), None)
