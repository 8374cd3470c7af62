"""How many live sandboxes a server holds at once: the one rule both providers' creates consult.

A :class:`Capacity` is shared by every mock of one server (``sandproof serve`` gives both mocks the same
one): each model registers a function counting its live sandboxes, and a create is admitted only while the
total is below ``limit`` (``--max-sandboxes``; None: no limit) and the runtime says it has room (the linux
runtime: file descriptors left, see :mod:`mockserver.linux.fdlimit`). A refused create is answered with the
provider's capacity error, worded by the provider's model; nothing is stored for it but what the provider
keeps of a failed create.

The counting functions are called without the counted model's lock (a create holds its own model's lock
while it asks, and the two models must never wait for each other), so each reads a snapshot of its records.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["Capacity"]


class Capacity:
    """The server-wide cap on live sandboxes; thread-safe."""

    def __init__(self, limit: int | None = None, room: Callable[[], bool] | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("the sandbox limit must be 0 or more")
        self.limit = limit
        self._room = room
        self._counts: list[Callable[[], int]] = []
        self._lock = threading.Lock()

    def register(self, count: Callable[[], int]) -> None:
        """Add a model's count of its live sandboxes (called without that model's lock)."""
        with self._lock:
            self._counts.append(count)

    def set_room(self, room: Callable[[], bool]) -> None:
        """Let the runtime say whether it can hold one more sandbox (the linux runtime's fd headroom).

        The first one given stays: the mocks of one process share one descriptor budget, so they give the same.
        """
        if self._room is None:
            self._room = room

    def live(self) -> int:
        """Return how many live sandboxes the registered models hold together."""
        with self._lock:
            counts = list(self._counts)
        return sum(count() for count in counts)

    def admits(self) -> bool:
        """Tell whether one more sandbox may be created now."""
        if self.limit is not None and self.live() >= self.limit:
            return False
        return self._room is None or self._room()

    def describe(self) -> str:
        """Return the refusal's wording: what is full."""
        if self.limit is not None and self.live() >= self.limit:
            return f"the server holds its maximum of {self.limit} live sandboxes"
        return "the sandbox runtime has no room for another sandbox (file descriptors)"
