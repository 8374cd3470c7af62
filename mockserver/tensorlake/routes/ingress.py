"""The sandbox proxy's front door: route a request by Host header, admit it, forward it to the sandbox.

The rules (routing, admission, the wake of a suspended sandbox, what is forwarded) are the model's
(:mod:`..model.ingress`); this ASGI app reads the headers, asks :class:`~..model.ingress.IngressRules`, awaits
the resume wait it decides, and passes the request on: port 9501 to the management API, a user port to the app
registered for it (the echo app of :mod:`.echo` by default). Requests for no sandbox go to ``fallback`` (the
lifecycle and admin routes). WebSocket upgrades are forwarded the same way; a refused upgrade is closed before
it is accepted (the client sees HTTP 403).

Known deviations from the real proxy: no TLS and no HTTP/2 (so no gRPC).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import notes
from mockserver.core.clock import VirtualClock
from mockserver.core.errors import ApiError

from ..model.ingress import Admission, IngressRules, ProxyRequest, Target, target_of
from ..model.records import Sandbox
from ..model.validation import MANAGEMENT_PORT
from .common import PORT_KEY, SANDBOX_KEY, daemon_error, settle

__all__ = ["Ingress", "IngressContext"]


@dataclass(frozen=True)
class IngressContext:
    """What the proxy uses: its rules, the ingress domain, the clock, and the apps it forwards to.

    ``prepare`` (when given) is awaited before an admitted request is forwarded: the runtime readies the
    sandbox (the linux runtime makes its real sandbox on first use).
    """

    rules: IngressRules
    domain: str
    clock: VirtualClock
    management: ASGIApp
    port_app: Callable[[str, int], ASGIApp]
    prepare: Callable[[Sandbox], Awaitable[object]] | None = None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


class Ingress:
    """The ASGI front door: sandbox hosts go through the proxy, everything else to ``fallback``."""

    def __init__(self, context: IngressContext, fallback: ASGIApp) -> None:
        self.context = context
        self.rules = context.rules
        self.fallback = fallback

    def target(self, scope: Scope) -> Target | None:
        """Return the sandbox target of a request, or None when it is not for a sandbox."""
        return target_of(
            _header(scope, b"host"),
            _header(scope, b"x-tensorlake-sandbox-id"),
            str(scope.get("path", "")),
            self.context.domain,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self.target(scope) if scope["type"] in ("http", "websocket") else None
        if target is None:
            await self.fallback(scope, receive, send)
            return
        request = ProxyRequest(
            target,
            authorization=_header(scope, b"authorization"),
            cookie=_header(scope, b"cookie"),
            query=bytes(scope.get("query_string", b"")).decode("latin-1"),
            notes=notes(scope),
        )
        try:
            admission = await settle(self.rules.admit(request), self.context.clock)
        except ApiError as refusal:
            await self.refuse(scope, send, refusal)
            return
        await self.forward(scope, receive, send, admission)

    async def forward(self, scope: Scope, receive: Receive, send: Send, admission: Admission) -> None:
        """Pass an admitted request on to the sandbox's management API or user-port app."""
        state: dict[str, Any] = scope.setdefault("state", {})
        state[SANDBOX_KEY] = admission.sandbox
        state[PORT_KEY] = admission.port
        forwarded = {**scope, "headers": self.rules.forwarded(scope.get("headers") or [], admission)}
        if self.context.prepare is not None:
            await self.context.prepare(admission.sandbox)
        if admission.port == MANAGEMENT_PORT:
            await self.context.management(forwarded, receive, send)
        else:
            await self.context.port_app(admission.sandbox.id, admission.port)(forwarded, receive, send)

    async def refuse(self, scope: Scope, send: Send, refusal: ApiError) -> None:
        """Answer a refused request (close a refused WebSocket before accepting it)."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refusal.code})
            return
        await daemon_error(refusal)(scope, _no_body, send)
