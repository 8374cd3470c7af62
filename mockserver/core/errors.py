"""The error every rule raises: a status, a stable code and a message, and nothing that renders a response.

Rendering an :class:`ApiError` as an HTTP response happens in the HTTP layer (:mod:`mockserver.asgi.render`
and each provider's routes), so the models that raise it never import a web framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ApiError", "json_object"]


class ApiError(Exception):
    """A refusal a rule decided: HTTP ``status``, a stable ``code``, a ``message`` and optional extra fields.

    ``headers`` are response headers the refusal carries (``Retry-After``); they are not part of the body.
    """

    def __init__(
        self, status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        self.extra = extra

    def body(self) -> dict[str, Any]:
        """Return the error as the plain dict ``{"code", "message", **extra}``."""
        return {"code": self.code, "message": self.message, **self.extra}

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code!r}, {self.message!r})"


def json_object(value: Any, what: str = "request body") -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise 400 ``invalid_type``."""
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_type", f"{what} must be a JSON object")
    return value
