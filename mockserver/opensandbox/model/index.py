"""The sandbox list's indexes: every tenant's sandboxes newest first, by state and by metadata pair.

The lifecycle list filters on ``state`` (OR-ed, case-insensitive) and ``metadata`` pairs (AND-ed), newest
first, and answers one page with the total count. :class:`SandboxIndex` keeps, per tenant, sorted lists of
sort keys ``(-created_at, seq, id)`` (``seq`` is the order the sandbox entered the state, so sandboxes created
in the same instant keep their creation order, as a stable sort does): one of all the tenant's sandboxes,
one per state and one per metadata pair. A page then costs what it returns:

* no filter: a slice of the tenant's list, the total its length;
* states only: a merge of the per-state lists up to the page's end, the total the sum of their lengths;
* metadata (with or without states): a walk of the shortest matching list, checking the other conditions,
  so it costs the number of sandboxes that carry that pair, never the tenant's whole population.

The state machine (:mod:`.store`) calls :meth:`SandboxIndex.put` whenever a sandbox enters or changes and
:meth:`SandboxIndex.drop` when it goes.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from .records import SandboxRecord

__all__ = ["Page", "SandboxIndex", "SortKey"]

#: ``(-created_at, seq, id)``: ascending order is newest first, ties in creation order.
SortKey = tuple[float, int, str]


@dataclass(frozen=True)
class Page:
    """The ids on one page of a listing and how many sandboxes matched in all."""

    ids: list[str]
    total: int


@dataclass
class _Entry:
    key: SortKey
    tenant: str
    state: str
    pairs: frozenset[tuple[str, str]]


def _insert(table: dict[tuple[str, ...], list[SortKey]], name: tuple[str, ...], key: SortKey) -> None:
    bisect.insort(table.setdefault(name, []), key)


def _remove(table: dict[tuple[str, ...], list[SortKey]], name: tuple[str, ...], key: SortKey) -> None:
    keys = table.get(name)
    if keys is None:
        return
    at = bisect.bisect_left(keys, key)
    if at < len(keys) and keys[at] == key:
        del keys[at]
    if not keys:
        del table[name]


class SandboxIndex:
    """Sorted per-tenant, per-state and per-metadata-pair lists of live sandboxes (callers hold the state lock)."""

    def __init__(self) -> None:
        self._seq = itertools.count()
        self._entries: dict[str, _Entry] = {}
        self._tenants: dict[tuple[str, ...], list[SortKey]] = {}
        self._states: dict[tuple[str, ...], list[SortKey]] = {}
        self._pairs: dict[tuple[str, ...], list[SortKey]] = {}

    def clear(self) -> None:
        """Forget every sandbox."""
        self._entries.clear()
        self._tenants.clear()
        self._states.clear()
        self._pairs.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, sb: SandboxRecord) -> None:
        """Index a new sandbox, or move a known one to its current state and metadata."""
        state = sb.state.lower()
        pairs = frozenset(sb.spec.metadata.items())
        entry = self._entries.get(sb.id)
        if entry is None:
            key: SortKey = (-sb.created_at, next(self._seq), sb.id)
            entry = _Entry(key, sb.tenant, state, pairs)
            self._entries[sb.id] = entry
            _insert(self._tenants, (sb.tenant,), key)
            _insert(self._states, (sb.tenant, state), key)
            for k, v in pairs:
                _insert(self._pairs, (sb.tenant, k, v), key)
            return
        if entry.state != state:
            _remove(self._states, (entry.tenant, entry.state), entry.key)
            _insert(self._states, (entry.tenant, state), entry.key)
            entry.state = state
        if entry.pairs != pairs:
            for k, v in entry.pairs - pairs:
                _remove(self._pairs, (entry.tenant, k, v), entry.key)
            for k, v in pairs - entry.pairs:
                _insert(self._pairs, (entry.tenant, k, v), entry.key)
            entry.pairs = pairs

    def drop(self, sandbox_id: str) -> None:
        """Forget a sandbox (no-op for an unknown one)."""
        entry = self._entries.pop(sandbox_id, None)
        if entry is None:
            return
        _remove(self._tenants, (entry.tenant,), entry.key)
        _remove(self._states, (entry.tenant, entry.state), entry.key)
        for k, v in entry.pairs:
            _remove(self._pairs, (entry.tenant, k, v), entry.key)

    def page(self, tenant: str, states: Iterable[str], metadata: Mapping[str, str], start: int, size: int) -> Page:
        """Return the ids of matches ``start`` to ``start + size`` (newest first) and the number of matches."""
        wanted = {s.lower() for s in states}
        start = min(start, sys.maxsize)  # a page far past any population (islice takes no larger bound)
        end = min(start + size, sys.maxsize)
        if not metadata:
            if not wanted:
                keys = self._tenants.get((tenant,), [])
                return Page([k[2] for k in keys[start:end]], len(keys))
            lists = [self._states[(tenant, s)] for s in sorted(wanted) if (tenant, s) in self._states]
            merged: Iterator[SortKey] = lists[0].__iter__() if len(lists) == 1 else heapq.merge(*lists)
            return Page([k[2] for k in itertools.islice(merged, start, end)], sum(map(len, lists)))
        lists = []
        for k, v in metadata.items():
            found = self._pairs.get((tenant, k, v))
            if found is None:
                return Page([], 0)
            lists.append(found)
        shortest = min(lists, key=len)
        pairs = set(metadata.items())
        ids: list[str] = []
        total = 0
        for key in shortest:
            entry = self._entries[key[2]]
            if (wanted and entry.state not in wanted) or not pairs <= entry.pairs:
                continue
            if start <= total < end:
                ids.append(key[2])
            total += 1
        return Page(ids, total)
