"""DNS messages on the wire (RFC 1035): parse a query, build the answer. Pure functions, no sockets.

Only what a stub resolver sends is understood: one question, any type, optional EDNS OPT record (ignored
and not echoed). Name compression is read in queries and written once in answers (a pointer to the
question name), which is all glibc, musl and Python resolvers need.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CLASS_IN",
    "FORMERR",
    "NOERROR",
    "NOTIMP",
    "NXDOMAIN",
    "SERVFAIL",
    "TYPE_A",
    "TYPE_AAAA",
    "DnsFormatError",
    "Question",
    "build_query",
    "build_response",
    "parse_query",
    "parse_response",
]

TYPE_A = 1
TYPE_AAAA = 28
CLASS_IN = 1
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 2, 3, 4, 5
_HEADER = struct.Struct("!HHHHHH")
_QR = 0x8000
_AA = 0x0400
_RD = 0x0100
_RA = 0x0080
_MAX_POINTERS = 16


class DnsFormatError(ValueError):
    """A message that is not a well-formed single-question DNS query."""


@dataclass(frozen=True)
class Question:
    """The one question of a query: transaction id, name (lowercase, no trailing dot), type, class."""

    txid: int
    name: str
    qtype: int
    qclass: int
    flags: int
    raw_question: bytes


def _read_name(data: bytes, offset: int) -> tuple[str, int]:
    labels: list[str] = []
    end: int | None = None
    jumps = 0
    while True:
        if offset >= len(data):
            raise DnsFormatError("name runs past the end of the message")
        length = data[offset]
        if length & 0xC0 == 0xC0:
            if offset + 1 >= len(data):
                raise DnsFormatError("truncated compression pointer")
            jumps += 1
            if jumps > _MAX_POINTERS:
                raise DnsFormatError("compression pointer loop")
            if end is None:
                end = offset + 2
            offset = ((length & 0x3F) << 8) | data[offset + 1]
            continue
        if length & 0xC0:
            raise DnsFormatError("unsupported label type")
        offset += 1
        if length == 0:
            break
        label = data[offset : offset + length]
        if len(label) != length:
            raise DnsFormatError("label runs past the end of the message")
        labels.append(label.decode("ascii", "replace").lower())
        offset += length
    name = ".".join(labels)
    if len(name) > 253:
        raise DnsFormatError("name longer than 253 characters")
    return name, end if end is not None else offset


def encode_name(name: str) -> bytes:
    """Return ``name`` as uncompressed wire labels."""
    out = bytearray()
    for label in name.rstrip(".").split(".") if name.rstrip(".") else []:
        raw = label.encode("idna") if not label.isascii() else label.encode()
        if not 0 < len(raw) < 64:
            raise ValueError(f"bad label {label!r}")
        out += bytes([len(raw)]) + raw
    return bytes(out + b"\x00")


def parse_query(data: bytes) -> Question:
    """Return the question of a query; raise DnsFormatError when it is not one."""
    if len(data) < _HEADER.size:
        raise DnsFormatError("shorter than a DNS header")
    txid, flags, qdcount, _an, _ns, _ar = _HEADER.unpack_from(data)
    if flags & _QR:
        raise DnsFormatError("a response, not a query")
    if qdcount != 1:
        raise DnsFormatError(f"{qdcount} questions; exactly one is supported")
    name, offset = _read_name(data, _HEADER.size)
    if offset + 4 > len(data):
        raise DnsFormatError("question type and class missing")
    qtype, qclass = struct.unpack_from("!HH", data, offset)
    return Question(txid, name, qtype, qclass, flags, data[_HEADER.size : offset + 4])


def build_response(question: Question, rcode: int, addresses: Sequence[str] = (), ttl: int = 30) -> bytes:
    """Return the authoritative answer to ``question``: A records for ``addresses`` (IPv4 only)."""
    opcode = question.flags & 0x7800
    flags = _QR | _AA | _RA | opcode | (question.flags & _RD) | (rcode & 0xF)
    answers = bytearray()
    count = 0
    if rcode == NOERROR and question.qtype == TYPE_A and question.qclass == CLASS_IN:
        for address in addresses:
            packed = ipaddress.IPv4Address(address).packed
            answers += struct.pack("!HHHIH", 0xC000 | _HEADER.size, TYPE_A, CLASS_IN, ttl, 4) + packed
            count += 1
    header = _HEADER.pack(question.txid, flags, 1, count, 0, 0)
    return header + question.raw_question + bytes(answers)


def build_error(data: bytes, rcode: int) -> bytes | None:
    """Return a header-only error reply to an unparsable message, or None when it has no usable header."""
    if len(data) < _HEADER.size:
        return None
    txid, flags = struct.unpack_from("!HH", data)
    if flags & _QR:
        return None
    return _HEADER.pack(txid, _QR | _RA | (flags & 0x7800) | (flags & _RD) | rcode, 0, 0, 0, 0)


def build_query(txid: int, name: str, qtype: int = TYPE_A) -> bytes:
    """Return a recursive query for ``name`` (used by tests and the health probe)."""
    return _HEADER.pack(txid, _RD, 1, 0, 0, 0) + encode_name(name) + struct.pack("!HH", qtype, CLASS_IN)


def parse_response(data: bytes) -> tuple[int, int, list[str]]:
    """Return (transaction id, rcode, IPv4 addresses of the A answers) of a response."""
    if len(data) < _HEADER.size:
        raise DnsFormatError("shorter than a DNS header")
    txid, flags, qdcount, ancount, _ns, _ar = _HEADER.unpack_from(data)
    if not flags & _QR:
        raise DnsFormatError("a query, not a response")
    offset = _HEADER.size
    for _ in range(qdcount):
        _, offset = _read_name(data, offset)
        offset += 4
    addresses: list[str] = []
    for _ in range(ancount):
        _, offset = _read_name(data, offset)
        if offset + 10 > len(data):
            raise DnsFormatError("truncated answer")
        rtype, _rclass, _ttl, length = struct.unpack_from("!HHIH", data, offset)
        offset += 10
        rdata = data[offset : offset + length]
        if len(rdata) != length:
            raise DnsFormatError("truncated answer data")
        if rtype == TYPE_A and length == 4:
            addresses.append(str(ipaddress.IPv4Address(rdata)))
        offset += length
    return txid, flags & 0xF, addresses
