"""Test configuration: the sandproof plugin registers the Hypothesis profiles; ``ci`` is the default here.

Every ``httpx`` client a test opens (directly, through Starlette's test client or inside an SDK) verifies TLS
with the one context of :func:`mockserver.asgi.clients.tls_context` when it asks for httpx's default: building a
context loads the whole CA bundle (about 30 ms of CPU), and the suite opens thousands of clients. A client that
asks for anything else (``verify=False``, a context or CA file of its own, a certificate, ``SSL_CERT_FILE``)
gets exactly what it asked for.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

from httpx._transports import default as httpx_transports
from hypothesis import settings

from harness.plugin import register_hypothesis_profiles
from mockserver.asgi.clients import tls_context

register_hypothesis_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_create_ssl_context = httpx_transports.create_ssl_context


def _shared_default_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    """httpx's ``create_ssl_context``, answering its default case with the shared context."""
    if verify is True and cert is None and not (os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")):
        return tls_context()
    return _create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)


httpx_transports.create_ssl_context = _shared_default_context  # type: ignore[assignment]
