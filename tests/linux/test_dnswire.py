"""DNS wire format: queries parse, answers carry the addresses, malformed input is refused, not trusted."""

from __future__ import annotations

import struct

import pytest

from mockserver.linux import dnswire


def test_query_round_trip_to_an_answer() -> None:
    query = dnswire.build_query(0x1234, "Api.Example.COM.")
    question = dnswire.parse_query(query)
    assert (question.txid, question.name, question.qtype) == (0x1234, "api.example.com", dnswire.TYPE_A)
    answer = dnswire.build_response(question, dnswire.NOERROR, ["203.0.113.10", "203.0.113.11"])
    assert dnswire.parse_response(answer) == (0x1234, dnswire.NOERROR, ["203.0.113.10", "203.0.113.11"])


def test_answer_flags_echo_the_question_and_set_qr_aa_ra() -> None:
    question = dnswire.parse_query(dnswire.build_query(7, "example.com"))
    answer = dnswire.build_response(question, dnswire.NOERROR, ["192.0.2.1"], ttl=99)
    txid, flags, qd, an, ns, ar = struct.unpack_from("!HHHHHH", answer)
    assert (txid, qd, an, ns, ar) == (7, 1, 1, 0, 0)
    assert flags & 0x8000 and flags & 0x0400 and flags & 0x0100 and flags & 0x0080
    assert answer[12 : 12 + len(question.raw_question)] == question.raw_question
    assert struct.unpack_from("!I", answer, 12 + len(question.raw_question) + 6)[0] == 99


def test_nxdomain_and_other_types_carry_no_records() -> None:
    question = dnswire.parse_query(dnswire.build_query(1, "nothing.invalid"))
    assert dnswire.parse_response(dnswire.build_response(question, dnswire.NXDOMAIN, ["192.0.2.1"])) == (
        1,
        dnswire.NXDOMAIN,
        [],
    )
    aaaa = dnswire.parse_query(dnswire.build_query(2, "example.com", dnswire.TYPE_AAAA))
    assert dnswire.parse_response(dnswire.build_response(aaaa, dnswire.NOERROR, ["192.0.2.1"]))[2] == []


def test_edns_additional_records_are_ignored() -> None:
    query = bytearray(dnswire.build_query(5, "example.com"))
    struct.pack_into("!H", query, 10, 1)  # ARCOUNT = 1
    query += b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0)  # an OPT record
    question = dnswire.parse_query(bytes(query))
    assert question.name == "example.com"
    assert dnswire.parse_response(dnswire.build_response(question, dnswire.NOERROR, ["192.0.2.9"]))[2] == ["192.0.2.9"]


def test_compressed_names_are_followed_and_loops_refused() -> None:
    header = struct.pack("!HHHHHH", 9, 0x0100, 1, 0, 0, 0)
    pointing = header + b"\xc0\x0c" + struct.pack("!HH", 1, 1)  # points at itself
    with pytest.raises(dnswire.DnsFormatError, match="loop"):
        dnswire.parse_query(pointing)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00" * 11,
        struct.pack("!HHHHHH", 1, 0x8000, 1, 0, 0, 0) + b"\x00\x00\x01\x00\x01",  # a response
        struct.pack("!HHHHHH", 1, 0, 2, 0, 0, 0) + b"\x00\x00\x01\x00\x01",  # two questions
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\x05abc",  # label past the end
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\x00\x00",  # type and class missing
    ],
)
def test_malformed_queries_are_refused(data: bytes) -> None:
    with pytest.raises(dnswire.DnsFormatError):
        dnswire.parse_query(data)


def test_error_reply_to_garbage_keeps_the_id() -> None:
    reply = dnswire.build_error(struct.pack("!HHHHHH", 0xBEEF, 0x0100, 5, 0, 0, 0), dnswire.FORMERR)
    assert reply is not None
    assert dnswire.parse_response(reply) == (0xBEEF, dnswire.FORMERR, [])
    assert dnswire.build_error(b"\x01", dnswire.FORMERR) is None


def test_encode_name_refuses_bad_labels() -> None:
    assert dnswire.encode_name("a.b") == b"\x01a\x01b\x00"
    assert dnswire.encode_name(".") == b"\x00"
    with pytest.raises(ValueError):
        dnswire.encode_name("a" * 64 + ".com")
