"""Reach a port inside a sandbox from the host: one connection, or a forwarder on a host port.

A socket made while the thread is inside the sandbox's network namespace stays there, so the host process
connects to ``127.0.0.1:<port>`` *of the sandbox* directly (ingress arrives on the sandbox's loopback, which
its firewall always accepts); a service bound only to the sandbox's link address is tried next. No proxy
process, no route from the host into the sandbox.

:class:`PortForwarder` listens on a host address (``127.0.0.1:0`` by default) and relays every accepted
connection to the sandbox port byte for byte, so HTTP, WebSocket upgrades and any TCP protocol pass
unchanged; it runs on the event loop that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from .kernel import socket_in
from .sandbox import LinuxSandbox

__all__ = ["PortForwarder", "connect", "open_connection", "relay"]


def connect(sandbox: LinuxSandbox, port: int, timeout: float = 5.0) -> socket.socket:
    """Return a blocking TCP socket connected to ``port`` inside ``sandbox``; raise OSError if refused."""
    error: OSError | None = None
    for host in ("127.0.0.1", sandbox.address):
        sock = socket_in(sandbox.netns_fd)
        sock.settimeout(timeout)
        try:
            sock.connect((host, port))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    assert error is not None
    raise error


async def open_connection(sandbox: LinuxSandbox, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Return asyncio streams connected to ``port`` inside ``sandbox``; raise OSError if refused."""
    loop = asyncio.get_running_loop()
    error: OSError | None = None
    for host in ("127.0.0.1", sandbox.address):
        sock = socket_in(sandbox.netns_fd)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (host, port))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return await asyncio.open_connection(sock=sock)
    assert error is not None
    raise error


async def relay(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter], b: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    """Copy bytes both ways between two stream pairs until both directions end; close both."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if writer.can_write_eof():
                    writer.write_eof()

    try:
        await asyncio.gather(pump(a[0], b[1]), pump(b[0], a[1]))
    finally:
        for _, writer in (a, b):
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()


class PortForwarder:
    """A host listener relaying to one port of one sandbox; ``await start()``, then ``await close()``."""

    def __init__(self, sandbox: LinuxSandbox, port: int, *, host: str = "127.0.0.1", host_port: int = 0) -> None:
        self.sandbox = sandbox
        self.port = port
        self.host = host
        self.host_port = host_port
        self._server: asyncio.AbstractServer | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._relays: set[asyncio.Future[None]] = set()

    async def start(self) -> PortForwarder:
        """Start listening; ``host_port`` then holds the bound port."""
        self._server = await asyncio.start_server(self._accept, self.host, self.host_port)
        self.host_port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            inner = await open_connection(self.sandbox, self.port)
        except OSError:
            writer.close()
            return
        self._open |= {writer, inner[1]}
        done = asyncio.ensure_future(relay((reader, writer), inner))
        self._relays.add(done)
        try:
            await done
        finally:
            self._relays.discard(done)
            self._open -= {writer, inner[1]}

    async def close(self) -> None:
        """Stop listening and cut the open relays."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._open):
            writer.transport.abort()
        if self._relays:
            await asyncio.wait(list(self._relays), timeout=5)
        if server is not None:
            await server.wait_closed()
