"""Seedable identifier factory, so a seeded mock hands out the same ids on every run."""

from __future__ import annotations

import random
import string
import threading
from typing import Any

LOWER_ALNUM = string.ascii_lowercase + string.digits


class IdFactory:
    """Make identifiers from a seeded random source."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._seed = seed
        #: Counts the draws and reseeds.
        self.draws = 0
        self._reseeds = 0

    def seed(self, seed: int | None) -> None:
        """Restart the sequence from ``seed`` (None: unpredictable)."""
        with self._lock:
            self._seed = seed
            self._rng = random.Random(seed)
            self.draws += 1
            self._reseeds += 1

    def token(self, length: int = 21, alphabet: str = LOWER_ALNUM) -> str:
        """Return a random string of ``length`` characters from ``alphabet``."""
        with self._lock:
            self.draws += 1
            return "".join(self._rng.choices(alphabet, k=length))

    def uuid4(self) -> str:
        """Return a UUID4 string drawn from the seeded source."""
        return _dashed(self.uuid4_hex())

    def uuid4_hex(self) -> str:
        """Return a UUID4 as 32 hex digits (the same draw :meth:`uuid4` makes, without the dashes)."""
        with self._lock:
            self.draws += 1
            bits = self._rng.getrandbits(128)
        return "%032x" % (bits & _UUID_CLEAR | _UUID_SET)

    def random(self) -> float:
        """Return a float in [0, 1) from the seeded source."""
        with self._lock:
            self.draws += 1
            return self._rng.random()

    def dump(self) -> dict[str, Any]:
        """Return the seed and, for a seeded factory, where its sequence stands (JSON)."""
        with self._lock:
            if self._seed is None:
                return {"seed": None}
            version, internal, gauss = self._rng.getstate()
            return {"seed": self._seed, "state": [version, list(internal), gauss]}

    def load(self, data: dict[str, Any]) -> None:
        """Continue the sequence :meth:`dump` described (a seeded one where it stood); ValueError when malformed."""
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError("invalid id generator state")
        rng = random.Random(seed)
        state = data.get("state")
        if seed is not None and state is not None:
            try:
                rng.setstate((int(state[0]), tuple(int(x) for x in state[1]), state[2]))
            except (TypeError, ValueError, IndexError) as exc:
                raise ValueError(f"invalid id generator state: {exc}") from exc
        with self._lock:
            self._seed, self._rng = seed, rng
            self.draws += 1
            self._reseeds += 1

    @property
    def version(self) -> int:
        """Return a number that changes whenever :meth:`dump` would (an unseeded draw changes nothing)."""
        return self.draws if self._seed is not None else -self._reseeds


#: RFC 4122 version 4: clear the version and variant bits, then set version 4 and variant 10.
_UUID_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID_SET = (4 << 76) | (0x8000 << 48)


def _dashed(hexed: str) -> str:
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"
