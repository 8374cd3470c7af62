"""Which records changed since the state was last written: what a durable store writes for one request.

A model store owns a :class:`ChangeLog`. When a rule changes a record, the store bumps the record's
revision and marks the record's key ``(kind, id)``; when the whole state is replaced (reset, restore, load)
it marks everything. A durable store (:mod:`mockserver.state_db`) enables the log, takes the marked keys
before a response goes out and writes those records, and only those, in one transaction.

Without a durable store the log stays disabled: marking is one attribute test and the set stays empty, so
the in-memory default does no work for it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ChangeLog", "Key", "Persistent", "Row", "Taken"]

#: A record's key: its kind (``"sandbox"``, ``"snapshot"``, ...) and its id.
Key = tuple[str, str]


@dataclass(frozen=True)
class Row:
    """One record as a durable store keeps it: its key and its JSON form (None: the record is gone)."""

    kind: str
    key: str
    body: Any


@dataclass(frozen=True)
class Taken:
    """What changed since the last take: every record (``everything``) or the marked keys."""

    everything: bool
    keys: frozenset[Key]

    def __bool__(self) -> bool:
        return self.everything or bool(self.keys)


class ChangeLog:
    """Collect the keys of changed records while a durable store is attached; thread-safe."""

    __slots__ = ("_everything", "_keys", "_lock", "enabled")

    def __init__(self) -> None:
        self.enabled = False
        self._keys: set[Key] = set()
        self._everything = False
        self._lock = threading.Lock()

    def mark(self, kind: str, key: str) -> None:
        """Note that record ``(kind, key)`` changed (or appeared, or went away)."""
        if self.enabled:
            with self._lock:
                self._keys.add((kind, key))

    def mark_all(self) -> None:
        """Note that the whole state was replaced."""
        if self.enabled:
            with self._lock:
                self._everything = True
                self._keys.clear()

    def pending(self) -> bool:
        """Tell whether anything was marked since the last :meth:`take`."""
        return self._everything or bool(self._keys)

    def take(self) -> Taken:
        """Return what was marked and start afresh."""
        with self._lock:
            taken = Taken(self._everything, frozenset(self._keys))
            self._keys = set()
            self._everything = False
        return taken

    def give_back(self, taken: Taken) -> None:
        """Mark again what a failed write took, so the next write retries it."""
        with self._lock:
            self._everything = self._everything or taken.everything
            if not self._everything:
                self._keys |= taken.keys


class Persistent(Protocol):
    """A model store a durable store can keep: its change log, its records by key, all of them, and a load."""

    changes: ChangeLog

    def rows(self, keys: Iterable[Key]) -> Iterator[Row]:
        """Return the current form of each record in ``keys`` (body None for one that is gone)."""
        ...

    def all_rows(self) -> Iterator[Row]:
        """Return every record, in the order a load must see them."""
        ...

    def load_rows(self, rows: Iterable[Row]) -> None:
        """Replace the state with ``rows`` (as :meth:`all_rows` returned them); ValueError when malformed."""
        ...

    def touched(self, sandbox_id: str) -> None:
        """Mark a sandbox a request may have changed where no rule of the store saw it (files, commands)."""
        ...
