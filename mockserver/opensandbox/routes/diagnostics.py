"""The lifecycle server's diagnostics routes, under ``/v1`` and bare: call :mod:`..model.diagnostics`, render.

Each handler takes the state and the request; :data:`ROWS` lists them (one route per method, no HEAD, as the
lifecycle routes)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.handlers import Row, bind

from ..model import diagnostics
from ..model.store import OpenSandboxState
from .render import sandbox_id_of, tenant_of

__all__ = ["ROWS", "diagnostics_routes"]


def _render(answer: diagnostics.Answer) -> Response:
    """Render a plain-text answer (with ``Deprecation: true`` when deprecated) or a JSON descriptor."""
    if isinstance(answer, diagnostics.PlainText):
        headers = {"Deprecation": "true"} if answer.deprecated else None
        return PlainTextResponse(answer.content, headers=headers)
    return JSONResponse(answer)


async def logs(state: OpenSandboxState, request: Request) -> Response:
    """Return a sandbox's logs."""
    sandbox_id = sandbox_id_of(request)
    return _render(diagnostics.logs(state, tenant_of(request), sandbox_id, request.query_params.multi_items()))


async def inspect(state: OpenSandboxState, request: Request) -> Response:
    """Return a sandbox's inspection."""
    sandbox_id = sandbox_id_of(request)
    return _render(diagnostics.inspect(state, tenant_of(request), sandbox_id))


async def events(state: OpenSandboxState, request: Request) -> Response:
    """Return a sandbox's events."""
    sandbox_id = sandbox_id_of(request)
    return _render(diagnostics.events(state, tenant_of(request), sandbox_id, request.query_params.multi_items()))


async def summary(state: OpenSandboxState, request: Request) -> Response:
    """Return a sandbox's diagnostic summary."""
    sandbox_id = sandbox_id_of(request)
    return _render(diagnostics.summary(state, tenant_of(request), sandbox_id, request.query_params.multi_items()))


_AT = "/sandboxes/{sandbox_id}/diagnostics"

#: ``GET /sandboxes/{sandbox_id}/diagnostics/{logs,inspect,events,summary}``.
ROWS: list[Row[OpenSandboxState]] = [
    Row(f"{_AT}/logs", "GET", logs),
    Row(f"{_AT}/inspect", "GET", inspect),
    Row(f"{_AT}/events", "GET", events),
    Row(f"{_AT}/summary", "GET", summary),
]


def diagnostics_routes(state: OpenSandboxState) -> list[BaseRoute]:
    """Return the diagnostics routes under ``/v1`` and bare."""
    return bind(state, ROWS, per_method=True, prefixes=("/v1", ""))
