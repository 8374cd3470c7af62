"""The sandbox-port dispatcher behind ``/direct/{id}/{port}`` and ``/v1/sandboxes/{id}/proxy/{port}``.

For HTTP and WebSocket alike: read the credentials, ask the model's gate (:func:`~..model.ports.admit_port`)
and either render its refusal (an HTTP answer, or a close before the WebSocket handshake is accepted, code
4000 + the HTTP status) or hand the request to the port's service, whose router answers a WebSocket it does
not serve with close code 4404.

A proxied request (``via_proxy``) reaches the service with its headers cleaned by the model's rule
(:func:`~..model.forwarding.proxy_headers`: no credentials, hop-by-hop or client-sent forwarding headers,
``X-Forwarded-Proto/-Host/-For`` rebuilt from the connection); a direct one keeps them all.

Known deviations: with the emulator execd takes no WebSocket (its PTY needs the linux runtime), so a
WebSocket to execd's port is closed before the handshake is accepted: 4404 when the gate admits it, else
4000 + the HTTP status the gate would answer (4401 without a valid key, 4404 / 4502 for a sandbox that is
not there or not the caller's); a server on a socket then refuses the handshake with 403. The emulator's
other ports are served by the echo app (:mod:`.echo`), which takes WebSockets. With the linux runtime,
execd's ``/pty/{id}/ws`` and the sandbox's own ports take WebSockets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import notes
from mockserver.asgi.routing import IndexedRouter
from mockserver.core import ApiError

from ..model.auth import API_KEY_HEADER, SECURE_ACCESS_HEADER
from ..model.config import ServerConfig
from ..model.execd import EXECD_TOKEN_HEADER
from ..model.forwarding import proxy_headers
from ..model.ports import PROXY_METHODS, PortCall, admit_port
from ..model.records import SandboxRecord
from ..model.store import OpenSandboxState
from .render import SANDBOX_KEY, TENANT_KEY, VIA_PROXY_KEY, close_code, error_response

__all__ = ["NOT_SERVED_CLOSE", "PortContext", "PortDispatcher", "service_router"]

#: The close code of a WebSocket to a path no sandbox-port service serves.
NOT_SERVED_CLOSE = 4404


async def _not_served(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": NOT_SERVED_CLOSE, "reason": "not found"})
        return
    raise HTTPException(status_code=404)


def service_router(routes: Sequence[BaseRoute]) -> Router:
    """Return the router of one port's service (a path it does not serve: 404, or close 4404 for a WebSocket)."""
    return IndexedRouter(routes=list(routes), default=_not_served)


@dataclass(frozen=True)
class PortContext:
    """What the dispatcher uses: the state, the server settings, each served port's router, and the app of
    any other port (``user_port``, when the runtime serves the sandbox's own ports)."""

    state: OpenSandboxState
    config: ServerConfig
    services: Mapping[int, ASGIApp]
    user_port: Callable[[SandboxRecord, int], ASGIApp] | None = None


#: The credential headers the gate reads (lower case, as ASGI servers send names).
_CREDENTIALS = tuple(h.lower().encode("latin-1") for h in (API_KEY_HEADER, SECURE_ACCESS_HEADER, EXECD_TOKEN_HEADER))


def _credentials(scope: Scope) -> dict[bytes, str]:
    """Return the first value of each credential header the request carries, in one pass over its headers."""
    found: dict[bytes, str] = {}
    for key, value in scope.get("headers") or []:
        name = key.lower()
        if name in _CREDENTIALS and name not in found:
            found[name] = bytes(value).decode("latin-1")
    return found


class PortDispatcher:
    """Route a request for ``/{sandbox_id}/{port}/...`` to that sandbox's execd or egress sidecar."""

    def __init__(self, ctx: PortContext, *, via_proxy: bool) -> None:
        self.ctx = ctx
        self.via_proxy = via_proxy

    def forwarded(self, scope: Scope) -> list[tuple[bytes, bytes]]:
        """Return the headers a proxied request carries on to the port's service (the model's rule)."""
        client = scope.get("client")
        return proxy_headers(scope.get("headers") or [], str(scope.get("scheme", "http")), client and client[0])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope.get("path_params", {})
        sandbox_id, port = str(params["sandbox_id"]), int(params["port"])
        state: dict[str, object] = scope.setdefault("state", {})
        state[VIA_PROXY_KEY] = self.via_proxy
        if scope["type"] == "http":
            notes(scope).sandbox_id = sandbox_id
            if self.via_proxy and scope["method"] not in PROXY_METHODS:
                raise HTTPException(status_code=405, headers={"Allow": ", ".join(sorted(PROXY_METHODS))})
        tenant = state.get(TENANT_KEY)
        api_key, access_token, execd_token = _CREDENTIALS
        sent = _credentials(scope)
        call = PortCall(
            sandbox_id,
            port,
            self.via_proxy,
            tenant=tenant if isinstance(tenant, str) else None,
            api_key=sent.get(api_key),
            access_token=sent.get(access_token),
            execd_token=sent.get(execd_token),
        )
        try:
            sb = admit_port(self.ctx.state, self.ctx.config, call)
        except ApiError as exc:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": close_code(exc), "reason": exc.code})
            else:
                await error_response(exc)(scope, receive, send)
            return
        state[SANDBOX_KEY] = sb
        if self.via_proxy:
            scope = {**scope, "headers": self.forwarded(scope)}
        service = self.ctx.services.get(port)
        if service is None and self.ctx.user_port is not None:
            service = self.ctx.user_port(sb, port)
        if service is None:
            await _not_served(scope, receive, send)
            return
        await service(scope, receive, send)
