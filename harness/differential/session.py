"""One side of a differential run: send a program's steps and normalise the replies into comparable values.

Sandbox ids become ``<sandbox#N>``, other UUIDs ``<foreign-id>``; timestamps become placeholders naming
their anchor and format; ``127.0.0.1:<port>`` becomes ``<server>`` or ``<host-port>`` (see
:mod:`harness.differential.runner` for the full rules).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.differential.programs import RelTime, Step

__all__ = [
    "ABSENT",
    "API_KEY_HEADER",
    "WRONG_KEY",
    "Observed",
    "Session",
    "Side",
    "created_sandbox",
    "event_stream",
    "parse_time",
    "reply_body",
    "reply_headers",
]

API_KEY_HEADER = "OPEN-SANDBOX-API-KEY"
WRONG_KEY = "sandproof-wrong-key"
ABSENT = "<absent>"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HOST_PORT = re.compile(r"\b(?:127\.0\.0\.1|localhost):(\d+)")
_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?P<frac>\.\d+)?(?P<tz>Z|[+-]\d{2}:\d{2})?$", re.IGNORECASE
)
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_NEAR_SECONDS = 5.0
_EXACT_SECONDS = 0.001


@dataclass(frozen=True)
class Side:
    """One server under comparison: a base URL (without ``/v1``) and its API key."""

    name: str
    url: str
    api_key: str | None

    @property
    def port(self) -> int | None:
        """Return the URL's port."""
        return urlsplit(self.url).port


@dataclass(frozen=True)
class Observed:
    """One side's normalised reply to a step (status 0 means the connection failed)."""

    status: int
    headers: Mapping[str, str]
    body: Any
    request: str
    raw: str


def parse_time(text: str) -> datetime | None:
    """Parse RFC 3339 or ISO date text (naive counts as UTC), or return None."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


@dataclass
class Session:
    """One side's view of one program run: the client and the ids, anchors and times it has seen."""

    side: Side
    client: httpx.Client
    ids: dict[int, str] = field(default_factory=dict)
    slots: dict[str, int] = field(default_factory=dict)
    anchors: dict[str, datetime] = field(default_factory=dict)
    requested: dict[str, datetime] = field(default_factory=dict)

    def sandbox_id(self, slot: int | None) -> str:
        """Return the id behind a slot, or a never-existing id."""
        if slot is None:
            return ""
        return self.ids.get(slot) or f"sandproof-missing-{slot}"

    def register(self, slot: int, sandbox_id: str, created_at: Any) -> None:
        """Remember the sandbox a create slot made and its create-reply `createdAt`."""
        self.ids[slot] = sandbox_id
        self.slots[sandbox_id] = slot
        when = parse_time(created_at) if isinstance(created_at, str) else None
        self.anchors[f"created#{slot}"] = when or datetime.now(UTC)

    def headers(self, step: Step) -> dict[str, str]:
        """Return the request headers for a step."""
        headers: dict[str, str] = {}
        if step.auth == "ok" and self.side.api_key:
            headers[API_KEY_HEADER] = self.side.api_key
        elif step.auth == "wrong":
            headers[API_KEY_HEADER] = WRONG_KEY
        if step.request_id:
            headers["X-Request-ID"] = step.request_id
        return headers

    def resolve(self, value: Any, step: Step, index: int, key: str = "") -> Any:
        """Resolve :class:`RelTime` values and record every time the request names."""
        if isinstance(value, RelTime):
            anchor = self.anchors.get(f"created#{step.sandbox}") or datetime.now(UTC)
            text, when = value.render(anchor)
            self.requested[f"requested@{index}"] = when
            return text
        if isinstance(value, dict):
            return {k: self.resolve(v, step, index, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, step, index) for v in value]
        if key == "expiresAt":
            sent = parse_time(value) if isinstance(value, str) else None
            if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e11:
                sent = datetime.fromtimestamp(value, UTC)
            if sent is not None:
                self.requested[f"requested@{index}"] = sent
        return value

    def send(self, step: Step, index: int) -> tuple[str, httpx.Response | Exception]:
        """Send a step; return the request line and the response or the transport error."""
        headers = self.headers(step)
        content: bytes | None = step.raw
        if content is None and step.body is not None:
            content = json.dumps(self.resolve(step.body, step, index)).encode()
        if content is not None and step.content_type:
            headers["content-type"] = step.content_type
        path = step.path(self.sandbox_id(step.sandbox))
        line = f"{step.method} {path}" + ("?" + "&".join(f"{k}={v}" for k, v in step.params) if step.params else "")
        try:
            response = self.client.request(
                step.method, self.side.url + path, params=list(step.params), content=content, headers=headers
            )
        except httpx.HTTPError as exc:
            return line, exc
        return line, response

    def observe(self, step: Step, line: str, outcome: httpx.Response | Exception) -> Observed:
        """Normalise a reply."""
        if isinstance(outcome, Exception):
            text = f"{type(outcome).__name__}: {outcome}"
            return Observed(0, {}, f"<transport error {type(outcome).__name__}>", line, text)
        return self.observe_reply(outcome, line, slot=step.sandbox, request_id=step.request_id)

    def observe_reply(
        self, response: httpx.Response, line: str, *, slot: int | None, request_id: str | None, body: Any = ABSENT
    ) -> Observed:
        """Normalise a reply to a request about sandbox ``slot`` (``body``: the parsed body, if already parsed)."""
        parsed = reply_body(response) if body is ABSENT else body
        context = f"created#{slot}" if slot in self.ids else None
        return Observed(
            response.status_code,
            reply_headers(response, request_id),
            self.normalise(parsed, context),
            line,
            response.text,
        )

    def normalise(self, value: Any, context: str | None) -> Any:
        """Replace ids, ports and timestamps in a JSON value with placeholders."""
        if isinstance(value, dict):
            own = value.get("id")
            if isinstance(own, str) and own in self.slots:
                context = f"created#{self.slots[own]}"
            value = _mark_transition(value)
            return {k: self.normalise(v, context) for k, v in value.items()}
        if isinstance(value, list):
            return [self.normalise(v, context) for v in value]
        if isinstance(value, str):
            return self.normalise_text(value, context)
        return value

    def normalise_text(self, text: str, context: str | None) -> str:
        """Normalise one string."""
        if _TIMESTAMP.match(text):
            return self.normalise_time(text, context)
        for sandbox_id, slot in self.slots.items():
            text = text.replace(sandbox_id, f"<sandbox#{slot}>")
        text = _UUID.sub("<foreign-id>", text)
        return _HOST_PORT.sub(lambda m: "<server>" if int(m[1]) == self.side.port else "<host-port>", text)

    def normalise_time(self, text: str, context: str | None) -> str:
        """Turn a timestamp into a placeholder naming its anchor and its format."""
        match = _TIMESTAMP.match(text)
        assert match is not None
        frac, tz = match["frac"], match["tz"]
        shape = ("s" if not frac else f"f{len(frac) - 1}") + (tz.upper() if tz else "-naive")
        when = parse_time(text)
        if when is None:
            return f"<bad-timestamp {text}>"
        for label, requested in self.requested.items():
            if when == requested:
                return f"<{label}|{shape}>"
        labels = [context] if context in self.anchors else list(self.anchors)
        for label in labels:
            delta = (when - self.anchors[label]).total_seconds()
            whole = round(delta)
            if whole and abs(delta - whole) < _EXACT_SECONDS:
                return f"<{label}{whole:+d}s|{shape}>"
        for label in labels:
            if abs((when - self.anchors[label]).total_seconds()) < _NEAR_SECONDS:
                return f"<{label}~|{shape}>"
        return f"<timestamp|{shape}>"

    def delete(self, sandbox_id: str) -> None:
        """Delete a sandbox without comparing (errors ignored)."""
        key = {API_KEY_HEADER: self.side.api_key} if self.side.api_key else {}
        with contextlib.suppress(httpx.HTTPError):
            self.client.delete(f"{self.side.url}/v1/sandboxes/{sandbox_id}", headers=key)

    def cleanup(self) -> None:
        """Delete every sandbox this run made."""
        for sandbox_id in self.ids.values():
            self.delete(sandbox_id)


def _mark_transition(value: dict[str, Any]) -> dict[str, Any]:
    """Replace `status.lastTransitionAt` by a marker when it equals the object's `createdAt`."""
    status = value.get("status")
    created = value.get("createdAt")
    if isinstance(status, dict) and isinstance(created, str) and status.get("lastTransitionAt") == created:
        return {**value, "status": {**status, "lastTransitionAt": "<same-as-createdAt>"}}
    return value


def reply_headers(response: httpx.Response, request_id: str | None) -> dict[str, str]:
    """Return the compared headers: the media type, how ``x-request-id`` relates to the request, ``vary``."""
    media = response.headers.get("content-type")
    return {
        "content-type": media.split(";")[0].strip().lower() if media else ABSENT,
        "x-request-id": _request_id_shape(response.headers.get("x-request-id"), request_id),
        "vary": response.headers.get("vary", ABSENT),
    }


def reply_body(response: httpx.Response) -> Any:
    """Return a reply's body as JSON; an event stream as its list of events; other text as ``<non-json> ...``."""
    if not response.content:
        return None
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return event_stream(response.text)
    try:
        return json.loads(response.content)
    except ValueError:
        return "<non-json> " + response.text[:200]


def event_stream(text: str) -> list[Any]:
    """Return the events of a ``text/event-stream`` body: each event's ``data`` as JSON when it parses."""
    events: list[Any] = []
    for block in re.split(r"\r?\n\r?\n", text):
        lines = [line for line in block.splitlines() if line and not line.startswith(":")]
        if not lines:
            continue
        data = [line[5:].lstrip() for line in lines if line.startswith("data:")]
        payload = "\n".join(data) if data else "\n".join(lines)
        try:
            events.append(json.loads(payload))
        except ValueError:
            events.append(payload)
    return events


def _request_id_shape(value: str | None, sent: str | None) -> str:
    """Return how a reply's `x-request-id` relates to the request."""
    if value is None:
        return ABSENT
    if sent is not None:
        return "<echoed>" if value == sent else f"<not echoed: {value}>"
    return "<hex32>" if _HEX32.match(value) else f"<other: {value}>"


def created_sandbox(outcome: httpx.Response | Exception) -> tuple[str, Any] | None:
    """Return the id and `createdAt` of a successful create reply."""
    if isinstance(outcome, Exception) or not 200 <= outcome.status_code < 300:
        return None
    try:
        body = outcome.json()
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        return body["id"], body.get("createdAt")
    return None
