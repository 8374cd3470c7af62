"""Render the models' plain answers as HTTP: an :class:`ApiError` becomes a JSON response."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mockserver.core.errors import ApiError

__all__ = ["api_error_handler", "error_response"]


def error_response(exc: ApiError) -> JSONResponse:
    """Return ``exc`` as a JSON response with its status and ``{"code", "message"}`` body."""
    return JSONResponse(exc.body(), status_code=exc.status)


async def api_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette exception handler for :class:`ApiError`."""
    assert isinstance(exc, ApiError)
    return error_response(exc)
