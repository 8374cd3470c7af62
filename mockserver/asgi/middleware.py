"""ASGI wrappers that every mock shares: the request journal and fault injection."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mockserver.core.clock import VirtualClock
from mockserver.core.faults import FaultRule, FaultSet
from mockserver.core.journal import (
    BODY_LIMIT,
    GENERATED_HEADER,
    RESPONSE_BODY_LIMIT,
    Journal,
    JournalEntry,
    RequestNotes,
)
from mockserver.core.redact import redact_headers

NOTES_KEY = "sandproof_notes"
TRANSPORT_KEY = "sandproof_transport"
ADMIN_PREFIX = "/_mock"
_HEADER_IDS = (b"x-tensorlake-sandbox-id", b"x-sandbox-id", b"opensandbox-sandbox-id")
_PORT_LABEL = re.compile(r"^\d{1,5}-(.+)$")


def notes(scope: Scope) -> RequestNotes:
    """Return the notes a route keeps about the current request (created on first use)."""
    state: dict[str, Any] = scope.setdefault("state", {})
    found = state.get(NOTES_KEY)
    if not isinstance(found, RequestNotes):
        found = RequestNotes()
        state[NOTES_KEY] = found
    return found


def abort_connection(scope: Scope, receive: Receive) -> None:
    """Drop the client's connection at once (a reset); raise where no socket exists (in-process)."""
    transport = scope.get(TRANSPORT_KEY) or _transport_of(receive)
    if transport is not None:
        transport.abort()
        return
    raise ConnectionResetError("connection dropped by a sandproof fault")


def _transport_of(receive: Receive) -> Any:
    return getattr(getattr(receive, "__self__", None), "transport", None)


def _is_admin(scope: Scope) -> bool:
    return scope["type"] != "http" or str(scope.get("path", "")).startswith(ADMIN_PREFIX)


def sandbox_ids_in(scope: Scope) -> frozenset[str]:
    """Return every string in the request that could name a sandbox (path segments, host labels)."""
    found = {seg for seg in str(scope.get("path", "")).split("/") if seg}
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1").split(":")[0]
    for label in host.split("."):
        found.add(label)
        match = _PORT_LABEL.match(label)
        if match:
            found.add(match.group(1))
    for name in _HEADER_IDS:
        if name in headers:
            found.add(headers[name].decode("latin-1"))
    return frozenset(found)


def _bodyless(scope: Scope, status: int, start: Message) -> bool:
    """Tell whether a response ends with its headers (no body follows on the wire)."""
    if scope.get("method") == "HEAD" or status < 200 or status in (204, 304):
        return True
    return any(k.lower() == b"content-length" and v.strip() == b"0" for k, v in start.get("headers") or [])


class JournalMiddleware:
    """Record every non-admin request and its answer: bodies (bounded), headers (credentials redacted), status."""

    def __init__(self, app: ASGIApp, journal: Journal, clock: VirtualClock, provider: str) -> None:
        self.app = app
        self.journal = journal
        self.clock = clock
        self.provider = provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _is_admin(scope):
            await self.app(scope, receive, send)
            return
        transport = _transport_of(receive)
        if transport is not None:
            scope[TRANSPORT_KEY] = transport
        request_notes = notes(scope)
        body = bytearray()
        answer = _Answer()

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request" and len(body) < BODY_LIMIT:
                body.extend(message.get("body", b"")[: BODY_LIMIT - len(body)])
            return message

        recorded = False

        def record_once() -> None:
            nonlocal recorded
            if not recorded:
                recorded = True
                self._record(scope, request_notes, bytes(body), answer)

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer.start(message)
                if _bodyless(scope, answer.status, message):
                    record_once()  # the client may see the end of the response with the headers
            elif message["type"] == "http.response.body":
                answer.add(message.get("body", b""))
                if not message.get("more_body", False):
                    record_once()  # before the client can see the end of the response
            await send(message)

        try:
            await self.app(scope, recording_receive, recording_send)
        finally:
            record_once()

    def _record(self, scope: Scope, request_notes: RequestNotes, body: bytes, answer: _Answer) -> None:
        # What the entry holds is captured now; decoding and redacting wait until someone reads the journal.
        now = self.clock.now()
        raw_headers = list(scope.get("headers") or [])
        method, path = str(scope.get("method", "")), str(scope.get("path", ""))
        query = bytes(scope.get("query_string", b""))
        tenant, sandbox_id, fault = request_notes.tenant, request_notes.sandbox_id, request_notes.fault
        unknown = tuple(request_notes.unknown_fields)
        status, response_headers, response_body = answer.status, answer.raw_headers, bytes(answer.body)
        truncated = answer.truncated

        def make(seq: int) -> JournalEntry:
            headers = redact_headers((bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in raw_headers)
            return JournalEntry(
                seq=seq,
                time=now,
                provider=self.provider,
                method=method,
                path=path,
                query=query.decode("latin-1"),
                headers=headers,
                body=body.decode("utf-8", "replace"),
                status=status,
                tenant=tenant,
                sandbox_id=sandbox_id,
                fault=fault,
                unknown_fields=() if GENERATED_HEADER in headers else tuple(sorted(set(unknown))),
                response_headers=redact_headers(
                    (bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in response_headers
                ),
                response_body=response_body.decode("utf-8", "replace"),
                response_truncated=truncated,
            )

        self.journal.defer(make)


class _Answer:
    """The status, headers and first bytes of a response, as the journal keeps them."""

    def __init__(self) -> None:
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.body = bytearray()
        self.truncated = False

    def start(self, message: Message) -> None:
        self.status = int(message["status"])
        self.raw_headers = list(message.get("headers") or [])

    def add(self, chunk: bytes) -> None:
        room = RESPONSE_BODY_LIMIT - len(self.body)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.body.extend(chunk[:room])


class FaultMiddleware:
    """Apply the first fault rule that fires for a request; otherwise pass it through."""

    def __init__(self, app: ASGIApp, faults: FaultSet) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _is_admin(scope):
            await self.app(scope, receive, send)
            return
        if not self.faults:
            await self.app(scope, receive, send)
            return
        rule = self.faults.take(str(scope.get("method", "")), str(scope.get("path", "")), lambda: sandbox_ids_in(scope))
        if rule is None:
            await self.app(scope, receive, send)
            return
        request_notes = notes(scope)
        request_notes.fault = rule.name
        if rule.sandbox_id and request_notes.sandbox_id is None:
            request_notes.sandbox_id = rule.sandbox_id  # the journal files a faulted request under its sandbox
        if rule.delay and rule.delay_phase == "before":
            await asyncio.sleep(rule.delay)
        if rule.action == "respond":
            await _respond(rule, send)
        elif rule.action == "drop":
            abort_connection(scope, receive)
        elif rule.action == "delay":
            if rule.delay_phase == "after":
                await _delayed(self.app, rule, scope, receive, send)
            else:
                await self.app(scope, receive, send)
        else:
            await self.app(scope, receive, _stream_breaker(rule, scope, receive, send))


async def _respond(rule: FaultRule, send: Send) -> None:
    payload, ctype = rule.response_bytes()
    headers = [(b"content-type", ctype.encode()), (b"content-length", str(len(payload)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in rule.headers.items()]
    await send({"type": "http.response.start", "status": rule.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _delayed(app: ASGIApp, rule: FaultRule, scope: Scope, receive: Receive, send: Send) -> None:
    held: list[Message] = []

    async def hold(message: Message) -> None:
        held.append(message)

    await app(scope, receive, hold)
    await asyncio.sleep(rule.delay)
    for message in held:
        await send(message)


def _stream_breaker(rule: FaultRule, scope: Scope, receive: Receive, send: Send) -> Send:
    chunks = 0
    broken = False

    async def breaking_send(message: Message) -> None:
        nonlocal chunks, broken
        if broken:
            return
        if message["type"] != "http.response.body":
            await send(message)
            return
        if chunks >= rule.after_chunks:
            if rule.action == "stall_stream":
                await asyncio.sleep(rule.stall_seconds)
            broken = True
            abort_connection(scope, receive)
            return
        if message.get("body"):
            chunks += 1
        await send(message)

    return breaking_send
