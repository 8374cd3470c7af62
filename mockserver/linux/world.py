"""The world: the one network namespace every sandbox of a runtime is linked to, and everything it serves.

The world has a loopback and one veth end per sandbox: no link to the host, so nothing a sandbox sends can
reach the host's network or the host's loopback. Its default route is ``unreachable``; forwarding is on
(and ICMP unrate-limited) only so that a packet to an address the world does not serve is answered at once
with ICMP host unreachable, and a packet to another sandbox meets the forward chain, which refuses it.

Served in the world, all from threads of the host process with sockets made inside the namespace:

* the DNS server on :data:`~mockserver.linux.addresses.RESOLVER` port 53 (UDP and TCP): A queries are
  answered from the runtime's :class:`~mockserver.core.DnsTable` (NXDOMAIN when it has no address),
  other types get an empty answer for names that exist. Before answering a sandbox, it asks that
  sandbox's firewall whether the name is allowed (OpenSandbox answers NXDOMAIN for denied names) and lets
  it learn the addresses, so the firewall knows them before the sandbox can connect;
* the test hosts on every served address (see :mod:`~mockserver.linux.addresses`): HTTP on
  :data:`HTTP_PORTS` answering ``sandproof world host <address>:<port>`` plus the method, path and Host
  header (``/status/<code>`` answers that status), and TCP echo on :data:`ECHO_PORTS`.

Known deviations: the internet is simulated: only names of the DNS table resolve (unknown names get the
table's synthetic 198.18.0.0/15 addresses, one per name, never shared), every served address runs the same HTTP and echo test hosts,
there is no TLS, no IPv6 and no other port; addresses the table does not hand out are unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import struct
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, cast

from mockserver.core.dns import DnsTable

from . import dnswire
from .addresses import RESOLVER, SERVED_NETS, is_servable
from .kernel import socket_in
from .netns import create_netns, ip_batch, remove_netns, world_netns_name, write_sysctls
from .nftables import Nftables, open_nft
from .rtnetlink import Netlink

__all__ = ["ECHO_PORTS", "HTTP_PORTS", "DnsClient", "QueryRecord", "World"]

HTTP_PORTS = (80, 8080)
ECHO_PORTS = (7,)
_SERVED = tuple(ipaddress.IPv4Network(n) for n in SERVED_NETS)
_WORLD_RULES = """table inet world
delete table inet world
table inet world {
\tchain forward {
\t\ttype filter hook forward priority filter; policy drop;
\t\treject with icmpx host-unreachable
\t}
}
"""


class DnsClient(Protocol):
    """What the DNS server asks a sandbox's firewall before answering that sandbox."""

    def permits(self, name: str) -> bool:
        """Tell whether ``name`` may be answered (False: NXDOMAIN)."""
        ...

    def learn(self, name: str, addresses: list[str]) -> None:
        """Take note of the addresses about to be answered for ``name`` (before the answer leaves)."""
        ...


@dataclass(frozen=True)
class QueryRecord:
    """One query the DNS server answered."""

    source: str
    name: str
    qtype: int
    rcode: int
    addresses: tuple[str, ...]


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, world: World) -> None:
        self.world = world
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, int]) -> None:
        reply = self.world.respond(data, str(addr[0]))
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


class World:
    """A runtime's world namespace and its servers; :meth:`start` before use, :meth:`close` after."""

    def __init__(self, runtime_id: str, dns: DnsTable) -> None:
        self.name = world_netns_name(runtime_id)
        self.dns = dns
        self.fd = -1
        self.queries: deque[QueryRecord] = deque(maxlen=1000)
        self._clients: dict[str, DnsClient] = {}
        self._served: set[str] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._udp: asyncio.DatagramTransport | None = None
        self._nft: Nftables | None = None
        self.netlink: Netlink | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> World:
        """Make the namespace, address and route it, and start the DNS server and test hosts."""
        self.fd = create_netns(self.name)
        try:
            write_sysctls(
                self.fd,
                {
                    "net/ipv4/ip_forward": "1",
                    "net/ipv4/icmp_ratelimit": "0",
                    "net/ipv4/icmp_msgs_per_sec": "100000",
                    "net/ipv6/conf/all/disable_ipv6": "1",
                    "net/ipv6/conf/default/disable_ipv6": "1",
                },
            )
            ip_batch(
                self.name,
                [
                    "link set lo up",
                    f"addr add {RESOLVER}/32 dev lo",
                    *(f"route add local {net} dev lo" for net in SERVED_NETS),
                    "route add unreachable default",
                ],
            )
            self.netlink = Netlink(self.fd)
            self._nft = open_nft(self.fd)
            self._nft.run(_WORLD_RULES)
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._thread = threading.Thread(target=loop.run_forever, name="sandproof-world", daemon=True)
            self._thread.start()
            asyncio.run_coroutine_threadsafe(self._serve(), loop).result(10)
        except BaseException:
            self.close()
            raise
        return self

    def _listener(self, host: str, port: int) -> socket.socket:
        sock = socket_in(self.fd, socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)
        sock.setblocking(False)
        return sock

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        udp = socket_in(self.fd, socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((RESOLVER, 53))
        transport, _ = await loop.create_datagram_endpoint(lambda: _Udp(self), sock=udp)
        self._udp = transport
        handlers: list[tuple[str, int, Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]]] = [
            (RESOLVER, 53, self._dns_tcp),
            *(("0.0.0.0", port, self._http) for port in HTTP_PORTS),
            *(("0.0.0.0", port, self._echo) for port in ECHO_PORTS),
        ]
        for host, port, handler in handlers:
            self._servers.append(await asyncio.start_server(handler, sock=self._listener(host, port)))

    def close(self) -> None:
        """Stop the servers and remove the namespace (idempotent)."""
        loop, self._loop = self._loop, None
        if loop is not None:

            async def stop() -> None:
                for server in self._servers:
                    server.close()
                if self._udp is not None:
                    self._udp.close()

            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            loop.close()
        if self._nft is not None:
            self._nft.close()
            self._nft = None
        if self.netlink is not None:
            self.netlink.close()
            self.netlink = None
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        remove_netns(self.name)

    # -- sandboxes ---------------------------------------------------------------------------------

    def register(self, address: str, client: DnsClient) -> None:
        """Let the firewall ``client`` judge the DNS queries coming from sandbox ``address``."""
        with self._lock:
            self._clients[address] = client

    def unregister(self, address: str) -> None:
        """Forget the client of ``address``."""
        with self._lock:
            self._clients.pop(address, None)

    def ensure_served(self, address: str) -> bool:
        """Make ``address`` a world host if it is not one yet; tell whether it is served."""
        try:
            ip = ipaddress.IPv4Address(address)
        except ValueError:
            return False
        if any(ip in net for net in _SERVED) or address == RESOLVER:
            return True
        if not is_servable(address):
            return False
        with self._lock:
            if address in self._served:
                return True
            assert self.netlink is not None
            self.netlink.add_local_routes([address])
            self._served.add(address)
        return True

    # -- DNS ---------------------------------------------------------------------------------------

    def respond(self, data: bytes, source: str) -> bytes | None:
        """Return the answer to one DNS message from ``source`` (None: no answer at all)."""
        try:
            question = dnswire.parse_query(data)
        except dnswire.DnsFormatError:
            return dnswire.build_error(data, dnswire.FORMERR)
        rcode, answer = self._decide(question, source)
        self.queries.append(QueryRecord(source, question.name, question.qtype, rcode, tuple(answer)))
        return dnswire.build_response(question, rcode, answer)

    def _decide(self, question: dnswire.Question, source: str) -> tuple[int, list[str]]:
        if question.qclass != dnswire.CLASS_IN:
            return dnswire.NOTIMP, []
        addresses = self.dns.resolve(question.name) if question.name else []
        if not addresses:
            return dnswire.NXDOMAIN, []
        with self._lock:
            client = self._clients.get(source)
        if client is not None and not client.permits(question.name):
            return dnswire.NXDOMAIN, []
        if question.qtype != dnswire.TYPE_A:
            return dnswire.NOERROR, []
        served = [a for a in addresses if self.ensure_served(a)]
        if client is not None:
            client.learn(question.name, served)
        return dnswire.NOERROR, served

    async def _dns_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        source = str(writer.get_extra_info("peername")[0])
        try:
            while True:
                (length,) = struct.unpack("!H", await reader.readexactly(2))
                reply = self.respond(await reader.readexactly(length), source)
                if reply is None:
                    break
                writer.write(struct.pack("!H", len(reply)) + reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    # -- test hosts --------------------------------------------------------------------------------

    async def _http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local = writer.get_extra_info("sockname")
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            lines = head.decode("latin-1").split("\r\n")
            method, target = [*lines[0].split(" "), "", ""][:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            length = int(headers.get("content-length", "0") or 0)
            if 0 < length <= 1 << 20:
                await reader.readexactly(length)
            status = 200
            if target.startswith("/status/") and target[8:11].isdigit():
                status = int(target[8:11])
            body = (
                f"sandproof world host {local[0]}:{local[1]}\n"
                f"method: {method}\npath: {target}\nhost: {headers.get('host', '')}\n"
            ).encode()
            response = (
                f"HTTP/1.1 {status} {'OK' if status == 200 else 'Status'}\r\n"
                f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                f"X-Sandproof-Host: {local[0]}\r\nConnection: close\r\n\r\n"
            ).encode()
            writer.write(response if method == "HEAD" else response + body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def _echo(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
