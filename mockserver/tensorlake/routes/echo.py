"""The app a sandbox's user port serves unless a test registered one: it answers what reached the sandbox.

An HTTP request gets ``{"sandbox_id", "port", "method", "path", "query", "headers", "cookies", "body"}`` as
JSON (repeated headers joined with ``", "``), so a test sees exactly what the proxy forwarded; a WebSocket
gets each message echoed back, except :data:`REQUEST_MESSAGE`, answered with the same JSON for its handshake.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Scope

from mockserver.asgi.echo import REQUEST_MESSAGE, echo_app, joined_headers

from ..model.auth import parse_cookies
from .common import PORT_KEY, SANDBOX_KEY

__all__ = ["REQUEST_MESSAGE", "describe", "sandbox_echo"]


def describe(scope: Scope, body: bytes) -> dict[str, Any]:
    """Describe what reached the sandbox's port, its cookies parsed."""
    state = scope.get("state") or {}
    sandbox = state.get(SANDBOX_KEY)
    headers = joined_headers(scope)
    return {
        "sandbox_id": None if sandbox is None else sandbox.id,
        "port": state.get(PORT_KEY),
        "method": scope.get("method"),
        "path": scope.get("path"),
        "query": bytes(scope.get("query_string", b"")).decode("latin-1"),
        "headers": headers,
        "cookies": parse_cookies(headers.get("cookie", "")),
        "body": body.decode("utf-8", "replace"),
    }


#: The echo app of a TensorLake sandbox's user ports.
sandbox_echo = echo_app(describe)
