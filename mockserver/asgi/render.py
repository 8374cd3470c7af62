"""Render the models' plain answers as HTTP: a JSON body (cached record bodies spliced in), an error."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mockserver.core.errors import ApiError
from mockserver.core.wire import encode_json

__all__ = ["JsonBody", "api_error_handler", "error_response"]


class JsonBody(JSONResponse):
    """A JSON response whose cached record bodies (:class:`~mockserver.core.wire.WireDict`) are spliced in.

    Its bytes are exactly what :class:`JSONResponse` sends for the same content.
    """

    def render(self, content: Any) -> bytes:
        """Return ``content`` as compact JSON, reusing each cached record body's encoding."""
        return encode_json(content)


def error_response(exc: ApiError) -> JSONResponse:
    """Return ``exc`` as a JSON response with its status, headers and ``{"code", "message"}`` body."""
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)


async def api_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette exception handler for :class:`ApiError`."""
    assert isinstance(exc, ApiError)
    return error_response(exc)
