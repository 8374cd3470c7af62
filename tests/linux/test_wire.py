"""The runtime <-> init framing: requests in marshal, events in JSON (never unmarshalled), payload intact."""

from __future__ import annotations

import json
import marshal
import struct

import pytest

from mockserver.linux.standalone import wire


def test_request_round_trip_with_payload() -> None:
    header = {"op": "spawn", "id": 3, "argv": ["sh", "-c", "echo é"], "env": {"A": "1"}, "pty": None}
    assert wire.unpack_request(wire.pack_request(header, b"\x00\xff")) == (header, b"\x00\xff")


def test_event_round_trip_is_json() -> None:
    header = {"op": "exit", "id": 1, "code": None, "signal": 9, "timed_out": True, "message": 'q"\\\n\x01é'}
    packet = wire.pack_event(header, b"data")
    (length,) = struct.unpack_from("!I", packet)
    assert json.loads(packet[4 : 4 + length]) == header
    assert wire.unpack_event(packet) == (header, b"data")


@pytest.mark.parametrize("value", [0, -5, 1.5, "", "\u2028", [1, [2, None]], {"k": {"n": False}}, ("t",)])
def test_encode_json_agrees_with_the_json_module(value: object) -> None:
    assert json.loads(wire.encode_json(value)) == json.loads(json.dumps(value))


def test_events_are_never_unmarshalled() -> None:
    forged = marshal.dumps({"op": "exit"})
    with pytest.raises(wire.WireError, match="JSON"):
        wire.unpack_event(struct.pack("!I", len(forged)) + forged)


@pytest.mark.parametrize(
    "packet",
    [
        b"",
        b"\x00\x00",
        struct.pack("!I", 50) + b"{}",
        struct.pack("!I", 2) + b"[]",
        struct.pack("!I", 9) + b'{"op": 1}',
    ],
)
def test_malformed_events_are_refused(packet: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.unpack_event(packet)


def test_oversized_payload_is_refused() -> None:
    with pytest.raises(wire.WireError):
        wire.pack_request({"op": "stdin"}, b"x" * (wire.CHUNK + 1))
    with pytest.raises(TypeError):
        wire.encode_json({"op": object()})
