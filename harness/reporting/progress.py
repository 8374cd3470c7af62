"""What a long contract run is doing right now, for the progress line ``sandproof check`` prints.

A Hypothesis run can be silent for minutes, most of all while it shrinks a failure. :data:`PROGRESS` is
told when a contract test starts and ends (by the plugin), when an example starts (by the machine runner)
and when a check fails (by :class:`~harness.machines.common.ContractViolation`); :class:`Ticker` prints
:meth:`Progress.line` every few seconds while a test runs longer than that.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["PROGRESS", "Progress", "Ticker"]


class Progress:
    """The running contract test: its label, examples so far, and whether it is shrinking a failure."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.label: str | None = None
        self.started = 0.0
        self.examples = 0
        self.shrinking = False

    def start(self, label: str) -> None:
        """A contract test begins."""
        with self._lock:
            self.label, self.started, self.examples, self.shrinking = label, self._clock(), 0, False

    def stop(self) -> None:
        """The contract test ended."""
        with self._lock:
            self.label = None

    def example(self) -> None:
        """One more generated example (a state-machine program, a property input) has started."""
        with self._lock:
            self.examples += 1

    def failure(self) -> None:
        """A check failed: from now on Hypothesis shrinks the failing example."""
        with self._lock:
            self.shrinking = self.label is not None

    def line(self) -> str | None:
        """Return the progress line, or None when no contract test runs."""
        with self._lock:
            if self.label is None:
                return None
            elapsed = self._clock() - self.started
            what = "shrinking a failure…" if self.shrinking else "running"
            return f"sandproof: {self.label}: {what} {self.examples} examples so far, {elapsed:.0f} s"


#: The one progress record of this process (contract tests run one at a time).
PROGRESS = Progress()


class Ticker:
    """Print ``progress.line()`` through ``write`` every ``interval`` seconds while a line is there."""

    def __init__(self, write: Callable[[str], None], interval: float, progress: Progress = PROGRESS) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self._write = write
        self._interval = interval
        self._progress = progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sandproof-progress", daemon=True)

    def start(self) -> Ticker:
        """Start ticking in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop ticking."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            line = self._progress.line()
            if line is not None:
                self._write(line)
