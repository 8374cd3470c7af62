"""Guard the ``/_mock`` admin service with a token, for mocks served beyond loopback.

The admin API can reset state, list API keys and mint sessions, so ``sandproof serve`` on a non-loopback
address requires ``--admin-token``. A guarded request carries the token in the ``X-Sandproof-Admin-Token``
header or the ``sandproof_admin_token`` cookie (what the dashboard sets from ``/_mock/ui?token=...``);
anything else under ``/_mock`` answers 401 ``admin_token_required`` (a browser asking for ``/_mock/ui`` gets a
page saying how to pass the token). Provider routes are not affected.
"""

from __future__ import annotations

import hmac
import json
from urllib.parse import parse_qs

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import ADMIN_PREFIX

__all__ = ["ADMIN_TOKEN_COOKIE", "ADMIN_TOKEN_HEADER", "AdminGuard"]

ADMIN_TOKEN_HEADER = "x-sandproof-admin-token"
ADMIN_TOKEN_COOKIE = "sandproof_admin_token"


class AdminGuard:
    """Refuse ``/_mock`` requests that do not carry ``token``; pass everything else through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the admin token must not be empty")
        self.app = app
        self.token = token

    def allowed(self, scope: Scope) -> bool:
        """Tell whether a request carries the admin token (header, cookie, or ``token`` query on the UI page)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        offered = [
            headers.get(ADMIN_TOKEN_HEADER, ""),
            cookie_parser(headers.get("cookie", "")).get(ADMIN_TOKEN_COOKIE, ""),
        ]
        if str(scope.get("path", "")).startswith(f"{ADMIN_PREFIX}/ui"):
            query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
            offered += query.get("token", [])
        return any(hmac.compare_digest(candidate.encode(), self.token.encode()) for candidate in offered if candidate)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] not in ("http", "websocket") or not path.startswith(ADMIN_PREFIX) or self.allowed(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "admin_token_required"})
            return
        if path.startswith(f"{ADMIN_PREFIX}/ui") and "text/html" in _header(scope, b"accept"):
            await _answer(send, _HTML_HINT.encode(), b"text/html; charset=utf-8")
            return
        message = (
            f"the /_mock admin API needs the {ADMIN_TOKEN_HEADER} header; in a browser, open "
            f"{ADMIN_PREFIX}/ui?token=TOKEN once (the page then sends it as a cookie)"
        )
        await _answer(
            send, json.dumps({"code": "admin_token_required", "message": message}).encode(), b"application/json"
        )


#: What a browser is shown at ``/_mock/ui`` without the token: it cannot set a header, so say how to pass it.
_HTML_HINT = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>sandproof: token needed</title></head>
<body><h1>This mock's admin API is guarded by a token</h1>
<p>Open <code>{ADMIN_PREFIX}/ui?token=TOKEN</code> with the token given to <code>sandproof serve --admin-token</code>.
The page then keeps it in a cookie. Scripts send it in the <code>{ADMIN_TOKEN_HEADER}</code> header.</p>
<p>Error code: <code>admin_token_required</code></p></body></html>
"""


def _header(scope: Scope, name: bytes) -> str:
    """Return one request header's value (empty when absent)."""
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


async def _answer(send: Send, body: bytes, content_type: bytes) -> None:
    """Answer 401 with ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
