"""Sandboxes started ahead of demand, so that creating one is mostly a hand-over.

Most of a sandbox's start is bubblewrap and the interpreter of its init (tens of milliseconds); a
:class:`WarmPool` keeps ``size`` generic sandboxes (open egress, no limits) running, made by a background
thread, and :meth:`WarmPool.take` hands one over. While ``room`` says the process has no room for another
sandbox (file descriptors), the pool waits instead of building. When none is ready but one is being made, ``take``
waits for it rather than starting a second start that would compete for the same CPU. The runtime then
renames its folder, gives it its id, hostname and env, and applies limits and egress.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from .sandbox import LinuxSandbox

__all__ = ["WarmPool"]


class WarmPool:
    """A background-filled stock of started sandboxes; ``size=0`` keeps none."""

    def __init__(self, build: Callable[[], LinuxSandbox], size: int, room: Callable[[], bool] | None = None) -> None:
        self.size = max(0, size)
        self._build = build
        self._room = room or (lambda: True)
        self._ready: list[LinuxSandbox] = []
        self._building = False
        self._closed = False
        self.failures = 0
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._fill, name="sandproof-linux-pool", daemon=True)
        if self.size:
            self._thread.start()

    def take(self, wait: float = 10.0) -> LinuxSandbox | None:
        """Return a started sandbox, waiting for one being made; None when the pool has none coming."""
        with self._cond:
            self._cond.wait_for(lambda: self._ready or not self._building or self._closed, wait)
            if self._closed or not self._ready:
                return None
            sandbox = self._ready.pop(0)
            self._cond.notify_all()
            return sandbox

    def _fill(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or len(self._ready) < self.size)
                if self._closed:
                    return
                if not self._room():
                    self._cond.wait(1.0)
                    continue
                self._building = True
            try:
                sandbox = self._build()
            except Exception:
                with self._cond:
                    self.failures += 1
                    self._building = False
                    self._cond.notify_all()
                    if self.failures >= 3:  # a machine that cannot start sandboxes: stop trying
                        return
                    self._cond.wait(0.5)
                continue
            with self._cond:
                self._building = False
                keep = not self._closed
                if keep:
                    self._ready.append(sandbox)
                self._cond.notify_all()
            if not keep:
                sandbox.destroy()
                return

    def close(self) -> None:
        """Stop filling and destroy the sandboxes still in stock."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        with self._cond:
            ready, self._ready = self._ready, []
        for sandbox in ready:
            with contextlib.suppress(Exception):
                sandbox.destroy()
