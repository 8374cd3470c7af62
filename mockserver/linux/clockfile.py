"""The mock's virtual clock, as the sandboxes of the linux runtime read it.

A real program's ``sleep`` waits on the kernel's clock, which the mock cannot move. So each sandbox's
``/usr/bin/sleep`` is a small shell script (``standalone/sleep.sh``) that, under the ``manual`` clock,
waits for the mock's time instead: it reads ``/.sandproof/clock`` (``"MODE NOW_MS"``), which
:class:`ClockFile` rewrites after every set of the clock (advance, switch, reset, load). One advance that
crosses a sleeper's deadline releases it within one poll (20 ms). Under ``auto`` and ``wall`` the script is
the real ``sleep``. What does not go through ``sleep`` (``time.sleep`` in Python, ``read -t``,
``timeout``) keeps the kernel's clock: ``docs/runtime.md`` says so.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from mockserver.core.clock import VirtualClock

__all__ = ["ClockFile"]


class ClockFile:
    """Keep ``path`` holding ``"MODE NOW_MS"`` of ``clock`` from now on; :meth:`close` to stop."""

    def __init__(self, path: Path, clock: VirtualClock) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._written: tuple[str, int] | None = None
        self._closed = False
        self._unsubscribe: Callable[[], None] = clock.subscribe(self._write)

    def _write(self, clock: VirtualClock) -> None:
        """Replace the file whole (a reader never sees half a line) when the reading changed."""
        reading = (clock.mode, int(clock.now() * 1000))
        with self._lock:
            if self._closed or reading == self._written:
                return
            partial = self.path.with_name(f".{self.path.name}.{threading.get_ident()}")
            try:
                partial.write_text(f"{reading[0]} {reading[1]}\n", encoding="ascii")
                os.chmod(partial, 0o644)
                os.replace(partial, self.path)
            except OSError:
                return  # the runtime is being torn down; sleepers fall back to the real sleep
            self._written = reading

    def close(self) -> None:
        """Stop following the clock and remove the file (every ``sleep`` is the real one again)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(OSError):
                self.path.unlink()
        self._unsubscribe()
