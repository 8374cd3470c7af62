"""A virtual clock that drives every timeout, expiry, pending duration and `sleep` in the mocks."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Literal

ClockMode = Literal["manual", "auto", "wall"]

#: 2026-01-01T00:00:00Z: a fixed, deterministic epoch for manual and auto clocks.
DEFAULT_EPOCH = 1_767_225_600.0


class VirtualClock:
    """Tell the time of a mock; time moves only when told to, unless the mode says otherwise.

    Modes:
    - ``manual``: time stands still until :meth:`advance`; a sleeper blocks until then.
    - ``auto``: a sleep advances time by its own duration at once (fast, deterministic).
    - ``wall``: time follows the real clock plus the offset that :meth:`advance` adds
      (what a standalone server wants, so expiry happens on its own).
    """

    def __init__(self, mode: ClockMode = "auto", start: float = DEFAULT_EPOCH) -> None:
        if mode not in ("manual", "auto", "wall"):
            raise ValueError(f"unknown clock mode {mode!r}: expected manual, auto or wall")
        self._mode: ClockMode = mode
        self._start = start
        self._offset = 0.0
        self._base_real = time.monotonic()
        self._cond = threading.Condition()

    @property
    def mode(self) -> ClockMode:
        """Return the clock's mode."""
        return self._mode

    def now(self) -> float:
        """Return the virtual time in epoch seconds."""
        with self._cond:
            return self._now_locked()

    def now_ms(self) -> int:
        """Return the virtual time in epoch milliseconds."""
        return int(self.now() * 1000)

    def _now_locked(self) -> float:
        if self._mode == "wall":
            return self._start + (time.monotonic() - self._base_real) + self._offset
        return self._start + self._offset

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` and wake every sleeper; return the new time."""
        if seconds < 0:
            raise ValueError("the clock cannot go backwards")
        with self._cond:
            self._offset += seconds
            self._cond.notify_all()
            return self._now_locked()

    def set_mode(self, mode: ClockMode) -> None:
        """Switch mode, keeping the current virtual time."""
        if mode not in ("manual", "auto", "wall"):
            raise ValueError(f"unknown clock mode {mode!r}: expected manual, auto or wall")
        with self._cond:
            current = self._now_locked()
            self._mode = mode
            self._base_real = time.monotonic()
            self._start = current
            self._offset = 0.0
            self._cond.notify_all()

    def reset(self, start: float = DEFAULT_EPOCH) -> None:
        """Return to ``start`` and forget every advance."""
        with self._cond:
            self._start = start
            self._offset = 0.0
            self._base_real = time.monotonic()
            self._cond.notify_all()

    def sleep(self, seconds: float, *, real_timeout: float | None = None) -> bool:
        """Block until ``seconds`` of virtual time pass; return False if ``real_timeout`` ran out first."""
        if seconds <= 0:
            return True
        with self._cond:
            deadline = self._now_locked() + seconds
            if self._mode == "auto":
                self._offset += seconds
                self._cond.notify_all()
                return True
            real_deadline = None if real_timeout is None else time.monotonic() + real_timeout
            while self._now_locked() < deadline:
                wait = 0.05 if self._mode == "wall" else None
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
        if self._mode == "auto":
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
        return {"mode": self._mode, "now": self.now()}

    def load(self, data: dict[str, object]) -> None:
        """Restore the clock from :meth:`dump` output."""
        mode = data.get("mode", self._mode)
        now = data.get("now", self.now())
        if mode not in ("manual", "auto", "wall") or not isinstance(now, int | float):
            raise ValueError("invalid clock state")
        with self._cond:
            self._mode = mode
            self._start = float(now)
            self._offset = 0.0
            self._base_real = time.monotonic()
            self._cond.notify_all()
