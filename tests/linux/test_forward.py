"""Ingress: the host reaches services listening inside a sandbox, directly or through a host port."""

from __future__ import annotations

import asyncio
import time
import urllib.request

import pytest

from mockserver.linux import LinuxSandbox
from mockserver.linux.forward import PortForwarder, connect, open_connection

from .conftest import needs_runtime

pytestmark = needs_runtime

UPGRADE_ECHO = r"""
import socket
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", 9000))
server.listen()
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    head = b""
    while b"\r\n\r\n" not in head and (chunk := conn.recv(1024)):
        head += chunk
    if b"\r\n\r\n" not in head:  # a probe that only connected
        conn.close()
        continue
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    while data := conn.recv(1024):
        conn.sendall(data[::-1])
    conn.close()
"""


def _serve(sandbox: LinuxSandbox, argv: list[str], port: int) -> None:
    sandbox.start_process(argv, cwd="/workspace")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            connect(sandbox, port, timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    pytest.fail(f"nothing listens on {port} in the sandbox")


def test_a_background_http_server_is_reached_directly(sandbox: LinuxSandbox) -> None:
    sandbox.write_file("/workspace/index.html", b"hello from the sandbox\n")
    _serve(sandbox, ["python3", "-m", "http.server", "8080"], 8080)
    sock = connect(sandbox, 8080)
    sock.sendall(b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    assert data.startswith(b"HTTP/1.0 200") and data.endswith(b"hello from the sandbox\n")


def test_a_forwarder_serves_http_and_upgraded_connections(sandbox: LinuxSandbox) -> None:
    sandbox.write_file("/workspace/index.html", b"forwarded\n")
    _serve(sandbox, ["python3", "-m", "http.server", "8080"], 8080)
    _serve(sandbox, ["python3", "-c", UPGRADE_ECHO], 9000)

    async def main() -> tuple[bytes, bytes, bytes]:
        http = await PortForwarder(sandbox, 8080).start()
        ws = await PortForwarder(sandbox, 9000).start()
        try:
            url = f"http://127.0.0.1:{http.host_port}/index.html"
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read())
            reader, writer = await asyncio.open_connection("127.0.0.1", ws.host_port)
            writer.write(b"GET /socket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            writer.write(b"frame-bytes")
            echoed = await reader.readexactly(11)
            writer.close()
            return body, head, echoed
        finally:
            await http.close()
            await ws.close()

    body, head, echoed = asyncio.run(main())
    assert body == b"forwarded\n"
    assert head.startswith(b"HTTP/1.1 101 Switching Protocols")
    assert echoed == b"setyb-emarf"


def test_open_connection_refused_when_nothing_listens(sandbox: LinuxSandbox) -> None:
    async def main() -> None:
        await open_connection(sandbox, 8999)

    with pytest.raises(OSError):
        asyncio.run(main())
