"""The app the emulator serves on a sandbox's own ports (any port but execd's and the sidecar's): it answers
what reached the sandbox.

The emulator runs no processes, so nothing of the sandbox's own listens on a port; this app stands in for one.
An HTTP request gets ``{"sandbox_id", "port", "method", "path", "query", "headers"}`` as JSON (header names
lowercase, repeated headers joined with ``", "``), so a test sees exactly what the proxy forwarded. A WebSocket
is accepted; the text message :data:`REQUEST_MESSAGE` is answered with the same JSON for the handshake, any
other message is echoed back. On the linux runtime the sandbox's real processes answer instead.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Scope

from mockserver.asgi.echo import REQUEST_MESSAGE, echo_app, joined_headers

from .render import SANDBOX_KEY

__all__ = ["REQUEST_MESSAGE", "describe", "sandbox_echo"]


def _path(scope: Scope) -> str:
    """Return the request path below the proxy's mount (what the sandbox's app sees)."""
    path = str(scope.get("path") or "/")
    root = str(scope.get("root_path") or "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path if path.startswith("/") else "/" + path


def describe(scope: Scope, body: bytes) -> dict[str, Any]:
    """Describe what reached the sandbox's port."""
    sandbox = (scope.get("state") or {}).get(SANDBOX_KEY)
    return {
        "sandbox_id": None if sandbox is None else sandbox.id,
        "port": (scope.get("path_params") or {}).get("port"),
        "method": scope.get("method", "GET"),
        "path": _path(scope),
        "query": bytes(scope.get("query_string", b"")).decode("latin-1"),
        "headers": joined_headers(scope),
        "body": body.decode("utf-8", "replace"),
    }


#: The echo app of an OpenSandbox sandbox's own ports.
sandbox_echo = echo_app(describe)
