"""The TensorLake admin routes under ``/_mock/tensorlake``: parse, call :mod:`..model.admin`, render.

Module handlers of an :class:`AdminContext` and their table (:data:`ROWS`), bound by :func:`admin_routes`.

``GET|POST timings`` (transition seconds), ``POST sessions`` (issue a browser session token),
``POST create-outcomes`` (make the next create fail or time out), ``GET|PUT api-keys`` (the accepted keys).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.middleware import ADMIN_PREFIX
from mockserver.asgi.requests import read_json

from ..model import admin
from ..model.operations import TensorLakeModel

__all__ = ["ROWS", "AdminContext", "admin_routes", "new_session_token"]


def new_session_token() -> str:
    """Return a fresh, unguessable session token."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class AdminContext:
    """What the TensorLake admin routes use: the model they change."""

    model: TensorLakeModel


async def timings(ctx: AdminContext, request: Request) -> Response:
    """Set (POST) or return (GET) the transition seconds."""
    if request.method == "POST":
        return JSONResponse(admin.set_timings(ctx.model, await read_json(request)))
    return JSONResponse(ctx.model.timings.to_json())


async def sessions(ctx: AdminContext, request: Request) -> Response:
    """Issue a browser session token for a project (201)."""
    session = admin.create_session(ctx.model, new_session_token(), await read_json(request, empty={}))
    return JSONResponse({"token": session.token}, status_code=201)


async def outcomes(ctx: AdminContext, request: Request) -> Response:
    """Queue the outcome of the next create (201)."""
    return JSONResponse(admin.queue_outcome(ctx.model, await read_json(request)), status_code=201)


async def api_keys(ctx: AdminContext, request: Request) -> Response:
    """Replace (PUT) or return (GET) the accepted API keys."""
    if request.method == "PUT":
        return JSONResponse(admin.set_api_keys(ctx.model, await read_json(request)))
    return JSONResponse(ctx.model.keys.to_json())


#: The admin routes, under ``/_mock/tensorlake``.
ROWS: tuple[Row[AdminContext], ...] = (
    Row("/timings", "GET", timings),
    Row("/timings", "POST", timings),
    Row("/sessions", "POST", sessions),
    Row("/create-outcomes", "POST", outcomes),
    Row("/api-keys", "GET", api_keys),
    Row("/api-keys", "PUT", api_keys),
)


def admin_routes(ctx: AdminContext) -> list[BaseRoute]:
    """Return the TensorLake admin routes, prefixed with ``/_mock/tensorlake``."""
    return bind(ctx, ROWS, per_method=False, prefixes=(f"{ADMIN_PREFIX}/tensorlake",))
