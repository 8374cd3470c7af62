import resource
import socket
import subprocess
import sys
import time

import httpx
import pytest

from mockserver.asgi.connections import bounded_h11, default_max_connections
from mockserver.asgi.server import MockServer
from tests.demo_mock import DemoMock
from tests.serving import closed_by_server


def _idle_sockets(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sockets.append(sock)
    return sockets


def _closed_by_peer(sock: socket.socket, wait: float) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except (TimeoutError, OSError):
        return False


def test_a_connection_that_sends_no_request_is_closed_after_the_header_timeout() -> None:
    with MockServer(DemoMock().app, header_timeout=0.3) as server:
        (sock,) = _idle_sockets(server.port, 1)
        assert _closed_by_peer(sock, 5.0)
        assert httpx.get(f"{server.url}/_mock/clock").status_code == 200


def test_over_the_cap_the_longest_idle_connections_are_closed_first() -> None:
    with MockServer(DemoMock().app, max_connections=20, header_timeout=60) as server:
        sockets = _idle_sockets(server.port, 30)
        time.sleep(0.3)
        assert httpx.get(f"{server.url}/_mock/clock", timeout=5).status_code == 200
        closed = [_closed_by_peer(s, 0.2) for s in sockets]
        assert all(closed[:10]) and not any(closed[-5:])
        for sock in sockets:
            sock.close()


def test_the_default_cap_fits_the_file_descriptor_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert default_max_connections() <= max(16, soft - 64)
    with pytest.raises(ValueError):
        bounded_h11(0, 1.0)
    with pytest.raises(ValueError):
        bounded_h11(1, 1.0, 0)


def test_serve_keeps_answering_with_300_idle_sockets_under_a_256_descriptor_limit() -> None:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    proc = subprocess.Popen(
        [sys.executable, "-m", "sandproof.cli", "serve", "--tensorlake-port", "0", "--opensandbox-port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )
    try:
        assert proc.stdout is not None
        urls = {}
        while len(urls) < 2:
            name, _, rest = proc.stdout.readline().partition(" ")
            if name in ("tensorlake", "opensandbox"):
                urls[name] = rest.split()[0]
        port = int(urls["opensandbox"].rsplit(":", 1)[1])
        sockets = _idle_sockets(port, 300)
        time.sleep(0.5)
        for _ in range(3):
            assert httpx.get(f"{urls['opensandbox']}/health", timeout=5).status_code == 200
        assert httpx.get(f"{urls['tensorlake']}/_mock/clock", timeout=5).status_code == 200
        for sock in sockets:
            sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _half_sent(port: int, count: int) -> list[socket.socket]:
    """Open ``count`` connections that each send a request head announcing 1000 body bytes, and 10 of them."""
    head = b"POST /_mock/clock/advance HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(head + b'{"seconds"')
        sockets.append(sock)
        time.sleep(0.002)  # each head arrives before the next connection: the cap sees stalled bodies
    return sockets


def test_a_request_body_that_stalls_is_cut_after_the_body_timeout() -> None:
    with MockServer(DemoMock().app, header_timeout=60, body_timeout=0.3) as server:
        (sock,) = _half_sent(server.port, 1)
        assert _closed_by_peer(sock, 5.0)
        assert httpx.get(f"{server.url}/_mock/clock").status_code == 200


def test_a_body_that_keeps_coming_is_not_cut() -> None:
    with MockServer(DemoMock().app, header_timeout=60, body_timeout=0.3) as server:
        body = b'{"seconds": 5}'
        head = b"POST /_mock/clock/advance HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        (sock,) = _idle_sockets(server.port, 1)
        sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body))
        for byte in body:  # one byte every 0.1 s: slower in all than the timeout, never stalled that long
            time.sleep(0.1)
            sock.sendall(bytes([byte]))
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()


def test_over_the_cap_stalled_bodies_are_shed_instead_of_refusing_new_requests() -> None:
    with MockServer(DemoMock().app, max_connections=20, header_timeout=60, body_timeout=60) as server:
        sockets = _half_sent(server.port, 60)
        time.sleep(0.3)
        for _ in range(3):
            assert httpx.get(f"{server.url}/_mock/clock", timeout=5).status_code == 200
        closed = [False] * len(sockets)
        deadline = time.monotonic() + 10  # only a wrong server waits this long
        while sum(closed) < 40 and time.monotonic() < deadline:
            closed = [done or closed_by_server(sock, 0.01) for done, sock in zip(closed, sockets, strict=True)]
        assert sum(closed) >= 40 and closed[0] and not any(closed[-3:])
        for sock in sockets:
            sock.close()
