"""Seedable identifier factory, so a seeded mock hands out the same ids on every run."""

from __future__ import annotations

import random
import string
import threading
import uuid

LOWER_ALNUM = string.ascii_lowercase + string.digits


class IdFactory:
    """Make identifiers from a seeded random source."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._seed = seed

    def seed(self, seed: int | None) -> None:
        """Restart the sequence from ``seed`` (None: unpredictable)."""
        with self._lock:
            self._seed = seed
            self._rng = random.Random(seed)

    def token(self, length: int = 21, alphabet: str = LOWER_ALNUM) -> str:
        """Return a random string of ``length`` characters from ``alphabet``."""
        with self._lock:
            return "".join(self._rng.choices(alphabet, k=length))

    def uuid4(self) -> str:
        """Return a UUID4 string drawn from the seeded source."""
        with self._lock:
            return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def random(self) -> float:
        """Return a float in [0, 1) from the seeded source."""
        with self._lock:
            return self._rng.random()
