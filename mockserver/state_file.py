"""Keep the mocks' state in a JSON file across restarts, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mockserver.core import MockCore


def load_state(path: Path, mocks: Mapping[str, MockCore]) -> bool:
    """Restore each mock from ``path`` if it exists; return whether anything was loaded."""
    if not path.exists():
        return False
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a sandproof state object")
    for name, mock in mocks.items():
        if name in data:
            mock.restore(data[name])
    return True


def save_state(path: Path, mocks: Mapping[str, MockCore]) -> None:
    """Write every mock's snapshot to ``path`` atomically (temp file, fsync, rename)."""
    payload: dict[str, Any] = {name: mock.snapshot() for name, mock in mocks.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class StateSaver:
    """Save the mocks' state periodically while their journals move, and once more on stop."""

    def __init__(self, path: Path, mocks: Mapping[str, MockCore], interval: float = 1.0) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.path = path
        self.mocks = mocks
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sandproof-state", daemon=True)
        self._last: tuple[int, ...] = tuple(_last_seq(m) for m in mocks.values())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.save_if_changed()

    def save_if_changed(self) -> bool:
        """Save if a request arrived since the last save; return whether it saved."""
        marker = tuple(_last_seq(m) for m in self.mocks.values())
        if marker == self._last:
            return False
        save_state(self.path, self.mocks)
        self._last = marker
        return True

    def start(self) -> None:
        """Start saving in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread and save a final time."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        save_state(self.path, self.mocks)


def _last_seq(mock: MockCore) -> int:
    entries = mock.journal.entries()
    return entries[-1].seq if entries else 0
