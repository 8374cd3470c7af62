"""When each record next changes on its own: a heap of due times, so settling costs what is due.

A model store keeps one :class:`DueTimes`. Whenever a rule changes a record, the store computes the
record's next due time (a pending transition, an expiry, a timeout) and hands it to
:meth:`DueTimes.schedule`; settling the clock asks :meth:`DueTimes.pop_due` for the keys whose time has
come. A record keeps one due time: scheduling it again supersedes the earlier entry, which stays in the
heap and is skipped when it comes up, so rescheduling costs one push and never a search.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Generic, TypeVar

__all__ = ["DueTimes", "settle_due"]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


class DueTimes(Generic[K]):
    """Each key's next due time, in a heap ordered by time (ties in scheduling order); not thread-safe."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._seq = itertools.count()

    def schedule(self, key: K, due: float | None, now: float | None = None) -> None:
        """Make ``due`` the next due time of ``key``; None (or a time not after ``now``) unschedules it.

        Scheduling the time already held changes nothing.
        """
        if due is None or (now is not None and due <= now):
            self._due.pop(key, None)
            return
        if self._due.get(key) == due:
            return
        self._due[key] = due
        heapq.heappush(self._heap, (due, next(self._seq), key))

    def pop_due(self, now: float) -> Iterator[K]:
        """Yield, earliest first, each key whose due time is not after ``now``, unscheduling it as it goes.

        A key scheduled again while the iteration runs is yielded again if its new time is due too.
        """
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, _, key = heapq.heappop(heap)
            if self._due.get(key) != at:
                continue  # superseded by a later schedule of the same key, or unscheduled
            del self._due[key]
            yield key

    def due_at(self, key: K) -> float | None:
        """Return the due time ``key`` holds, or None."""
        return self._due.get(key)

    def discard(self, key: K) -> None:
        """Unschedule ``key`` (nothing when it holds no due time)."""
        self._due.pop(key, None)

    def clear(self) -> None:
        """Unschedule every key."""
        self._heap.clear()
        self._due.clear()

    def __len__(self) -> int:
        """Return how many keys hold a due time."""
        return len(self._due)


def settle_due(
    due: DueTimes[K],
    now: float,
    records: Mapping[K, R],
    settle: Callable[[R, float], None],
    reschedule: Callable[[R, float], None],
) -> None:
    """Settle every record whose due time has come by ``now``, and queue the next time of each that remains.

    What both providers' stores do when the clock is read (the caller holds the store's lock): a key whose
    record is gone is skipped; ``settle`` applies what is due (and may remove the record).
    """
    for key in due.pop_due(now):
        record = records.get(key)
        if record is None:
            continue
        settle(record, now)
        if key in records:
            reschedule(record, now)
