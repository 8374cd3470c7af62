"""The sandbox proxy's rules: which sandbox and port a request is for, whether it may pass, what is forwarded.

Routing (the first that applies, :func:`target_of`):

* ``Host: <port>-<id-or-name>.<domain>``: user port ``<port>``; ``Host: <id-or-name>.<domain>``: the
  management API (port 9501). ``<domain>`` is the mock's ingress domain (``sandbox.localhost`` by
  default); the SDK's local forms ``<id>.local`` and ``<port>-<id>.local`` work the same way.
* ``X-Tensorlake-Sandbox-Id: <id>`` with any other host: the management API (what the SDK sends when
  ``sandbox_url`` is not a localhost URL).
* Anything else is not for a sandbox (the lifecycle and admin routes answer it).

Admission (:meth:`IngressRules.admit`), in this order: an unknown sandbox answers 404 ``SANDBOX_NOT_FOUND``;
a user port outside ``exposed_ports`` 403 ``PORT_NOT_EXPOSED``; then, unless the port is a user port of a
sandbox with ``allow_unauthenticated_access``, the request needs auth: a bearer key the mock does not accept
answers 401 ``INVALID_API_KEY``, another project's key 403 ``FORBIDDEN``; without a key, a browser session
cookie (``tl.session_token``, or the legacy ``tl-session``) with matching ``organizationId`` and
``projectId`` query parameters (401 ``UNAUTHENTICATED`` without any, 401 ``INVALID_SESSION`` for an unknown
token, 401 ``MISSING_PROJECT`` without the parameters, 403 ``FORBIDDEN`` for another project). A suspended
sandbox with ``auto_resume`` is then woken, and the request waits (on the virtual clock, at most 30 s) for
the resume: the rule returns that wait as a :class:`~.waits.Settle`. A sandbox that is not running answers
503 ``SANDBOX_NOT_READY`` (pending, suspended) or 502 ``SANDBOX_UNREACHABLE`` (ended).

Forwarding (:meth:`IngressRules.forwarded`), the same for an HTTP request and a WebSocket handshake: the platform
session cookies are removed, other cookies stay (the networking docs: "The sandbox proxy consumes the Tensorlake
session cookie and removes it before forwarding the request to the sandbox"). The docs say nothing else about
headers; by sandproof's choice an ``Authorization: Bearer <key>`` header whose key is a project key the mock
accepts is removed too, so sandbox code never sees a tenant's API key, and every other header (including the
SDK's ``X-Forwarded-Organization-Id`` / ``-Project-Id``, which name the tenant but grant nothing) passes as
sent. The path and the query string pass unchanged.

Known deviations from the real proxy: a bearer key is removed before forwarding whenever the mock accepts it
as a project key (with the default "any key" setting: every bearer token), so an app behind the proxy cannot
receive bearer tokens of its own; error codes beyond the SDK's known ``SANDBOX_NOT_READY`` /
``SANDBOX_UNREACHABLE`` are the mock's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from mockserver.core.errors import ApiError
from mockserver.core.journal import RequestNotes

from .auth import SESSION_COOKIES, KeyRing, bearer_key, parse_cookies, session_token
from .operations import TensorLakeModel
from .records import Sandbox, owner_id
from .validation import MANAGEMENT_PORT
from .waits import Settle

__all__ = [
    "READY",
    "RESUME_BUDGET",
    "Admission",
    "IngressRules",
    "ProxyRequest",
    "Target",
    "parse_label",
    "target_of",
]

Headers = list[tuple[bytes, bytes]]

RESUME_BUDGET = 30.0
#: Statuses in which the proxy forwards a request.
READY = frozenset({"running", "snapshotting", "suspending"})
_PORT_LABEL = re.compile(r"^(\d{1,5})-(.+)$")


@dataclass(frozen=True)
class Target:
    """The sandbox label (an id or a name) and the port a request is for."""

    label: str
    port: int


def parse_label(label: str) -> Target | None:
    """Return the target of one host label (``8080-my-env`` or ``my-env``), or None when it names none."""
    if not label or "." in label:
        return None
    match = _PORT_LABEL.match(label)
    if match:
        port = int(match.group(1))
        return Target(match.group(2), port) if 1 <= port <= 65535 else None
    return Target(label, MANAGEMENT_PORT)


def target_of(host: str | None, sandbox_header: str | None, path: str, domain: str) -> Target | None:
    """Return the sandbox target of a request from its Host and ``X-Tensorlake-Sandbox-Id`` headers, or None."""
    host = (host or "").lower()
    hostname = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if hostname.endswith(".local"):
        return parse_label(hostname[: -len(".local")])
    if hostname.endswith("." + domain):
        return parse_label(hostname[: -len(domain) - 1])
    if sandbox_header and not path.startswith("/_mock"):
        return Target(sandbox_header.strip(), MANAGEMENT_PORT)
    return None


@dataclass(frozen=True)
class ProxyRequest:
    """What the proxy reads of a request: its target, ``Authorization`` and ``Cookie`` headers, query string."""

    target: Target
    authorization: str | None = None
    cookie: str | None = None
    query: str = ""
    notes: RequestNotes = field(default_factory=RequestNotes)


@dataclass(frozen=True)
class Admission:
    """A request the proxy lets through: the sandbox it reaches and whether its bearer key is removed."""

    sandbox: Sandbox
    port: int
    strip_authorization: bool


class IngressRules:
    """Decide proxied requests against one model (its sandboxes, sessions and accepted keys)."""

    def __init__(self, model: TensorLakeModel) -> None:
        self.model = model

    def admit(self, request: ProxyRequest) -> Admission | Settle[Admission]:
        """Admit ``request`` (waking a suspended ``auto_resume`` sandbox first) or raise the refusal."""
        sandbox = self.check(request)
        if sandbox.status == "suspended" and sandbox.auto_resume:
            self.model.wake(sandbox)
        if sandbox.status == "pending" and sandbox.resuming:
            return Settle(sandbox.transition_at, RESUME_BUDGET, lambda waited: self.ready(request, sandbox))
        return self.ready(request, sandbox)

    def check(self, request: ProxyRequest, keys: KeyRing | None = None) -> Sandbox:
        """Return the sandbox ``request`` may reach (only settled to now, not woken); raise the refusal.

        ``keys`` replaces the model's accepted keys (what a caller that does not know them asks "what if").
        """
        target = request.target
        key = bearer_key(request.authorization)
        owner = None if key is None else owner_id(key)
        sandbox = self.model.find_any(target.label, owner) or self.model.find_any(target.label)
        if sandbox is None:
            raise ApiError(404, "SANDBOX_NOT_FOUND", f"no sandbox {target.label!r}")
        request.notes.sandbox_id = sandbox.id
        user_port = target.port != MANAGEMENT_PORT
        if user_port and target.port not in sandbox.exposed_ports:
            raise ApiError(403, "PORT_NOT_EXPOSED", f"port {target.port} is not in exposed_ports")
        if not (user_port and sandbox.allow_unauthenticated_access):
            self.authorise(request, sandbox, keys or self.model.keys)
            request.notes.tenant = f"{sandbox.owner}/{sandbox.namespace}"
        return sandbox

    def authorise(self, request: ProxyRequest, sandbox: Sandbox, keys: KeyRing) -> None:
        """Accept the owner's bearer key or a session cookie scoped to the sandbox's project; else refuse."""
        key = bearer_key(request.authorization)
        if key is not None:
            if not keys.accepts(key):
                raise ApiError(401, "INVALID_API_KEY", "the API key is not valid")
            if owner_id(key) != sandbox.owner:
                raise ApiError(403, "FORBIDDEN", "the API key does not grant access to this sandbox")
            return
        token = session_token(parse_cookies(request.cookie))
        if token is None:
            raise ApiError(401, "UNAUTHENTICATED", "this endpoint needs an API key or a session cookie")
        session = self.model.sessions.get(token)
        if session is None:
            raise ApiError(401, "INVALID_SESSION", "the session cookie is not valid")
        query = parse_qs(request.query)
        org = next(iter(query.get("organizationId", [])), None)
        project = next(iter(query.get("projectId", [])), None)
        if not org or not project:
            raise ApiError(401, "MISSING_PROJECT", "session auth needs organizationId and projectId query parameters")
        if (org, project) != (session.organization_id, session.project_id) or session.owner != sandbox.owner:
            raise ApiError(403, "FORBIDDEN", "the session does not grant access to this sandbox's project")

    def ready(self, request: ProxyRequest, sandbox: Sandbox) -> Admission:
        """Return the admission of a checked request once any wake settled; 503 or 502 unless it runs."""
        self.model.settle(sandbox)
        if sandbox.status in READY:
            key = bearer_key(request.authorization)
            strip = key is not None and self.model.keys.accepts(key)
            return Admission(sandbox, request.target.port, strip)
        if sandbox.status in ("pending", "suspended"):
            raise ApiError(503, "SANDBOX_NOT_READY", f"sandbox {sandbox.id} is {sandbox.status}")
        raise ApiError(502, "SANDBOX_UNREACHABLE", f"sandbox {sandbox.id} is {sandbox.status}")

    def forwarded(self, headers: Iterable[tuple[bytes, bytes]], admission: Admission) -> Headers:
        """Return the request headers the sandbox receives: no session cookie, no project key."""
        out: Headers = []
        for key, value in headers:
            if key == b"authorization" and admission.strip_authorization:
                continue
            if key != b"cookie":
                out.append((key, value))
                continue
            kept = [
                part.strip()
                for part in value.decode("latin-1").split(";")
                if part.strip() and part.split("=", 1)[0].strip() not in SESSION_COOKIES
            ]
            if kept:
                out.append((key, "; ".join(kept).encode("latin-1")))
        return out
