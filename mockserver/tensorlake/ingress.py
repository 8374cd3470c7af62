"""The sandbox proxy: route requests for a sandbox by Host header, authorise them, forward them.

Routing (the first that applies):

* ``Host: <port>-<id-or-name>.<domain>``: user port ``<port>``; ``Host: <id-or-name>.<domain>``: the
  management API (port 9501). ``<domain>`` is the mock's ingress domain (``sandbox.localhost`` by
  default); the SDK's local forms ``<id>.local`` and ``<port>-<id>.local`` work the same way.
* ``X-Tensorlake-Sandbox-Id: <id>`` with any other host: the management API (what the SDK sends when
  ``sandbox_url`` is not a localhost URL).
* Anything else goes to the lifecycle and admin routes.

Authorisation: the management API always needs auth: the owner's ``Authorization: Bearer <key>``, or
a browser session cookie (``tl.session_token``, or the legacy ``tl-session``) together with matching
``organizationId`` and ``projectId`` query parameters. A user port is forwarded only if it is in
``exposed_ports``, and without auth only if ``allow_unauthenticated_access`` is set. The session
cookie is removed before forwarding; other cookies, the path and the query string pass unchanged.
A request for a suspended sandbox with ``auto_resume`` wakes it (on the virtual clock) first.
WebSocket upgrades are forwarded the same way; a refused upgrade is closed before it is accepted
(the client sees HTTP 403).

A user port serves the app a test registered with ``TensorLakeMock.register_port_app``, else an echo
app that answers the request it received as JSON.

Known deviations from the real proxy: no TLS and no HTTP/2 (so no gRPC); session tokens are whatever
``TensorLakeMock.create_session`` issued; the ``Authorization`` header is forwarded unchanged; error
codes beyond the SDK's known ``SANDBOX_NOT_READY`` / ``SANDBOX_UNREACHABLE`` are the mock's own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import notes
from mockserver.asgi.render import error_response

from .management import SANDBOX_KEY, runtime_error
from .records import Sandbox, owner_id
from .validate import MANAGEMENT_PORT

if TYPE_CHECKING:
    from .mock import TensorLakeMock

PORT_KEY = "tensorlake_port"
SESSION_COOKIES = ("tl.session_token", "tl-session")
RESUME_BUDGET = 30.0
_PORT_LABEL = re.compile(r"^(\d{1,5})-(.+)$")


@dataclass(frozen=True)
class Target:
    """The sandbox label and port a request is for."""

    label: str
    port: int


class Refusal(Exception):
    """A request the proxy answers itself with ``status`` and ``code``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    return list(scope.get("headers") or [])


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in _headers(scope):
        if key == name:
            return value.decode("latin-1")
    return None


def parse_label(label: str) -> Target | None:
    """Return the target of one host label (``8080-my-env`` or ``my-env``)."""
    if not label or "." in label:
        return None
    match = _PORT_LABEL.match(label)
    if match:
        port = int(match.group(1))
        return Target(match.group(2), port) if 1 <= port <= 65535 else None
    return Target(label, MANAGEMENT_PORT)


def strip_session_cookies(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Return the headers with the platform session cookies removed from every Cookie header."""
    out: list[tuple[bytes, bytes]] = []
    for key, value in headers:
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


class Ingress:
    """The ASGI front door: sandbox hosts go through the proxy, everything else to ``fallback``."""

    def __init__(self, mock: TensorLakeMock, fallback: ASGIApp) -> None:
        self.mock = mock
        self.fallback = fallback

    def target(self, scope: Scope) -> Target | None:
        """Return the sandbox target of a request, or None when it is not for a sandbox."""
        host = (_header(scope, b"host") or "").lower()
        hostname = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        domain = self.mock.ingress_domain
        if hostname.endswith(".local"):
            return parse_label(hostname[: -len(".local")])
        if hostname.endswith("." + domain):
            return parse_label(hostname[: -len(domain) - 1])
        sandbox_header = _header(scope, b"x-tensorlake-sandbox-id")
        if sandbox_header and not str(scope.get("path", "")).startswith("/_mock"):
            return Target(sandbox_header.strip(), MANAGEMENT_PORT)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.fallback(scope, receive, send)
            return
        target = self.target(scope)
        if target is None:
            await self.fallback(scope, receive, send)
            return
        try:
            sandbox = await self.admit(scope, target)
        except Refusal as refusal:
            await self.refuse(scope, send, refusal)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        state[SANDBOX_KEY] = sandbox
        state[PORT_KEY] = target.port
        forwarded = {**scope, "headers": strip_session_cookies(_headers(scope))}
        if target.port == MANAGEMENT_PORT:
            await self.mock.management.app(forwarded, receive, send)
        else:
            await self.mock.port_app(sandbox.id, target.port)(forwarded, receive, send)

    async def admit(self, scope: Scope, target: Target) -> Sandbox:
        """Return the sandbox a request may reach, waking it if needed; raise :class:`Refusal` otherwise."""
        model = self.mock.model
        key = self._bearer(scope)
        owner = None if key is None else owner_id(key)
        sandbox = model.find_any(target.label, owner) or model.find_any(target.label)
        if sandbox is None:
            raise Refusal(404, "SANDBOX_NOT_FOUND", f"no sandbox {target.label!r}")
        request_notes = notes(scope)
        request_notes.sandbox_id = sandbox.id
        public = target.port != MANAGEMENT_PORT and sandbox.allow_unauthenticated_access
        if target.port != MANAGEMENT_PORT and target.port not in sandbox.exposed_ports:
            raise Refusal(403, "PORT_NOT_EXPOSED", f"port {target.port} is not in exposed_ports")
        if not public:
            self.authorise(scope, sandbox, key)
            request_notes.tenant = f"{sandbox.owner}/{sandbox.namespace}"
        if sandbox.status == "suspended" and sandbox.auto_resume:
            model.wake(sandbox)
        if sandbox.status == "pending" and sandbox.resuming:
            await self.mock.wait_until(sandbox.transition_at, RESUME_BUDGET)
            model.settle(sandbox)
        if sandbox.status in ("running", "snapshotting", "suspending"):
            return sandbox
        if sandbox.status in ("pending", "suspended"):
            raise Refusal(503, "SANDBOX_NOT_READY", f"sandbox {sandbox.id} is {sandbox.status}")
        raise Refusal(502, "SANDBOX_UNREACHABLE", f"sandbox {sandbox.id} is {sandbox.status}")

    def _bearer(self, scope: Scope) -> str | None:
        header = _header(scope, b"authorization") or ""
        scheme, _, key = header.partition(" ")
        return key.strip() or None if scheme.lower() == "bearer" else None

    def authorise(self, scope: Scope, sandbox: Sandbox, key: str | None) -> None:
        """Accept the owner's bearer key or a session cookie scoped to its project; else refuse."""
        if key is not None:
            if not self.mock.key_is_valid(key):
                raise Refusal(401, "INVALID_API_KEY", "the API key is not valid")
            if owner_id(key) != sandbox.owner:
                raise Refusal(403, "FORBIDDEN", "the API key does not grant access to this sandbox")
            return
        cookies = cookie_parser(_header(scope, b"cookie") or "")
        token = next((cookies[name] for name in SESSION_COOKIES if cookies.get(name)), None)
        if token is None:
            raise Refusal(401, "UNAUTHENTICATED", "this endpoint needs an API key or a session cookie")
        session = self.mock.model.sessions.get(token)
        if session is None:
            raise Refusal(401, "INVALID_SESSION", "the session cookie is not valid")
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        org = next(iter(query.get("organizationId", [])), None)
        project = next(iter(query.get("projectId", [])), None)
        if not org or not project:
            raise Refusal(401, "MISSING_PROJECT", "session auth needs organizationId and projectId query parameters")
        if (org, project) != (session.organization_id, session.project_id) or session.owner != sandbox.owner:
            raise Refusal(403, "FORBIDDEN", "the session does not grant access to this sandbox's project")

    async def refuse(self, scope: Scope, send: Send, refusal: Refusal) -> None:
        """Answer a refused request (close a refused WebSocket before accepting it)."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refusal.code})
            return
        await error_response(runtime_error(refusal.status, refusal.code, refusal.message))(scope, _no_body, send)


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer an HTTP request with what reached the sandbox, as JSON; echo WebSocket messages back."""
    state = scope.get("state") or {}
    sandbox = state.get(SANDBOX_KEY)
    if scope["type"] == "websocket":
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                await send({"type": "websocket.send", "text": message["text"]})
            else:
                await send({"type": "websocket.send", "bytes": message.get("bytes") or b""})
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if not message.get("more_body"):
            break
    headers: dict[str, str] = {}
    for key, value in _headers(scope):
        name = key.decode("latin-1")
        headers[name] = f"{headers[name]}, {value.decode('latin-1')}" if name in headers else value.decode("latin-1")
    payload = {
        "sandbox_id": None if sandbox is None else sandbox.id,
        "port": state.get(PORT_KEY),
        "method": scope.get("method"),
        "path": scope.get("path"),
        "query": bytes(scope.get("query_string", b"")).decode("latin-1"),
        "headers": headers,
        "cookies": cookie_parser(headers.get("cookie", "")),
        "body": body.decode("utf-8", "replace"),
    }
    data = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})
