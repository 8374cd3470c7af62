"""What the TensorLake routes share: awaiting the model's wait decisions, rendering answers and errors.

The model never sleeps: a rule that must let virtual time pass returns a :class:`~..model.waits.Settle`, and
:func:`settle` awaits it on the clock before asking for the answer. Lifecycle errors render as
``{"code", "message"}``; the proxy's and the daemon's as ``{"code", "message", "error"}`` (:func:`daemon_error`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.render import JsonBody
from mockserver.core.clock import VirtualClock
from mockserver.core.errors import ApiError

from ..model.waits import Settle, wait_span

if TYPE_CHECKING:
    from ..model.lifecycle import Answer

__all__ = [
    "PORT_KEY",
    "SANDBOX_KEY",
    "CollapseSlashes",
    "daemon_error",
    "daemon_error_body",
    "daemon_error_handler",
    "query_lists",
    "render",
    "settle",
]

T = TypeVar("T")

#: Where the proxy leaves the admitted sandbox and port in the ASGI scope's ``state``.
SANDBOX_KEY = "tensorlake_sandbox"
PORT_KEY = "tensorlake_port"
_SLASHES = re.compile(r"/{2,}")


async def settle(result: T | Settle[T], clock: VirtualClock) -> T:
    """Await each wait decision of ``result`` on ``clock`` and return the final answer."""
    while isinstance(result, Settle):
        span = wait_span(result.at, result.budget, clock.now(), manual=clock.mode == "manual")
        if span > 0:
            await clock.async_sleep(span, real_timeout=span + 1.0)
        result = result.then(span)
    return result


def render(answer: Answer) -> Response:
    """Return a lifecycle answer as an HTTP response (JSON body, or none)."""
    if answer.body is None:
        return Response(status_code=answer.status)
    return JsonBody(answer.body, status_code=answer.status)


def query_lists(request: Request) -> Mapping[str, list[str]]:
    """Return the query parameters of ``request`` as ``{name: [values...]}``."""
    out: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        out.setdefault(key, []).append(value)
    return out


def daemon_error_body(exc: ApiError) -> dict[str, Any]:
    """Return the body of a proxy or daemon refusal: ``{"code", "message", "error"}`` (``error`` mirrors ``message``)."""
    return {**exc.body(), "error": exc.message}


def daemon_error(exc: ApiError) -> JSONResponse:
    """Return a proxy or daemon refusal (see :func:`daemon_error_body`)."""
    return JSONResponse(daemon_error_body(exc), status_code=exc.status)


async def daemon_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette exception handler rendering :class:`ApiError` in the daemon's shape."""
    assert isinstance(exc, ApiError)
    return daemon_error(exc)


class CollapseSlashes:
    """Collapse runs of ``/`` in the path (a trailing slash on ``api_url`` makes the SDK send ``//v1``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] in ("http", "websocket") and "//" in path:
            clean = _SLASHES.sub("/", path)
            scope = {**scope, "path": clean, "raw_path": clean.encode("latin-1", "replace")}
        await self.app(scope, receive, send)
