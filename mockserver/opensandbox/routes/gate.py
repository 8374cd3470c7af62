"""The outer layers of the OpenSandbox app: ``X-Request-ID`` on every answer, CORS, the lifecycle API-key check.

The rules are the model's (:func:`~..model.auth.lifecycle_tenant`, :data:`~..model.config.CORS`); this layer
reads the headers, records the tenant in the scope for the routes, and renders a refusal: the real server's
401 JSON for HTTP, a close before the handshake is accepted (code 4401) for a WebSocket. The layers nest as
on the real server: the request id outside CORS outside authentication, so a preflight needs no key and a
401 still carries the CORS headers.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mockserver.core import ApiError

from ..model.auth import API_KEY_HEADER, KeyTable, is_lifecycle_path, lifecycle_tenant
from ..model.config import CORS
from .render import TENANT_KEY, close_code, error_response

__all__ = ["RequestGate"]


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}


def _last(scope: Scope, name: bytes) -> str | None:
    """Return the last value of header ``name`` (lower case), as :func:`_headers` keeps it."""
    found = None
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            found = value
    return None if found is None else bytes(found).decode("latin-1")


class RequestGate:
    """Stamp ``X-Request-ID`` on every HTTP answer, apply CORS and authenticate lifecycle requests by API key.

    ``new_id`` makes a request id when the client sent none. Paths under ``/_mock`` and ``/direct`` are not
    the lifecycle server's: no CORS, and the admin service and the sandbox-port gate decide about them.
    """

    def __init__(self, app: ASGIApp, access: KeyTable, new_id: Callable[[], str]) -> None:
        self.app = app
        self.access = access
        self.new_id = new_id
        self.cors = CORSMiddleware(
            self._authenticated,
            allow_origins=CORS.allow_origins,
            allow_methods=CORS.allow_methods,
            allow_headers=CORS.allow_headers,
            allow_credentials=CORS.allow_credentials,
            expose_headers=CORS.expose_headers,
            max_age=CORS.max_age,
        )

    def _admit(self, scope: Scope, headers: dict[str, str]) -> ApiError | None:
        path = str(scope.get("path", ""))
        if not is_lifecycle_path(path):
            return None
        try:
            tenant = lifecycle_tenant(self.access, path, headers.get(API_KEY_HEADER))
        except ApiError as exc:
            return exc
        if tenant is not None:
            scope.setdefault("state", {})[TENANT_KEY] = tenant
        return None

    async def _authenticated(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._pass(scope, receive, send, _headers(scope))

    async def _pass(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        denied = self._admit(scope, headers)
        if denied is not None:
            await error_response(denied)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            denied = self._admit(scope, _headers(scope))
            if denied is not None:
                await send({"type": "websocket.close", "code": close_code(denied), "reason": denied.code})
                return
            await self.app(scope, receive, send)
            return
        lifecycle = is_lifecycle_path(str(scope.get("path", "")))
        # Off the lifecycle paths only the request id is read (nothing to admit, no CORS).
        headers = _headers(scope) if lifecycle else None
        sent_id = headers.get("x-request-id") if headers is not None else _last(scope, b"x-request-id")
        request_id = (sent_id or "").strip() or self.new_id()
        # Without an Origin, CORS only adds ``Vary: Origin``: done here, without the CORS layer's send wrapper.
        vary = headers is not None and "origin" not in headers

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                sent = list(message.get("headers", []))
                if vary:
                    values = [v.decode("latin-1") for k, v in sent if k.lower() == b"vary"]
                    sent = [(k, v) for k, v in sent if k.lower() != b"vary"]
                    sent.append((b"vary", ", ".join([*values, "Origin"]).encode("latin-1")))
                sent.append((b"x-request-id", request_id.encode("latin-1")))
                message = {**message, "headers": sent}
            await send(message)

        if headers is None:
            await self.app(scope, receive, stamped)  # not the lifecycle server's: nothing to admit
        elif not vary:
            await self.cors(scope, receive, stamped)
        else:
            await self._pass(scope, receive, stamped, headers)
