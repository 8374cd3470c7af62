"""Deliberately wrong mocks the concurrency contract must reject: each is right one request at a time.

Every mutant is the real mock with an ASGI wrapper around its app; nothing inside the mock changes.

- :class:`StaleGetTensorLake` answers ``GET /sandboxes/{id}`` from a cache up to 50 ms stale.
- :class:`TwoStepPatchTensorLake` applies a PATCH that replaces the policy in two steps: the new
  ``allow_out`` (with the old ``deny_out``) first, the whole new policy 20 ms later, and answers only then, so
  a client that waits for its own answer never sees the half-applied policy; a concurrent GET does.
- :class:`StaleEgressOpenSandbox` answers the egress sidecar's ``GET /policy`` from a cache up to 50 ms stale.
- :class:`LostUpdateEgressOpenSandbox` merges egress rules by reading the policy, waiting 10 ms and writing the
  merge back (read-modify-write): of two concurrent merges, one is lost.

Importing this module registers them with :mod:`harness.reporting.mutation` as suite ``concurrency``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, ClassVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.opensandbox import NetworkPolicy, PolicyError, merge_rules, parse_rules
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock
from tests.mutants.asgi_body import read_request
from tests.mutants.naming import mutant_name, register_classes

SUITE = "concurrency"
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


# --- ASGI building blocks ------------------------------------------------------------------------------------


async def call(app: ASGIApp, scope: Scope, method: str, body: bytes = b"") -> Answer:
    """Send one request to ``app`` with the headers of ``scope``; return its status, headers and body."""
    headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length", b"content-type")]
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    sub = {**scope, "method": method, "headers": headers}
    delivered = False
    status, answer_headers, chunks = 500, [], []

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # no disconnect: the caller is still there
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, answer_headers
        if message["type"] == "http.response.start":
            status, answer_headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(sub, receive, send)
    return status, answer_headers, b"".join(chunks)


async def answer(send: Send, reply: Answer) -> None:
    """Send a buffered answer."""
    status, headers, body = reply
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class StaleGetCache:
    """Answer GETs of matching paths from a cache while the cached answer is younger than ``max_age`` seconds."""

    def __init__(self, app: ASGIApp, path: re.Pattern[str], max_age: float = 0.05) -> None:
        self.app = app
        self.path = path
        self.max_age = max_age
        self.cache: dict[tuple[str, bytes], tuple[float, Answer]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not self.path.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        key = (scope["path"], dict(scope["headers"]).get(b"authorization", b""))
        cached = self.cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < self.max_age:
            await answer(send, cached[1])
            return
        fetched = time.monotonic()
        reply = await call(self.app, scope, "GET")
        if reply[0] == 200:
            self.cache[key] = (fetched, reply)
        await answer(send, reply)


class TwoStepPatch:
    """Apply a TensorLake policy replacement as two PATCHes (allow_out first, deny_out ``delay`` seconds later)."""

    def __init__(self, app: ASGIApp, delay: float = 0.02) -> None:
        self.app = app
        self.delay = delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "PATCH" or not _SANDBOX.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        raw = await read_request(receive)
        body = _json(raw)
        wanted = body.get("network") if isinstance(body, dict) else None
        if isinstance(wanted, dict):
            status, _, current = await call(self.app, scope, "GET")
            policy = _json(current).get("network_policy") if status == 200 else None
            old_deny = policy.get("deny_out", []) if isinstance(policy, dict) else []
            first = {**body, "network": {**wanted, "deny_out": old_deny}}
            step = await call(self.app, scope, "PATCH", json.dumps(first).encode())
            if step[0] != 200:
                await answer(send, step)
                return
            await asyncio.sleep(self.delay)
        await answer(send, await call(self.app, scope, "PATCH", raw))


class ReadModifyWriteMerge:
    """Merge OpenSandbox egress rules by GET, a ``delay``, and PUT of the merge (one of two concurrent merges is lost).

    A body the real route rejects goes to the real route, so one request at a time it answers as the mock does.
    """

    def __init__(self, app: ASGIApp, delay: float = 0.01) -> None:
        self.app = app
        self.delay = delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "PATCH" or not _EGRESS.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        raw = await read_request(receive)
        rules = _json(raw)
        status, _, current = await call(self.app, scope, "GET")
        if status != 200 or not isinstance(rules, list) or not rules:  # the real route answers these
            await answer(send, await call(self.app, scope, "PATCH", raw))
            return
        try:
            seen = _json(current).get("policy")
            merged = merge_rules(NetworkPolicy.from_json(seen) if isinstance(seen, dict) else None, parse_rules(rules))
        except (PolicyError, AttributeError, TypeError):
            await answer(send, await call(self.app, scope, "PATCH", raw))
            return
        await asyncio.sleep(self.delay)
        await answer(send, await call(self.app, scope, "PUT", json.dumps(merged.to_json()).encode()))


_SANDBOX = re.compile(r"^/sandboxes/[^/]+$")
_EGRESS = re.compile(r"^/direct/[^/]+/18080/policy$")


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw.strip() else None
    except ValueError:
        return None


# --- the mutants ---------------------------------------------------------------------------------------------


class StaleGetTensorLake(TensorLakeMock):
    """A TensorLake mock whose ``GET /sandboxes/{id}`` answers come from a cache up to 50 ms stale."""

    defect: ClassVar[str] = "GET answers from a 50 ms cache"
    contract: ClassVar[str] = "tensorlake_linearizable"

    def build_app(self) -> ASGIApp:
        """Put the stale cache in front of the real app."""
        return StaleGetCache(super().build_app(), _SANDBOX, max_age=0.05)


class TwoStepPatchTensorLake(TensorLakeMock):
    """A TensorLake mock that applies a policy replacement in two steps, 20 ms apart, answering after both."""

    defect: ClassVar[str] = "PATCH network applied in two steps (allow_out, then deny_out)"
    contract: ClassVar[str] = "tensorlake_linearizable"

    def build_app(self) -> ASGIApp:
        """Put the two-step PATCH in front of the real app."""
        return TwoStepPatch(super().build_app(), delay=0.02)


class StaleEgressOpenSandbox(OpenSandboxMock):
    """An OpenSandbox mock whose egress sidecar answers ``GET /policy`` from a cache up to 50 ms stale."""

    defect: ClassVar[str] = "egress GET /policy answers from a 50 ms cache"
    contract: ClassVar[str] = "opensandbox_linearizable"

    def build_app(self) -> ASGIApp:
        """Put the stale cache in front of the real app."""
        return StaleGetCache(super().build_app(), _EGRESS, max_age=0.05)


class LostUpdateEgressOpenSandbox(OpenSandboxMock):
    """An OpenSandbox mock whose egress merge is a read-modify-write 10 ms long (concurrent merges lose one)."""

    defect: ClassVar[str] = "egress PATCH /policy merges by read, wait, write"
    contract: ClassVar[str] = "opensandbox_linearizable"

    def build_app(self) -> ASGIApp:
        """Put the read-modify-write merge in front of the real app."""
        return ReadModifyWriteMerge(super().build_app(), delay=0.01)


MUTANTS: tuple[type[TensorLakeMock] | type[OpenSandboxMock], ...] = (
    StaleGetTensorLake,
    TwoStepPatchTensorLake,
    StaleEgressOpenSandbox,
    LostUpdateEgressOpenSandbox,
)


register_classes(SUITE, MUTANTS)

__all__ = [
    "MUTANTS",
    "SUITE",
    "LostUpdateEgressOpenSandbox",
    "ReadModifyWriteMerge",
    "StaleEgressOpenSandbox",
    "StaleGetCache",
    "StaleGetTensorLake",
    "TwoStepPatch",
    "TwoStepPatchTensorLake",
    "mutant_name",
]
