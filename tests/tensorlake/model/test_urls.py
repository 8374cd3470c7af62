"""``sandbox_url`` and ``ingress_endpoint`` from the origin a request came in on."""

from __future__ import annotations

import pytest

from mockserver.tensorlake.model.urls import Origin, endpoints, is_loopback_host

DOMAIN = "sandbox.localhost"


@pytest.mark.parametrize(
    ("origin", "sandbox_url", "ingress"),
    [
        (Origin("http", "127.0.0.1:8911"), "http://127.0.0.1:8911", "http://sandbox.localhost:8911"),
        (Origin("http", "localhost:8911"), "http://localhost:8911", "http://sandbox.localhost:8911"),
        (Origin("http", "[::1]:8911"), "http://[::1]:8911", "http://sandbox.localhost:8911"),
        (Origin("http", "[::1]"), "http://[::1]", "http://sandbox.localhost"),
        (Origin("https", "mock.example:443"), "https://sb1.sandbox.localhost:443", "https://sandbox.localhost:443"),
        (Origin("http", "mock.example"), "http://sb1.sandbox.localhost", "http://sandbox.localhost"),
    ],
)
def test_endpoints(origin: Origin, sandbox_url: str, ingress: str) -> None:
    assert endpoints(origin, "sb1", DOMAIN) == (sandbox_url, ingress)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("localhost", True), ("127.0.0.1", True), ("10.1.2.3", True), ("[::1]", True), ("api.example", False)],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback
