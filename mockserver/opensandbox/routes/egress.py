"""The egress sidecar's routes (port 18080): ``/policy`` calls :func:`~..model.egress.sidecar_policy`, the
credential vault (``/credential-vault…``) :func:`~..model.vault.vault_call`.

Each handler takes the :class:`EgressContext` and the request; :data:`ROWS` lists them and
:func:`~mockserver.asgi.handlers.bind` makes one route of each path, listing its methods (HEAD as GET)."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.requests import read_body

from ..model import egress, vault
from ..model.config import ServerConfig
from .render import sandbox_of

__all__ = ["ROWS", "EgressContext", "egress_routes"]


@dataclass(frozen=True)
class EgressContext:
    """What the sidecar route uses: the server settings (its token and enforcement mode)."""

    config: ServerConfig


async def policy(ctx: EgressContext, request: Request) -> Response:
    """Read or change the sandbox's egress policy."""
    sb = sandbox_of(request)
    raw = b"" if request.method == "GET" else await read_body(request)
    token = request.headers.get(egress.EGRESS_AUTH_HEADER)
    return JSONResponse(egress.sidecar_policy(sb, ctx.config, request.method, raw, token))


async def credential_vault(ctx: EgressContext, request: Request) -> Response:
    """Answer a credential-vault call (``_active``, the proxy's own route, is refused before the token is read)."""
    sb = sandbox_of(request)
    subpath = request.path_params.get("subpath")
    if subpath == "_active":
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


def _not_allowed(allow: str) -> Response:
    """Return Go's ``http.Error`` 405 with the handler's ``Allow``."""
    return PlainTextResponse("method not allowed\n", status_code=405, headers={"Allow": allow})


#: What the server proxy forwards to the vault.
_VAULT_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

#: The sidecar's policy and credential-vault routes.
ROWS: list[Row[EgressContext]] = [
    *(Row("/policy", method, policy) for method in egress.POLICY_METHODS),
    *(Row("/credential-vault", method, credential_vault) for method in _VAULT_METHODS),
    *(Row("/credential-vault/{subpath:path}", method, credential_vault) for method in _VAULT_METHODS),
]


def egress_routes(ctx: EgressContext) -> list[BaseRoute]:
    """Return the sidecar routes of the sandbox the port gate admitted."""
    return bind(ctx, ROWS, per_method=False)
