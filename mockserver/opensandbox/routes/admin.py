"""The OpenSandbox admin routes (``/_mock/opensandbox/...``): kill a sandbox as its container would die.

They sit beside the shared ``/_mock`` service (reset, clock, faults, journal ...), which handles the mock's
whole state; these act on one sandbox through :mod:`..model.admin`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.requests import read_json

from ..model import admin
from ..model.store import OpenSandboxState

__all__ = ["PREFIX", "admin_routes"]

PREFIX = "/_mock/opensandbox"


def admin_routes(state: OpenSandboxState) -> list[BaseRoute]:
    """Return ``POST .../sandboxes/{id}/oom`` and ``POST .../sandboxes/{id}/fail``."""

    async def oom(request: Request) -> Response:
        body = await read_json(request, empty={})
        return JSONResponse(admin.oom_kill(state, request.path_params["sandbox_id"], body))

    async def fail(request: Request) -> Response:
        body = await read_json(request, empty={})
        return JSONResponse(admin.fail_sandbox(state, request.path_params["sandbox_id"], body))

    return [
        Route(f"{PREFIX}/sandboxes/{{sandbox_id}}/oom", oom, methods=["POST"]),
        Route(f"{PREFIX}/sandboxes/{{sandbox_id}}/fail", fail, methods=["POST"]),
    ]
