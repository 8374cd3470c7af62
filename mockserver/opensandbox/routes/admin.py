"""The OpenSandbox admin routes (``/_mock/opensandbox/...``): kill a sandbox as its container would die.

They sit beside the shared ``/_mock`` service (reset, clock, faults, journal ...), which handles the mock's
whole state; these act on one sandbox through :mod:`..model.admin`. Each handler takes the state and the
request; :data:`ROWS` lists them.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.requests import read_json

from ..model import admin
from ..model.operations import OpenSandboxModel

__all__ = ["PREFIX", "ROWS", "admin_routes"]

PREFIX = "/_mock/opensandbox"


async def oom(state: OpenSandboxModel, request: Request) -> Response:
    """OOM-kill a sandbox now (exit 137), or at its next command with ``{"on_next_exec": true}``."""
    body = await read_json(request, empty={})
    return JSONResponse(admin.oom_kill(state, request.path_params["sandbox_id"], body))


async def fail(state: OpenSandboxModel, request: Request) -> Response:
    """Mark a sandbox Failed (by default: its container exited with code 1)."""
    body = await read_json(request, empty={})
    return JSONResponse(admin.fail_sandbox(state, request.path_params["sandbox_id"], body))


#: ``POST .../sandboxes/{id}/oom`` and ``POST .../sandboxes/{id}/fail``.
ROWS: list[Row[OpenSandboxModel]] = [
    Row(f"{PREFIX}/sandboxes/{{sandbox_id}}/oom", "POST", oom),
    Row(f"{PREFIX}/sandboxes/{{sandbox_id}}/fail", "POST", fail),
]


def admin_routes(state: OpenSandboxModel) -> list[BaseRoute]:
    """Return the admin routes (one route of each path, as the shared ``/_mock`` service's)."""
    return bind(state, ROWS, per_method=False)
