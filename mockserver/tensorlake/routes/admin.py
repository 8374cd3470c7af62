"""The TensorLake admin routes under ``/_mock/tensorlake``: parse, call :mod:`..model.admin`, render.

``GET|POST timings`` (transition seconds), ``POST sessions`` (issue a browser session token),
``POST create-outcomes`` (make the next create fail or time out), ``GET|PUT api-keys`` (the accepted keys).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.middleware import ADMIN_PREFIX
from mockserver.asgi.requests import read_json

from ..model import admin
from ..model.operations import TensorLakeModel

__all__ = ["AdminContext", "admin_routes", "new_session_token"]


def new_session_token() -> str:
    """Return a fresh, unguessable session token."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class AdminContext:
    """What the TensorLake admin routes use: the model they change."""

    model: TensorLakeModel


def admin_routes(context: AdminContext) -> list[BaseRoute]:
    """Return the TensorLake admin routes, prefixed with ``/_mock/tensorlake``."""
    model = context.model

    async def timings(request: Request) -> Response:
        if request.method == "POST":
            return JSONResponse(admin.set_timings(model, await read_json(request)))
        return JSONResponse(model.timings.to_json())

    async def sessions(request: Request) -> Response:
        session = admin.create_session(model, new_session_token(), await read_json(request, empty={}))
        return JSONResponse({"token": session.token}, status_code=201)

    async def outcomes(request: Request) -> Response:
        return JSONResponse(admin.queue_outcome(model, await read_json(request)), status_code=201)

    async def api_keys(request: Request) -> Response:
        if request.method == "PUT":
            return JSONResponse(admin.set_api_keys(model, await read_json(request)))
        return JSONResponse(model.keys.to_json())

    p = f"{ADMIN_PREFIX}/tensorlake"
    return [
        Route(f"{p}/timings", timings, methods=["GET", "POST"]),
        Route(f"{p}/sessions", sessions, methods=["POST"]),
        Route(f"{p}/create-outcomes", outcomes, methods=["POST"]),
        Route(f"{p}/api-keys", api_keys, methods=["GET", "PUT"]),
    ]
