"""The framing between the runtime and its stand-alone programs (SOCK_SEQPACKET: one message per packet).

A packet is a 4-byte big-endian header length, the header, then an optional raw payload (output or stdin
bytes, at most :data:`CHUNK`). Headers are small flat dicts with an ``op``:

* runtime -> program (requests) are ``marshal``-encoded (format 4): the runtime is the trusted side, and
  ``marshal`` is built into the interpreter, so the sandbox's init starts without importing anything;
* program -> runtime (events and replies) are compact JSON, written by the tiny encoder below and parsed
  by the runtime with the ``json`` module, never with ``marshal``, since a sandbox could forge them.
"""

from __future__ import annotations

import marshal
import struct

TYPE_CHECKING = False  # typing itself would cost tens of milliseconds at every start
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BUFFER",
    "CHUNK",
    "MAX_MESSAGE",
    "WireError",
    "encode_json",
    "pack_event",
    "pack_request",
    "unpack_event",
    "unpack_request",
]

CHUNK = 64 * 1024
MAX_MESSAGE = CHUNK + 64 * 1024
BUFFER = 4 * MAX_MESSAGE
_LENGTH = struct.Struct("!I")


class WireError(ValueError):
    """A packet that is not a well-formed message."""


def _escape(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    if ord(char) < 0x20:
        return f"\\u{ord(char):04x}"
    return char


def encode_json(value: Any) -> str:
    """Return ``value`` (None, bool, int, float, str, list, tuple or dict of those) as compact JSON."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(_escape(c) for c in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(encode_json(str(k)) + ":" + encode_json(v) for k, v in value.items()) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")


def _frame(raw: bytes, payload: bytes) -> bytes:
    if len(payload) > CHUNK:
        raise WireError(f"payload of {len(payload)} bytes exceeds {CHUNK}")
    return _LENGTH.pack(len(raw)) + raw + payload


def _split(packet: bytes) -> tuple[bytes, bytes]:
    if len(packet) < _LENGTH.size:
        raise WireError("packet shorter than its length prefix")
    (length,) = _LENGTH.unpack_from(packet)
    end = _LENGTH.size + length
    if end > len(packet):
        raise WireError("header runs past the end of the packet")
    return packet[_LENGTH.size : end], packet[end:]


def _checked(header: object) -> dict[str, Any]:
    if not isinstance(header, dict) or not isinstance(header.get("op"), str):
        raise WireError("header must be an object with a string 'op'")
    return header


def pack_request(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """Return a runtime -> program packet."""
    return _frame(marshal.dumps(header, 4), payload)


def unpack_request(packet: bytes) -> tuple[dict[str, Any], bytes]:
    """Return the header and payload of a runtime -> program packet (programs only)."""
    raw, payload = _split(packet)
    try:
        header = marshal.loads(raw)
    except (ValueError, EOFError, TypeError) as exc:
        raise WireError(f"bad request header: {exc}") from None
    return _checked(header), payload


def pack_event(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """Return a program -> runtime packet."""
    return _frame(encode_json(header).encode("utf-8", "surrogateescape"), payload)


def unpack_event(packet: bytes) -> tuple[dict[str, Any], bytes]:
    """Return the header and payload of a program -> runtime packet (the runtime only; JSON, never marshal)."""
    import json

    raw, payload = _split(packet)
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise WireError(f"header is not JSON: {exc}") from None
    return _checked(header), payload
