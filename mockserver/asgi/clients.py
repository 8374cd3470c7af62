"""The HTTP clients sandproof opens share one TLS context.

``httpx.Client()`` builds a fresh ``ssl.SSLContext`` (loading the whole CA bundle) for every client, whether
or not it ever speaks TLS: about 30 ms of CPU each. The admin client, the contract machines, the OpenAPI
runner and the concurrency drivers open a client per test or per sandbox, so that cost added up to a third of
the contract suite. :func:`tls_context` builds the context once per process (as ``httpx`` would, honouring
``SSL_CERT_FILE`` and ``SSL_CERT_DIR``) and :func:`client` passes it to every client; an ``SSLContext`` is
safe to share between clients and threads. Verification is unchanged: the shared context verifies
certificates and host names as httpx's default does.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx

__all__ = ["async_client", "client", "tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Return the process's shared TLS context (httpx's default: certifi's CA bundle, or ``SSL_CERT_FILE``)."""
    return httpx.create_ssl_context()


def client(**kwargs: Any) -> httpx.Client:
    """Return ``httpx.Client(**kwargs)`` verifying with :func:`tls_context` unless ``verify`` is given."""
    kwargs.setdefault("verify", tls_context())
    return httpx.Client(**kwargs)


def async_client(**kwargs: Any) -> httpx.AsyncClient:
    """Return ``httpx.AsyncClient(**kwargs)`` verifying with :func:`tls_context` unless ``verify`` is given."""
    kwargs.setdefault("verify", tls_context())
    return httpx.AsyncClient(**kwargs)
