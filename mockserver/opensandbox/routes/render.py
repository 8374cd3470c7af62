"""Rendering the model's answers as OpenSandbox's wire: its error bodies, FastAPI's 422, the unknown-route bodies.

Also what every route shares: the request values the HTTP layers put in the ASGI scope (the tenant the auth
layer resolved, the sandbox the port gate admitted) and FastAPI's body decoding over the read bytes.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Scope

from mockserver.asgi.middleware import notes
from mockserver.asgi.render import error_response as flat_error_response
from mockserver.asgi.requests import read_body
from mockserver.core import ApiError

from ..model.auth import DEFAULT_TENANT
from ..model.errors import DetailError, ExecdAuthError, TextError
from ..model.records import SandboxRecord
from ..model.validation import RequestValidationError, decode_json_body

__all__ = [
    "SANDBOX_KEY",
    "TENANT_KEY",
    "VIA_PROXY_KEY",
    "close_code",
    "error_response",
    "exception_handlers",
    "json_body",
    "sandbox_id_of",
    "sandbox_of",
    "tenant_of",
    "validation_response",
    "via_proxy",
]

TENANT_KEY = "opensandbox_tenant"
SANDBOX_KEY = "opensandbox_sandbox"
VIA_PROXY_KEY = "opensandbox_via_proxy"


def tenant_of(request: Request) -> str:
    """Return the tenant the auth layer resolved for this request (``default`` when none)."""
    return str(request.scope.get("state", {}).get(TENANT_KEY) or DEFAULT_TENANT)


def sandbox_id_of(request: Request) -> str:
    """Return the path's sandbox id, noted (with the tenant) for the journal."""
    sandbox_id = str(request.path_params["sandbox_id"])
    request_notes = notes(request.scope)
    request_notes.sandbox_id = sandbox_id
    request_notes.tenant = tenant_of(request)
    return sandbox_id


def sandbox_of(request: Request) -> SandboxRecord:
    """Return the sandbox the port gate admitted this request to."""
    sb = request.scope.get("state", {}).get(SANDBOX_KEY)
    if not isinstance(sb, SandboxRecord):
        raise ApiError(500, "RUNTIME_ERROR", "no sandbox in scope")
    return sb


def via_proxy(scope: Scope) -> bool:
    """Tell whether the request came through the server proxy (not the direct endpoint)."""
    return bool(scope.get("state", {}).get(VIA_PROXY_KEY))


async def json_body(request: Request, *, required: bool = True) -> Any:
    """Read the body and decode it as FastAPI does (see :func:`~..model.validation.decode_json_body`)."""
    return decode_json_body(await read_body(request), request.headers.get("content-type"), required=required)


def error_response(exc: ApiError) -> Response:
    """Render a refusal: text for :class:`TextError`, ``{"error"}`` for execd's token, ``{"detail"}`` for FastAPI's
    own, else ``{"code", "message"}``."""
    if isinstance(exc, TextError):
        return PlainTextResponse(exc.message, status_code=exc.status)
    if isinstance(exc, ExecdAuthError):
        return JSONResponse({"error": exc.message}, status_code=exc.status)
    if isinstance(exc, DetailError):
        return JSONResponse({"detail": exc.message}, status_code=exc.status)
    return flat_error_response(exc)


def validation_response(exc: RequestValidationError) -> Response:
    """Render FastAPI's 422 ``{"detail": [...]}``."""
    return JSONResponse({"detail": exc.errors}, status_code=422)


def close_code(exc: ApiError) -> int:
    """Return the WebSocket close code that refuses a handshake for ``exc``: 4000 plus its HTTP status."""
    return 4000 + exc.status


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return validation_response(exc)


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"detail": "Not Found"}, status_code=404)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    headers = getattr(exc, "headers", None) or {}  # the router names the route's methods in ``Allow``
    return JSONResponse({"detail": "Method Not Allowed"}, status_code=405, headers=headers)


def exception_handlers() -> dict[Any, Any]:
    """Return the app's handlers: the model's refusals, FastAPI-style 422s, ``{"detail"}`` for 404 and 405 (with ``Allow``)."""
    return {ApiError: _api_error, RequestValidationError: _validation_error, 404: _not_found, 405: _not_allowed}
