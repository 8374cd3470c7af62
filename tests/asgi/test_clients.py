"""The HTTP clients the project opens share one TLS context that verifies as httpx's default does."""

from __future__ import annotations

import ssl

from mockserver.asgi import clients


def _context(client: object) -> ssl.SSLContext:
    pool = client._transport._pool  # type: ignore[attr-defined]
    context: ssl.SSLContext = pool._ssl_context
    return context


def test_every_client_verifies_with_the_one_shared_context() -> None:
    shared = clients.tls_context()
    assert shared is clients.tls_context()
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded
    with clients.client() as first, clients.client(base_url="http://127.0.0.1:1", trust_env=False) as second:
        assert _context(first) is shared and _context(second) is shared


def test_a_client_that_asks_for_its_own_verification_gets_it() -> None:
    with clients.client(verify=False) as plain:
        assert _context(plain) is not clients.tls_context()
        assert _context(plain).verify_mode == ssl.CERT_NONE
