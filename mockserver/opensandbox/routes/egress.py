"""The egress sidecar's routes (port 18080): ``/policy`` calls :func:`~..model.egress.sidecar_policy`, the
credential vault (``/credential-vault…``) :func:`~..model.vault.vault_call`."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.requests import read_body

from ..model import egress, vault
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

    async def credential_vault(request: Request) -> Response:
        sb = sandbox_of(request)
        subpath = request.path_params.get("subpath")
        if subpath == "_active":  # the proxy's own route: refused before the token is read
            if request.method != "GET":
                return _not_allowed("GET")
            return PlainTextResponse("forbidden\n", status_code=403)
        egress.check_egress_token(ctx.config, request.headers.get(egress.EGRESS_AUTH_HEADER))
        raw = await read_body(request) if request.method in ("POST", "PATCH") else b""
        try:
            answer = vault.vault_call(sb, request.method, subpath, raw)
        except vault.NotAllowed as exc:
            return _not_allowed(exc.allow)
        if answer.body is None:
            return Response(status_code=answer.status)
        return JSONResponse(answer.body, status_code=answer.status)

    every = ["GET", "POST", "PUT", "PATCH", "DELETE"]  # what the server proxy forwards
    return [
        Route("/policy", policy, methods=list(egress.POLICY_METHODS)),
        Route("/credential-vault", credential_vault, methods=every),
        Route("/credential-vault/{subpath:path}", credential_vault, methods=every),
    ]


def _not_allowed(allow: str) -> Response:
    """Return Go's ``http.Error`` 405 with the handler's ``Allow``."""
    return PlainTextResponse("method not allowed\n", status_code=405, headers={"Allow": allow})
