"""What changed on the wire between two cassettes of the same flow, field by field (e.g. two SDK releases).

Exchanges are paired by call (``METHOD /path`` with sandbox ids as ``<sandbox#N>``) and occurrence (the k-th
``GET /v1/sandboxes/<sandbox#1>`` of one with the k-th of the other). For each pair the request's headers,
query parameters and JSON body, and the response's status and JSON body, are flattened to
``field path -> value`` and compared; values go through the differential run's normalisation first
(:meth:`harness.differential.session.Session.normalise`: ids, timestamps, ports), so only real changes show.
A call made more or fewer times is one change on ``calls``. Headers that differ on every request anyway
(``host``, ``date``, ``content-length``, trace and request ids) are left out.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from harness.differential.programs import compact
from harness.differential.session import ABSENT, Session, Side, event_stream
from harness.recording.normalise import volatile_placeholders
from mockserver.asgi import clients
from mockserver.core.cassette import Cassette, Exchange

__all__ = ["VOLATILE_HEADERS", "WireChange", "diff_cassettes", "flatten", "render_changes"]

VOLATILE_HEADERS = frozenset(
    {"host", "date", "content-length", "x-request-id", "traceparent", "tracestate", "server", "connection"}
)


@dataclass(frozen=True)
class WireChange:
    """One difference: in ``call``, at ``where``, ``before`` became ``after`` (``times`` pairs showed it)."""

    call: str
    where: str
    before: Any
    after: Any
    times: int = 1

    def describe(self) -> str:
        """Return ``call  where: before -> after``."""
        repeat = f" (x{self.times})" if self.times > 1 else ""
        return f"{self.call}  {self.where}: {compact(self.before)} -> {compact(self.after)}{repeat}"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Return ``{field path: leaf}`` for a JSON value (lists by index, with their ``length``)."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping):
        if not value and prefix:
            out[prefix] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list):
        out[f"{prefix}.length"] = len(value)
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{index}"))
    else:
        out[prefix or "."] = value
    return out


#: Sessions here only normalise values; they never send, so they share one client that is never opened.
_NO_CLIENT = clients.client()
_NO_CLIENT.close()


class _View:
    """One cassette seen through a differential session (so ids and times are placeholders)."""

    def __init__(self, cassette: Cassette) -> None:
        header = cassette.header
        self.provider = header.provider
        url = header.listen if header.preserve_host else header.upstream
        self.session = Session(Side(header.provider, url, None), _NO_CLIENT)
        self.calls: dict[str, list[dict[str, Any]]] = defaultdict(list)
        slots = 0
        for exchange in cassette:
            created = _created(exchange)
            if created is not None:
                slots += 1
                self.session.register(slots, *created)
            self.calls[self._call(exchange)].append(self._fields(exchange))

    def _call(self, exchange: Exchange) -> str:
        return f"{exchange.method} {self.session.normalise_text(exchange.path, None)}"

    def _fields(self, exchange: Exchange) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name, value in exchange.request.headers.items():
            if name not in VOLATILE_HEADERS:
                fields[f"request.header.{name}"] = self.session.normalise_text(value, None)
        for name, value in parse_qsl(exchange.query, keep_blank_values=True):
            fields[f"request.query.{name}"] = self.session.normalise_text(value, None)
        fields.update(self._body("request.body", exchange.request.body.text, exchange.request.header("content-type")))
        fields["response.status"] = exchange.status
        fields.update(
            self._body("response.body", exchange.response.body.text, exchange.response.header("content-type"))
        )
        return fields

    def _body(self, prefix: str, text: str, content_type: str) -> dict[str, Any]:
        if not text:
            return {}
        if content_type.startswith("text/event-stream"):
            parsed: Any = event_stream(text)
        else:
            try:
                parsed = json.loads(text)
            except ValueError:
                return {prefix: f"<{len(text)} bytes of {content_type or 'text'}>"}
        parsed = volatile_placeholders(parsed)
        return flatten(self.session.normalise(parsed, None), prefix)


def _created(exchange: Exchange) -> tuple[str, Any] | None:
    if exchange.method != "POST" or not 200 <= exchange.status < 300 or not exchange.path.endswith("/sandboxes"):
        return None
    try:
        body = json.loads(exchange.response.body.text)
    except ValueError:
        return None
    ident = body.get("id") or body.get("sandbox_id") if isinstance(body, dict) else None
    return (ident, body.get("createdAt")) if isinstance(ident, str) else None


def diff_cassettes(before: Cassette, after: Cassette) -> list[WireChange]:
    """Return every field-level change from ``before`` to ``after``, in call order, repeats folded."""
    old, new = _View(before), _View(after)
    found: dict[tuple[str, str, str, str], list[Any]] = {}
    order = list(old.calls) + [c for c in new.calls if c not in old.calls]
    for call in order:
        a, b = old.calls.get(call, []), new.calls.get(call, [])
        if len(a) != len(b):
            _add(found, call, "calls", len(a), len(b))
        for fields_a, fields_b in zip(a, b, strict=False):
            for where in _ordered(fields_a, fields_b):
                x, y = fields_a.get(where, ABSENT), fields_b.get(where, ABSENT)
                if x != y:
                    _add(found, call, where, x, y)
    return [WireChange(k[0], k[1], v[0], v[1], v[2]) for k, v in found.items()]


def _ordered(a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterable[str]:
    return list(a) + [k for k in b if k not in a]


def _add(found: dict[tuple[str, str, str, str], list[Any]], call: str, where: str, before: Any, after: Any) -> None:
    key = (call, where, compact(before), compact(after))
    if key in found:
        found[key][2] += 1
    else:
        found[key] = [before, after, 1]


def render_changes(label: str, changes: list[WireChange]) -> list[str]:
    """Return printable lines for one pair of cassettes."""
    if not changes:
        return [f"{label}: no change on the wire"]
    return [f"{label}: {len(changes)} change{'s' if len(changes) != 1 else ''} on the wire"] + [
        f"  {c.describe()}" for c in changes
    ]
