"""The journal exported: as a HAR 1.2 log (browsers' and proxies' format) or as a cassette ``sandproof replay`` reads.

Both are built from journal entries, so they hold what the journal holds: credentials redacted, request bodies
and answers cut at the journal's limits (a cut answer is marked: HAR ``content.comment``, cassette
``truncated``). The journal keeps no durations, so every timing is 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from mockserver.core.cassette import CassetteHeader, Exchange
from mockserver.core.journal import JournalEntry

__all__ = ["EXPORT_FORMATS", "cassette_lines", "har_log"]

#: The formats of ``GET /_mock/journal/export?format=...`` and their media types.
EXPORT_FORMATS = {"har": "application/json", "cassette": "application/x-ndjson"}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _pairs(headers: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in headers.items()]


def _status_text(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _har_entry(entry: JournalEntry, base_url: str) -> dict[str, Any]:
    url = f"{base_url}{entry.path}" + (f"?{entry.query}" if entry.query else "")
    request: dict[str, Any] = {
        "method": entry.method,
        "url": url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": _pairs(entry.headers),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(entry.query, keep_blank_values=True)],
        "headersSize": -1,
        "bodySize": len(entry.body.encode()),
    }
    if entry.body:
        request["postData"] = {"mimeType": entry.headers.get("content-type", ""), "text": entry.body}
    content: dict[str, Any] = {
        "size": len(entry.response_body.encode()),
        "mimeType": entry.response_headers.get("content-type", ""),
        "text": entry.response_body,
    }
    if entry.response_truncated:
        content["comment"] = "cut at the journal's limit"
    comment = f"fault: {entry.fault}" if entry.fault else ""
    return {
        "startedDateTime": _iso(entry.time),
        "time": 0,
        "request": request,
        "response": {
            "status": entry.status,
            "statusText": _status_text(entry.status),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": _pairs(entry.response_headers),
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(entry.response_body.encode()),
        },
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
        "comment": comment,
    }


def har_log(entries: Sequence[JournalEntry], base_url: str, version: str) -> dict[str, Any]:
    """Return the entries as a HAR 1.2 document; ``base_url`` is the mock's own URL (the requests' origin)."""
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "sandproof", "version": version},
            "entries": [_har_entry(entry, base_url.rstrip("/")) for entry in entries],
        }
    }


def cassette_lines(entries: Sequence[JournalEntry], provider: str, base_url: str) -> str:
    """Return the entries as a cassette (JSON Lines: a header, then one exchange a request)."""
    header = CassetteHeader(
        provider=provider,
        upstream=base_url,
        listen=base_url,
        preserve_host=True,
        recorded_at=_iso(entries[0].time if entries else 0.0),
        note="exported from the mock's journal",
    )
    lines = [header.to_json()]
    for entry in entries:
        exchange = Exchange.build(
            entry.seq,
            started=entry.time,
            elapsed=0.0,
            method=entry.method,
            path=entry.path,
            query=entry.query,
            request_headers=entry.headers.items(),
            request_body=entry.body.encode(),
            status=entry.status,
            response_headers=entry.response_headers.items(),
            response_body=entry.response_body.encode(),
            truncated=entry.response_truncated,
        )
        lines.append(exchange.to_json())
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
