"""The JSON state file of earlier versions: every mock's snapshot in one object, written atomically.

``sandproof serve --state-file`` now keeps its state in SQLite (:mod:`mockserver.state_db`), which imports a
file of this format on start; :func:`save_state` still writes one (an export of every mock at once).
"""

from __future__ import annotations

import json
import os
import tempfile
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
