"""Cassettes: recorded HTTP exchanges as JSON Lines, with their secrets redacted.

The first line is the header (:class:`CassetteHeader`: provider, upstream, the recorder's own address,
whether the Host header was passed through); every further line is one :class:`Exchange`, the request and
the response as text (UTF-8, or base64 for bytes that are not), with their headers lower-cased. Redaction
(:mod:`mockserver.core.redact`) happens when an exchange is built, so a secret never reaches the file:
credential headers, secret-naming query parameters and JSON fields (registry passwords, tokens, keys).
"""

from __future__ import annotations

import base64
import json
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from mockserver.core.redact import redact_headers, redact_query, redact_text

__all__ = [
    "CASSETTE_VERSION",
    "BodyText",
    "Cassette",
    "CassetteError",
    "CassetteHeader",
    "CassetteWriter",
    "Exchange",
    "Message",
    "decode_body",
    "read_cassette",
]

CASSETTE_VERSION = 1
#: How much of a response body a cassette keeps (an endless stream is cut here).
BODY_LIMIT = 1024 * 1024


class CassetteError(ValueError):
    """Raise when a file is not a cassette this version understands."""


@dataclass(frozen=True)
class BodyText:
    """A body as it is stored: ``text`` in ``encoding`` (``utf-8`` or ``base64``)."""

    text: str = ""
    encoding: str = "utf-8"

    @classmethod
    def of(cls, data: bytes, content_type: str = "") -> BodyText:
        """Store ``data``: redacted text when it decodes as UTF-8, else base64."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return cls(base64.b64encode(data).decode("ascii"), "base64")
        return cls(redact_text(text) if "json" in content_type or text[:1] in "{[" else text)

    def bytes(self) -> bytes:
        """Return the body's bytes."""
        return base64.b64decode(self.text) if self.encoding == "base64" else self.text.encode("utf-8")


@dataclass(frozen=True)
class Message:
    """One side of an exchange: headers and body (the request adds method, path, query; the response status)."""

    headers: dict[str, str]
    body: BodyText = field(default_factory=BodyText)

    def header(self, name: str, default: str = "") -> str:
        """Return a header's value (names are lower case)."""
        return self.headers.get(name.lower(), default)


@dataclass(frozen=True)
class Exchange:
    """One request and what answered it (``status`` 0 and ``error`` when the upstream could not be reached)."""

    seq: int
    started: float
    elapsed: float
    method: str
    path: str
    query: str
    request: Message
    status: int
    response: Message
    streamed: bool = False
    truncated: bool = False
    error: str = ""

    @property
    def line(self) -> str:
        """Return ``METHOD /path?query``."""
        return f"{self.method} {self.path}" + (f"?{self.query}" if self.query else "")

    def to_json(self) -> dict[str, Any]:
        """Return the exchange as one cassette line's JSON."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Exchange:
        """Rebuild an exchange from :meth:`to_json` output."""
        try:
            return cls(
                seq=int(data["seq"]),
                started=float(data["started"]),
                elapsed=float(data["elapsed"]),
                method=str(data["method"]),
                path=str(data["path"]),
                query=str(data.get("query", "")),
                request=_message(data["request"]),
                status=int(data["status"]),
                response=_message(data["response"]),
                streamed=bool(data.get("streamed", False)),
                truncated=bool(data.get("truncated", False)),
                error=str(data.get("error", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CassetteError(f"not a cassette exchange: {exc}") from exc

    @classmethod
    def build(
        cls,
        seq: int,
        *,
        started: float,
        elapsed: float,
        method: str,
        path: str,
        query: str,
        request_headers: Iterable[tuple[str, str]],
        request_body: bytes,
        status: int,
        response_headers: Iterable[tuple[str, str]],
        response_body: bytes,
        streamed: bool = False,
        truncated: bool = False,
        error: str = "",
    ) -> Exchange:
        """Build an exchange from what went over the wire, redacting secrets and decoding compressed bodies."""
        req_headers = redact_headers(request_headers)
        resp_headers = redact_headers(response_headers)
        plain = decode_body(response_body, resp_headers.get("content-encoding", ""))
        return cls(
            seq=seq,
            started=round(started, 6),
            elapsed=round(elapsed, 6),
            method=method,
            path=path,
            query=redact_query(query),
            request=Message(req_headers, BodyText.of(request_body, req_headers.get("content-type", ""))),
            status=status,
            response=Message(resp_headers, BodyText.of(plain, resp_headers.get("content-type", ""))),
            streamed=streamed,
            truncated=truncated,
            error=error,
        )


def _message(data: Mapping[str, Any]) -> Message:
    body = data.get("body") or {}
    return Message(
        {str(k).lower(): str(v) for k, v in dict(data.get("headers") or {}).items()},
        BodyText(str(body.get("text", "")), str(body.get("encoding", "utf-8"))),
    )


def decode_body(data: bytes, content_encoding: str) -> bytes:
    """Undo ``gzip`` or ``deflate`` content encoding for the cassette (other encodings are kept as sent)."""
    coding = content_encoding.strip().lower()
    try:
        if coding == "gzip":
            return zlib.decompress(data, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            return zlib.decompress(data)
    except zlib.error:
        return data
    return data


@dataclass(frozen=True)
class CassetteHeader:
    """What a cassette recorded: ``provider``, ``upstream`` URL, the recorder's ``listen`` URL, Host handling."""

    provider: str
    upstream: str
    listen: str
    preserve_host: bool
    recorded_at: str
    note: str = ""
    version: int = CASSETTE_VERSION

    def to_json(self) -> dict[str, Any]:
        """Return the header line's JSON."""
        return {"cassette": self.version, **{k: v for k, v in asdict(self).items() if k != "version"}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CassetteHeader:
        """Rebuild the header; CassetteError when the line is not one."""
        if data.get("cassette") != CASSETTE_VERSION:
            raise CassetteError(f"not a version {CASSETTE_VERSION} cassette header: {dict(data)!r:.200}")
        try:
            return cls(
                provider=str(data["provider"]),
                upstream=str(data["upstream"]),
                listen=str(data["listen"]),
                preserve_host=bool(data["preserve_host"]),
                recorded_at=str(data["recorded_at"]),
                note=str(data.get("note", "")),
            )
        except KeyError as exc:
            raise CassetteError(f"cassette header lacks {exc}") from exc


@dataclass(frozen=True)
class Cassette:
    """A header and its exchanges, in the order the requests started."""

    header: CassetteHeader
    exchanges: tuple[Exchange, ...]

    def __iter__(self) -> Iterator[Exchange]:
        return iter(self.exchanges)

    def __len__(self) -> int:
        return len(self.exchanges)

    def write(self, path: Path) -> None:
        """Write the cassette to ``path``."""
        with path.open("w", encoding="utf-8") as handle:
            _write_line(handle, self.header.to_json())
            for exchange in self.exchanges:
                _write_line(handle, exchange.to_json())


def read_cassette(path: Path) -> Cassette:
    """Read a cassette file; its exchanges come back sorted by ``seq`` (request start order)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise CassetteError(f"{path} is empty")
    try:
        header = CassetteHeader.from_json(json.loads(lines[0]))
        exchanges = sorted((Exchange.from_json(json.loads(line)) for line in lines[1:]), key=lambda e: e.seq)
    except json.JSONDecodeError as exc:
        raise CassetteError(f"{path}: not JSON Lines: {exc}") from exc
    return Cassette(header, tuple(exchanges))


def _write_line(handle: IO[str], data: Mapping[str, Any]) -> None:
    handle.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")


class CassetteWriter:
    """Append exchanges to a cassette file as they complete (thread-safe; each line is flushed)."""

    def __init__(self, path: Path, header: CassetteHeader) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seq = 0
        self.count = 0
        self.dropped = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = path.open("w", encoding="utf-8")
        _write_line(self._handle, header.to_json())
        self._handle.flush()

    def next_seq(self) -> int:
        """Number a request as it starts."""
        with self._lock:
            self._seq += 1
            return self._seq

    def write(self, exchange: Exchange) -> None:
        """Append one exchange (one that ends after :meth:`close` is counted in ``dropped``)."""
        with self._lock:
            if self._handle.closed:
                self.dropped += 1
                return
            _write_line(self._handle, exchange.to_json())
            self._handle.flush()
            self.count += 1

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if not self._handle.closed:
                self._handle.close()
