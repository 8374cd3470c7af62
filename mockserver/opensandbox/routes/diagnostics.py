"""The lifecycle server's diagnostics routes, under ``/v1`` and bare: call :mod:`..model.diagnostics`, render."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.middleware import notes

from ..model import diagnostics
from ..model.store import OpenSandboxState
from .lifecycle import _route
from .render import tenant_of

__all__ = ["diagnostics_routes"]

Handler = Callable[[OpenSandboxState, str, str, list[tuple[str, str]]], "diagnostics.Answer"]


def _render(answer: diagnostics.Answer) -> Response:
    """Render a plain-text answer (with ``Deprecation: true`` when deprecated) or a JSON descriptor."""
    if isinstance(answer, diagnostics.PlainText):
        headers = {"Deprecation": "true"} if answer.deprecated else None
        return PlainTextResponse(answer.content, headers=headers)
    return JSONResponse(answer)


def diagnostics_routes(state: OpenSandboxState) -> list[BaseRoute]:
    """Return ``GET /sandboxes/{sandbox_id}/diagnostics/{logs,events,inspect,summary}`` under ``/v1`` and bare."""
    handlers: dict[str, Handler] = {
        "logs": diagnostics.logs,
        "inspect": lambda st, tenant, sid, query: diagnostics.inspect(st, tenant, sid),
        "events": diagnostics.events,
        "summary": diagnostics.summary,
    }

    def endpoint(handler: Handler) -> Callable[[Request], Any]:
        async def serve(request: Request) -> Response:
            sandbox_id = str(request.path_params["sandbox_id"])
            notes(request.scope).sandbox_id = sandbox_id
            notes(request.scope).tenant = tenant_of(request)
            return _render(handler(state, tenant_of(request), sandbox_id, request.query_params.multi_items()))

        return serve

    return [
        _route(f"{prefix}/sandboxes/{{sandbox_id}}/diagnostics/{name}", endpoint(handler), "GET")
        for prefix in ("/v1", "")
        for name, handler in handlers.items()
    ]
