"""A virtual clock that drives every timeout, expiry, pending duration and `sleep` in the mocks."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Literal, NamedTuple

ClockMode = Literal["manual", "auto", "wall"]

#: 2026-01-01T00:00:00Z: a fixed, deterministic epoch for manual and auto clocks.
DEFAULT_EPOCH = 1_767_225_600.0


class _Reading(NamedTuple):
    """What the time is made of; replaced whole, so a reader never sees half an update."""

    mode: ClockMode
    start: float
    offset: float
    base_real: float

    def now(self) -> float:
        if self.mode == "wall":
            return self.start + (time.monotonic() - self.base_real) + self.offset
        return self.start + self.offset


class VirtualClock:
    """Tell the time of a mock; time moves only when told to, unless the mode says otherwise.

    Modes:
    - ``manual``: time stands still until :meth:`advance`; a sleeper blocks until then.
    - ``auto``: a sleep advances time by its own duration at once (fast, deterministic).
    - ``wall``: time follows the real clock plus the offset that :meth:`advance` adds
      (what a standalone server wants, so expiry happens on its own).

    Reading the time takes no lock: writers replace one immutable reading under the lock. Whoever must follow
    the clock outside this process (the linux runtime's ``sleep``, see ``docs/runtime.md``) registers with
    :meth:`subscribe` and is called after every set: advance, switch, reset, load.
    """

    def __init__(self, mode: ClockMode = "auto", start: float = DEFAULT_EPOCH) -> None:
        _check_mode(mode)
        self._reading = _Reading(mode, start, 0.0, time.monotonic())
        self._cond = threading.Condition()
        self._listeners: list[Callable[[VirtualClock], None]] = []

    def subscribe(self, listener: Callable[[VirtualClock], None]) -> Callable[[], None]:
        """Call ``listener(clock)`` after every set of this clock, and once now; return what unsubscribes it."""
        with self._cond:
            self._listeners.append(listener)
        listener(self)

        def unsubscribe() -> None:
            with self._cond:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _notify(self) -> None:
        """Tell the listeners the clock was set (called without the lock held)."""
        for listener in list(self._listeners):
            listener(self)

    @property
    def token(self) -> object:
        """Return an object that is replaced whenever the clock is set (advanced, switched, reset, loaded).

        A running wall clock keeps its token: a durable store rewrites the clock only when it was set.
        """
        return self._reading

    @property
    def mode(self) -> ClockMode:
        """Return the clock's mode."""
        return self._reading.mode

    def now(self) -> float:
        """Return the virtual time in epoch seconds."""
        return self._reading.now()

    def now_ms(self) -> int:
        """Return the virtual time in epoch milliseconds."""
        return int(self.now() * 1000)

    def _restart(self, mode: ClockMode, start: float) -> None:
        """Replace the reading (caller holds the lock) and wake every sleeper."""
        self._reading = _Reading(mode, start, 0.0, time.monotonic())
        self._cond.notify_all()

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` and wake every sleeper; return the new time."""
        if seconds < 0:
            raise ValueError("the clock cannot go backwards")
        with self._cond:
            self._reading = self._reading._replace(offset=self._reading.offset + seconds)
            self._cond.notify_all()
            now = self._reading.now()
        self._notify()
        return now

    def set_mode(self, mode: ClockMode) -> None:
        """Switch mode, keeping the current virtual time."""
        _check_mode(mode)
        with self._cond:
            self._restart(mode, self._reading.now())
        self._notify()

    def reset(self, start: float = DEFAULT_EPOCH) -> None:
        """Return to ``start`` and forget every advance."""
        with self._cond:
            self._restart(self._reading.mode, start)
        self._notify()

    def sleep(self, seconds: float, *, real_timeout: float | None = None) -> bool:
        """Block until ``seconds`` of virtual time pass; return False if ``real_timeout`` ran out first."""
        if seconds <= 0:
            return True
        with self._cond:
            deadline = self._reading.now() + seconds
            auto = self._reading.mode == "auto"
            if auto:
                self._reading = self._reading._replace(offset=self._reading.offset + seconds)
                self._cond.notify_all()
        if auto:
            self._notify()
            return True
        with self._cond:
            real_deadline = None if real_timeout is None else time.monotonic() + real_timeout
            while self._reading.now() < deadline:
                wait = 0.05 if self._reading.mode == "wall" else None
                if real_deadline is not None:
                    left = real_deadline - time.monotonic()
                    if left <= 0:
                        return False
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)
            return True

    async def async_sleep(self, seconds: float, *, real_timeout: float | None = None) -> bool:
        """Wait without blocking the event loop until ``seconds`` of virtual time pass."""
        if seconds <= 0:
            return True
        if self.mode == "auto":
            self.advance(seconds)
            return True
        deadline = self.now() + seconds
        real_deadline = None if real_timeout is None else time.monotonic() + real_timeout
        while self.now() < deadline:
            if real_deadline is not None and time.monotonic() >= real_deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def dump(self) -> dict[str, object]:
        """Return the clock as JSON."""
        reading = self._reading
        return {"mode": reading.mode, "now": reading.now()}

    def load(self, data: dict[str, object]) -> None:
        """Restore the clock from :meth:`dump` output."""
        mode = data.get("mode", self.mode)
        now = data.get("now", self.now())
        if mode not in ("manual", "auto", "wall") or not isinstance(now, int | float):
            raise ValueError("invalid clock state")
        with self._cond:
            self._restart(mode, float(now))
        self._notify()


def _check_mode(mode: str) -> None:
    if mode not in ("manual", "auto", "wall"):
        raise ValueError(f"unknown clock mode {mode!r}: expected manual, auto or wall")
