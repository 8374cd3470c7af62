"""What the server proxy passes on to a sandbox's port: the request headers, cleaned as the real server cleans them.

``/v1/sandboxes/{id}/proxy/{port}/...`` and ``/sandboxes/{id}/proxy/{port}/...``, HTTP and WebSocket alike,
forward the request to the sandbox's port. The real opensandbox-server 1.1.1 (``opensandbox_server/api/proxy.py``,
``_filter_proxy_headers`` and ``_set_forwarded_headers``) first drops:

* the hop-by-hop headers of RFC 2616 §13.5.1 and every header the ``Connection`` header names;
* the credentials: ``Authorization``, ``Cookie``, ``OPEN-SANDBOX-API-KEY`` and ``OpenSandbox-Secure-Access``;
* the forwarding headers a client could spoof (``Forwarded``, ``X-Forwarded-For/-Host/-Port/-Proto``,
  ``X-Real-IP``) and its own control header ``OpenSandbox-Access-Renew``;
* ``Host`` (the upstream request names the sandbox's address);

then adds ``X-Forwarded-Proto`` (the connection's scheme, ``ws``/``wss`` read as ``http``/``https``),
``X-Forwarded-Host`` (the request's ``Host``, when it has one) and ``X-Forwarded-For`` (the client's address).
``Forwarded``, ``X-Forwarded-Port`` and ``X-Real-IP`` are not rebuilt. Direct requests
(``/direct/{id}/{port}``, the container's own address) pass no proxy and keep every header.

:func:`proxy_headers` is that rule; the port dispatcher calls it for every proxied request, whatever serves the
port (execd, the egress sidecar, the emulator's echo app, a real process on the linux runtime).

Known deviations: the real server also merges the endpoint's own headers (execd's access token, the sidecar's
egress token on its internal routes); the mock's services check those tokens on the request as sent.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CONNECTION_HEADERS",
    "CREDENTIAL_HEADERS",
    "SPOOFABLE_HEADERS",
    "STRIPPED_HEADERS",
    "Headers",
    "proxy_headers",
]

Headers = list[tuple[bytes, bytes]]

#: RFC 2616 §13.5.1 hop-by-hop headers (``HOP_BY_HOP_HEADERS`` in the real server).
CONNECTION_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding",
     "upgrade"}
)  # fmt: skip
#: The caller's credentials, never passed to the sandbox (``SENSITIVE_HEADERS``).
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "open-sandbox-api-key", "opensandbox-secure-access"})
#: Forwarding headers the proxy rebuilds from the connection instead (``FORWARDED_HEADERS``).
SPOOFABLE_HEADERS = frozenset(
    {"forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-port", "x-forwarded-proto", "x-real-ip"}
)
#: Every header name the proxy drops, whatever the request (``Connection``-named ones come on top).
STRIPPED_HEADERS = CONNECTION_HEADERS | CREDENTIAL_HEADERS | SPOOFABLE_HEADERS | {"opensandbox-access-renew", "host"}

_SCHEMES = {"ws": "http", "wss": "https"}


def proxy_headers(headers: Iterable[tuple[bytes, bytes]], scheme: str, client_host: str | None) -> Headers:
    """Return the headers a proxied request carries to the sandbox: cleaned, then ``X-Forwarded-*`` rebuilt.

    ``headers`` are the request's (lowercase names, as ASGI gives them), ``scheme`` the connection's
    (``http``, ``https``, ``ws``, ``wss``), ``client_host`` the peer's address (None when unknown).
    """
    pairs = [(bytes(k).lower(), bytes(v)) for k, v in headers]
    named: set[str] = set()
    host = None
    for key, value in pairs:
        if key == b"connection":
            named |= {part.strip().lower() for part in value.decode("latin-1").split(",") if part.strip()}
        elif key == b"host" and host is None:
            host = value
    dropped = STRIPPED_HEADERS | named
    out = [(k, v) for k, v in pairs if k.decode("latin-1") not in dropped]
    lowered = scheme.lower()
    out.append((b"x-forwarded-proto", _SCHEMES.get(lowered, lowered).encode("latin-1")))
    if host:
        out.append((b"x-forwarded-host", host))
    if client_host:
        out.append((b"x-forwarded-for", client_host.encode("latin-1")))
    return out
