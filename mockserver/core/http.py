"""Request parsing and error helpers shared by the mocks' routes."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

MAX_BODY = 1024 * 1024


class ApiError(Exception):
    """An error a route answers with ``status`` and a ``{"code", "message"}`` body."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        """Return the JSON error body."""
        return {"code": self.code, "message": self.message, **self.extra}

    def response(self) -> JSONResponse:
        """Return the error as a JSON response."""
        return JSONResponse(self.body(), status_code=self.status)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """Read the raw body, refusing more than ``limit`` bytes with 413."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "payload_too_large", f"request body exceeds {limit} bytes")
    chunks = bytearray()
    async for chunk in request.stream():
        chunks.extend(chunk)
        if len(chunks) > limit:
            raise ApiError(413, "payload_too_large", f"request body exceeds {limit} bytes")
    return bytes(chunks)


async def read_json(request: Request, *, limit: int = MAX_BODY, empty: Any = None) -> Any:
    """Parse the JSON body (``empty`` when there is none); 400 ``invalid_json`` when malformed."""
    raw = await read_body(request, limit)
    if not raw.strip():
        return empty
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from exc


def json_object(value: Any, what: str = "request body") -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise 400 ``invalid_type``."""
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_type", f"{what} must be a JSON object")
    return value
