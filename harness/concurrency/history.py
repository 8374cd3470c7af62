"""Concurrent histories: operations with their invocation and response times, recorded from many threads.

A client calls :meth:`History.invoke` just before it sends a request and :meth:`History.complete` (or
:meth:`History.lose`, when no answer came) just after the answer arrived. Times are
``time.monotonic_ns()`` readings: one clock for every thread of the process, so "A returned before B was
invoked" means the same thing across clients, and each client's own readings never go back (checked).

An operation's ``input`` and ``output`` are hashable, JSON-able values (strings, numbers, None, tuples of
them) chosen by the provider adapters; the checker compares outputs for equality and memoises on inputs.
A lost operation (``ret is None``) may or may not have taken effect; the checker lets it take effect at any
point after its invocation, with any output.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["History", "Operation", "Pending", "dump_operations", "keys_of", "ms"]


@dataclass(frozen=True)
class Operation:
    """One request of one client: what it asked, what it saw, and when (monotonic nanoseconds).

    ``key`` is the object the operation is about (a sandbox id on the target), None for an operation that
    spans objects (a list) until it is projected per object. ``ret`` is None when no answer came.
    """

    id: int
    client: int
    kind: str
    key: str | None
    input: Hashable
    output: Hashable
    call: int
    ret: int | None

    @property
    def lost(self) -> bool:
        """Tell whether the operation got no answer (it may or may not have taken effect)."""
        return self.ret is None

    def with_key(self, key: str, output: Hashable, ident: int) -> Operation:
        """Return this operation seen from one object: its ``key``, the part of the output about it, a new id."""
        return replace(self, id=ident, key=key, output=output)

    def to_json(self, origin: int = 0) -> dict[str, Any]:
        """Return the operation as JSON, times in milliseconds since ``origin``."""
        return {
            "id": self.id,
            "client": self.client,
            "kind": self.kind,
            "key": self.key,
            "input": _jsonable(self.input),
            "output": _jsonable(self.output),
            "invoked_ms": ms(self.call - origin),
            "returned_ms": None if self.ret is None else ms(self.ret - origin),
        }


@dataclass(frozen=True)
class Pending:
    """An invoked operation waiting for its answer (the token :meth:`History.invoke` returns)."""

    id: int
    client: int
    kind: str
    key: str | None
    input: Hashable
    call: int


@dataclass
class History:
    """A thread-safe record of the operations every client invoked and what they saw."""

    started: int = field(default_factory=time.monotonic_ns)
    _operations: list[Operation] = field(default_factory=list)
    _last: dict[int, int] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _now(self, client: int) -> int:
        """Return the time now, checking that ``client``'s readings never go back."""
        now = time.monotonic_ns()
        with self._lock:
            if now < self._last.get(client, 0):
                raise RuntimeError(f"client {client}: the monotonic clock went back")
            self._last[client] = now
        return now

    def invoke(self, client: int, kind: str, input: Hashable, key: str | None = None) -> Pending:
        """Note that ``client`` is about to send an operation; return the token to complete it with."""
        with self._lock:
            ident = next(self._ids)
        return Pending(ident, client, kind, key, input, self._now(client))

    def complete(self, pending: Pending, output: Hashable, key: str | None = None) -> Operation:
        """Record the answer of ``pending`` (``key`` names the object when only the answer tells it)."""
        ret = self._now(pending.client)
        op = Operation(
            pending.id, pending.client, pending.kind, key or pending.key, pending.input, output, pending.call, ret
        )
        with self._lock:
            self._operations.append(op)
        return op

    def lose(self, pending: Pending) -> Operation:
        """Record that ``pending`` got no answer (a transport error or timeout)."""
        op = Operation(pending.id, pending.client, pending.kind, pending.key, pending.input, None, pending.call, None)
        with self._lock:
            self._operations.append(op)
        return op

    def operations(self) -> list[Operation]:
        """Return every recorded operation, in invocation order."""
        with self._lock:
            return sorted(self._operations, key=lambda op: (op.call, op.id))

    def __len__(self) -> int:
        with self._lock:
            return len(self._operations)

    def to_json(self) -> dict[str, Any]:
        """Return the history as JSON (times in milliseconds since the history started)."""
        return {"operations": dump_operations(self.operations(), self.started)}


def dump_operations(operations: Iterable[Operation], origin: int) -> list[dict[str, Any]]:
    """Return operations as JSON, times in milliseconds since ``origin``."""
    return [op.to_json(origin) for op in operations]


def ms(nanoseconds: int) -> float:
    """Return nanoseconds as milliseconds rounded to the microsecond."""
    return round(nanoseconds / 1e6, 3)


def _jsonable(value: Any) -> Any:
    """Return ``value`` with tuples as lists (JSON has no tuples)."""
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


def keys_of(operations: Sequence[Operation]) -> list[str]:
    """Return the distinct keys of ``operations``, in order of first appearance."""
    return list(dict.fromkeys(op.key for op in operations if op.key is not None))
