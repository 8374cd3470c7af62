"""Cassettes: what an exchange keeps, what it hides, and reading a file back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mockserver.core.cassette import (
    BodyText,
    Cassette,
    CassetteError,
    CassetteHeader,
    CassetteWriter,
    Exchange,
    read_cassette,
)
from mockserver.core.redact import REDACTED

HEADER = CassetteHeader("opensandbox", "http://127.0.0.1:1", "http://127.0.0.1:2", True, "2026-01-01T00:00:00Z")


def exchange(seq: int = 1, **changes: object) -> Exchange:
    fields: dict[str, object] = {
        "started": 0.5,
        "elapsed": 0.01,
        "method": "POST",
        "path": "/v1/sandboxes",
        "query": "",
        "request_headers": [("Content-Type", "application/json"), ("OPEN-SANDBOX-API-KEY", "key-1")],
        "request_body": json.dumps({"image": {"uri": "r/x", "auth": {"username": "u", "password": "pw"}}}).encode(),
        "status": 202,
        "response_headers": [("content-type", "application/json")],
        "response_body": b'{"id": "abc"}',
        **changes,
    }
    return Exchange.build(seq, **fields)  # type: ignore[arg-type]


def test_exchanges_hide_credentials_and_registry_passwords() -> None:
    made = exchange(query="pageSize=2&token=t")
    assert made.request.header("open-sandbox-api-key") == REDACTED
    assert json.loads(made.request.body.text)["image"]["auth"] == {"username": "u", "password": REDACTED}
    assert made.query == "pageSize=2&token=%3Credacted%3E"
    assert made.response.body.text == '{"id": "abc"}'  # nothing secret: kept byte for byte
    assert made.line == f"POST /v1/sandboxes?{made.query}"


def test_compressed_and_binary_bodies() -> None:
    zipped = exchange(
        response_headers=[("content-type", "application/json"), ("content-encoding", "gzip")],
        response_body=gzip.compress(b'{"ok": true}'),
    )
    assert zipped.response.body.text == '{"ok": true}'
    binary = exchange(response_headers=[("content-type", "application/octet-stream")], response_body=b"\xff\x00\xfe")
    assert binary.response.body.encoding == "base64" and binary.response.body.bytes() == b"\xff\x00\xfe"
    assert BodyText.of(b"plain text token=x").text == "plain text token=x"


def test_a_cassette_round_trips_and_is_read_in_request_order(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    writer = CassetteWriter(path, HEADER)
    second, first = exchange(2, path="/v1/sandboxes/abc", method="GET"), exchange(1)
    writer.write(second)  # the later request finished first
    writer.write(first)
    writer.close()
    writer.write(exchange(3))
    assert (writer.count, writer.dropped) == (2, 1)
    cassette = read_cassette(path)
    assert cassette.header == HEADER and [e.seq for e in cassette] == [1, 2]
    assert cassette.exchanges == (first, second)
    copy = tmp_path / "copy.jsonl"
    cassette.write(copy)
    assert read_cassette(copy) == cassette
    assert "key-1" not in path.read_text() and '"pw"' not in path.read_text()


@pytest.mark.parametrize(
    "content",
    ["", '{"not": "a header"}\n', '{"cassette": 1, "provider": "x"}\n', "not json\n"],
)
def test_files_that_are_not_cassettes_are_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(CassetteError):
        read_cassette(path)


def test_a_bad_exchange_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    Cassette(HEADER, ()).write(path)
    with path.open("a") as handle:
        handle.write('{"seq": 1}\n')
    with pytest.raises(CassetteError, match="not a cassette exchange"):
        read_cassette(path)
