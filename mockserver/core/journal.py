"""A bounded request journal with filters and assertion helpers."""

from __future__ import annotations

import collections
import fnmatch
import itertools
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

BODY_LIMIT = 64 * 1024


@dataclass(frozen=True)
class JournalEntry:
    """One request a mock received and how it answered."""

    seq: int
    time: float
    provider: str
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: str
    status: int
    tenant: str | None = None
    sandbox_id: str | None = None
    fault: str | None = None
    unknown_fields: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the entry as JSON."""
        data = asdict(self)
        data["unknown_fields"] = list(self.unknown_fields)
        return data


@dataclass
class RequestNotes:
    """What a route learnt about a request, for the journal to record."""

    tenant: str | None = None
    sandbox_id: str | None = None
    fault: str | None = None
    unknown_fields: list[str] = field(default_factory=list)


class JournalAssertionError(AssertionError):
    """Raise when the journal does not show what a test expected."""


class Journal:
    """Keep the last ``maxlen`` requests and answer questions about them."""

    def __init__(self, maxlen: int = 10_000) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        self._entries: collections.deque[JournalEntry] = collections.deque(maxlen=maxlen)
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def next_seq(self) -> int:
        """Return the next sequence number."""
        with self._lock:
            return next(self._seq)

    def record(self, entry: JournalEntry) -> None:
        """Append ``entry``, dropping the oldest beyond the bound."""
        with self._lock:
            self._entries.append(entry)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def entries(
        self,
        *,
        method: str | None = None,
        path: str | None = None,
        sandbox_id: str | None = None,
        status: int | None = None,
        provider: str | None = None,
    ) -> list[JournalEntry]:
        """Return the entries matching every given filter; ``path`` is a glob."""
        with self._lock:
            items = list(self._entries)
        return [e for e in items if _matches(e, method, path, sandbox_id, status, provider)]

    def calls(self) -> list[str]:
        """Return ``"METHOD /path"`` for every entry, oldest first."""
        return [f"{e.method} {e.path}" for e in self.entries()]

    def unknown_fields(self) -> dict[str, list[str]]:
        """Return, per ``"METHOD /path"``, the request fields the mock did not recognise."""
        found: dict[str, set[str]] = collections.defaultdict(set)
        for e in self.entries():
            if e.unknown_fields:
                found[f"{e.method} {e.path}"].update(e.unknown_fields)
        return {k: sorted(v) for k, v in sorted(found.items())}

    def assert_called(self, method: str, path: str, *, times: int | None = None) -> list[JournalEntry]:
        """Fail unless ``method path`` was called (exactly ``times`` times if given)."""
        hits = self.entries(method=method, path=path)
        if times is None and not hits:
            raise JournalAssertionError(f"{method} {path} was never called; calls: {self.calls()}")
        if times is not None and len(hits) != times:
            raise JournalAssertionError(f"{method} {path} called {len(hits)} times, expected {times}")
        return hits

    def assert_not_called(self, method: str, path: str) -> None:
        """Fail if ``method path`` was called."""
        self.assert_called(method, path, times=0)

    def assert_order(self, expected: Sequence[tuple[str, str]]) -> None:
        """Fail unless the ``(method, path-glob)`` calls appear in this order (others may interleave)."""
        calls = iter(self.entries())
        for method, path in expected:
            if not any(_matches(e, method, path, None, None, None) for e in calls):
                raise JournalAssertionError(
                    f"{method} {path} not found in order {list(expected)}; calls: {self.calls()}"
                )

    def to_json(self, entries: Iterable[JournalEntry] | None = None) -> list[dict[str, Any]]:
        """Return entries (all by default) as JSON."""
        return [e.to_json() for e in (self.entries() if entries is None else entries)]


def _matches(
    entry: JournalEntry,
    method: str | None,
    path: str | None,
    sandbox_id: str | None,
    status: int | None,
    provider: str | None,
) -> bool:
    return (
        (method is None or entry.method == method.upper())
        and (path is None or fnmatch.fnmatchcase(entry.path, path))
        and (sandbox_id is None or entry.sandbox_id == sandbox_id)
        and (status is None or entry.status == status)
        and (provider is None or entry.provider == provider)
    )
