"""The few rtnetlink requests a sandbox's link needs, sent in-process (no ``ip`` process per sandbox).

A netlink socket belongs to the network namespace it was made in (see :func:`~mockserver.linux.kernel.socket_in`),
so :class:`Netlink` opened for a namespace configures that namespace from any thread. Requests ask for an
acknowledgement; a refusal raises :class:`NetlinkError` with the kernel's errno.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import threading
from collections.abc import Iterable

from .kernel import enter_netns, socket_in

__all__ = ["Netlink", "NetlinkError"]

NETLINK_ROUTE = 0
RTM_NEWLINK, RTM_NEWADDR, RTM_NEWROUTE = 16, 20, 24
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
IFLA_IFNAME, IFLA_LINKINFO, IFLA_NET_NS_FD = 3, 18, 28
IFLA_INFO_KIND, IFLA_INFO_DATA, VETH_INFO_PEER = 1, 2, 1
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
IFF_UP = 0x1
RT_TABLE_MAIN, RT_TABLE_LOCAL = 254, 255
RTPROT_BOOT = 3
RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, RT_SCOPE_HOST = 0, 253, 254
RTN_UNICAST, RTN_LOCAL = 1, 2
_HEADER = struct.Struct("=IHHII")
_IFINFO = struct.Struct("=BxHiII")
_IFADDR = struct.Struct("=BBBBi")
_RTMSG = struct.Struct("=BBBBBBBBI")


class NetlinkError(OSError):
    """The kernel refused a request."""


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\x00" * ((4 - length % 4) % 4)


def _name(text: str) -> bytes:
    return text.encode() + b"\x00"


def _ip(address: str) -> bytes:
    return ipaddress.IPv4Address(address).packed


class Netlink:
    """An rtnetlink socket inside one network namespace; thread-safe."""

    def __init__(self, netns_fd: int) -> None:
        self.netns_fd = netns_fd
        self._sock = socket_in(netns_fd, socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC)
        self._sock.bind((0, 0))
        self._lock = threading.Lock()
        self._seq = 0

    def close(self) -> None:
        """Close the socket."""
        self._sock.close()

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _request(self, kind: int, flags: int, body: bytes) -> None:
        with self._lock:
            self._seq += 1
            seq = self._seq
            message = _HEADER.pack(_HEADER.size + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | flags, seq, 0) + body
            self._sock.send(message)
            while True:
                data = self._sock.recv(65536)
                offset = 0
                while offset + _HEADER.size <= len(data):
                    length, msg_type, _flags, msg_seq, _pid = _HEADER.unpack_from(data, offset)
                    if msg_type == NLMSG_ERROR and msg_seq == seq:
                        (code,) = struct.unpack_from("=i", data, offset + _HEADER.size)
                        if code:
                            raise NetlinkError(-code, f"rtnetlink: {os.strerror(-code)}")
                        return
                    offset += max(length, _HEADER.size)

    def index(self, name: str) -> int:
        """Return the interface index of ``name`` in this namespace."""
        with enter_netns(self.netns_fd):
            return socket.if_nametoindex(name)

    def add_veth(self, name: str, peer: str, peer_netns_fd: int) -> None:
        """Create veth ``name`` here with its peer ``peer`` placed straight into ``peer_netns_fd``."""
        peer_info = _IFINFO.pack(0, 0, 0, 0, 0) + _attr(IFLA_IFNAME, _name(peer))
        peer_info += _attr(IFLA_NET_NS_FD, struct.pack("=I", peer_netns_fd))
        info = _attr(IFLA_INFO_KIND, b"veth") + _attr(IFLA_INFO_DATA, _attr(VETH_INFO_PEER, peer_info))
        body = _IFINFO.pack(0, 0, 0, 0, 0) + _attr(IFLA_IFNAME, _name(name)) + _attr(IFLA_LINKINFO, info)
        self._request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body)

    def set_up(self, index: int) -> None:
        """Bring interface ``index`` up."""
        self._request(RTM_NEWLINK, 0, _IFINFO.pack(0, 0, index, IFF_UP, IFF_UP))

    def add_address(self, index: int, address: str, prefix: int) -> None:
        """Add ``address/prefix`` to interface ``index``."""
        body = _IFADDR.pack(socket.AF_INET, prefix, 0, RT_SCOPE_UNIVERSE, index)
        body += _attr(IFA_LOCAL, _ip(address)) + _attr(IFA_ADDRESS, _ip(address))
        self._request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body)

    def add_default_route(self, gateway: str, index: int) -> None:
        """Route everything via ``gateway`` on interface ``index``."""
        body = _RTMSG.pack(socket.AF_INET, 0, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNICAST, 0)
        body += _attr(RTA_GATEWAY, _ip(gateway)) + _attr(RTA_OIF, struct.pack("=I", index))
        self._request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body)

    def add_local_routes(self, addresses: Iterable[str], loopback: int = 1) -> None:
        """Make each address a local one (served on the loopback), like ``ip route add local A/32 dev lo``."""
        for address in addresses:
            body = _RTMSG.pack(socket.AF_INET, 32, 0, 0, RT_TABLE_LOCAL, RTPROT_BOOT, RT_SCOPE_HOST, RTN_LOCAL, 0)
            body += _attr(RTA_DST, _ip(address)) + _attr(RTA_OIF, struct.pack("=I", loopback))
            try:
                self._request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body)
            except NetlinkError as exc:
                if exc.errno != errno.EEXIST:
                    raise
