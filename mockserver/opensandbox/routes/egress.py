"""The egress sidecar's route (port 18080 ``/policy``): read the body, call :func:`~..model.egress.sidecar_policy`."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.requests import read_body

from ..model import egress
from ..model.config import ServerConfig
from .render import sandbox_of

__all__ = ["EgressContext", "egress_routes"]


@dataclass(frozen=True)
class EgressContext:
    """What the sidecar route uses: the server settings (its token and enforcement mode)."""

    config: ServerConfig


def egress_routes(ctx: EgressContext) -> list[BaseRoute]:
    """Return the sidecar routes of the sandbox the port gate admitted."""

    async def policy(request: Request) -> Response:
        sb = sandbox_of(request)
        raw = b"" if request.method == "GET" else await read_body(request)
        token = request.headers.get(egress.EGRESS_AUTH_HEADER)
        return JSONResponse(egress.sidecar_policy(sb, ctx.config, request.method, raw, token))

    return [Route("/policy", policy, methods=list(egress.POLICY_METHODS))]
