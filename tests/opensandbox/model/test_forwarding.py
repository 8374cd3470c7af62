"""The server proxy's header rule: credentials, hop-by-hop and spoofable forwarding headers dropped, X-Forwarded-*
rebuilt from the connection (as ``opensandbox_server/api/proxy.py`` 1.1.1 does)."""

from __future__ import annotations

from mockserver.opensandbox.model.forwarding import STRIPPED_HEADERS, proxy_headers


def _names(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in headers}


def test_credentials_and_spoofed_forwarding_headers_are_dropped() -> None:
    sent = [
        (b"host", b"mock.test:8080"),
        (b"Authorization", b"Bearer k"),
        (b"cookie", b"a=1"),
        (b"open-sandbox-api-key", b"tenant-key"),
        (b"opensandbox-secure-access", b"tok"),
        (b"x-forwarded-for", b"6.6.6.6"),
        (b"x-forwarded-host", b"evil.test"),
        (b"x-forwarded-proto", b"https"),
        (b"x-forwarded-port", b"1"),
        (b"forwarded", b"for=6.6.6.6"),
        (b"x-real-ip", b"6.6.6.6"),
        (b"opensandbox-access-renew", b"skip"),
        (b"keep-alive", b"5"),
        (b"connection", b"keep-alive, x-private"),
        (b"x-private", b"hop"),
        (b"x-app", b"kept"),
        (b"x-execd-access-token", b"e"),
    ]
    got = _names(proxy_headers(sent, "http", "127.0.0.9"))
    assert got == {
        "x-app": "kept",
        "x-execd-access-token": "e",
        "x-forwarded-proto": "http",
        "x-forwarded-host": "mock.test:8080",
        "x-forwarded-for": "127.0.0.9",
    }


def test_websocket_schemes_read_as_http_and_missing_parts_are_not_invented() -> None:
    assert _names(proxy_headers([], "wss", None)) == {"x-forwarded-proto": "https"}
    assert _names(proxy_headers([(b"x-a", b"1")], "ws", None)) == {"x-a": "1", "x-forwarded-proto": "http"}


def test_the_stripped_set_is_the_real_servers() -> None:
    assert {"authorization", "cookie", "open-sandbox-api-key", "opensandbox-secure-access", "host"} <= STRIPPED_HEADERS
    assert {"forwarded", "x-forwarded-port", "x-real-ip", "upgrade", "te"} <= STRIPPED_HEADERS
