"""``MockCore``: the state every mock shares (clock, faults, journal, ids, DNS) and its whole-state verbs.

No HTTP here. The provider mocks add their state model through the three abstract hooks; the HTTP layer
(:class:`mockserver.service.HttpMock`) serves it and the admin service (:mod:`mockserver.admin`) exposes
these verbs under ``/_mock``.
"""

from __future__ import annotations

import abc
import time
from typing import Any

from .changes import Persistent
from .clock import VirtualClock
from .dns import DnsTable
from .faults import FaultSet
from .ids import IdFactory
from .journal import Journal

__all__ = ["MockCore"]


class MockCore(abc.ABC):
    """Hold one mock's shared machinery; a provider subclasses it with its own state model."""

    provider: str = "mock"

    def __init__(
        self,
        *,
        clock: VirtualClock | None = None,
        seed: int | None = None,
        journal_size: int = 10_000,
        dns: DnsTable | None = None,
    ) -> None:
        self.clock = clock or VirtualClock()
        self.faults = FaultSet()
        self.journal = Journal(journal_size)
        self.ids = IdFactory(seed)
        self.dns = dns or DnsTable()
        self._seed = seed

    @abc.abstractmethod
    def reset_state(self) -> None:
        """Forget every sandbox and provider-specific object."""

    @abc.abstractmethod
    def dump_state(self) -> dict[str, Any]:
        """Return the provider state as JSON."""

    @abc.abstractmethod
    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the provider state with :meth:`dump_state` output."""

    def sandbox_summaries(self) -> list[dict[str, Any]]:
        """Return one provider-neutral summary per live sandbox, for dashboards; the default knows none.

        Each summary holds ``id``, ``state``, ``image`` (text or None), ``policy`` (the network policy as
        JSON, or None), ``ports`` (the sandbox ports a client can reach), ``metadata`` (string pairs),
        ``created_at`` and ``expires_at`` (virtual epoch seconds or None) and ``details`` (anything else the
        provider wants shown, as JSON).
        """
        return []

    def pinned_keys(self) -> list[str] | None:
        """Return the API keys the mock accepts, or None when it accepts any key (or none is needed)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the mock holds beyond memory (a real runtime's sandboxes); the default holds nothing."""

    def on_clock_advance(self) -> None:  # noqa: B027 - optional hook
        """React to time moving (expire sandboxes, finish transitions); the default does nothing."""

    def persistent(self) -> Persistent | None:
        """Return the model store a durable store keeps record by record (None: the mock has none)."""
        return None

    def touched_by_request(self, sandbox_id: str) -> None:
        """Mark a sandbox a state-changing request acted on, so a durable store rewrites it."""
        model = self.persistent()
        if model is not None:
            model.touched(sandbox_id)

    def load_ids(self, data: dict[str, Any]) -> None:
        """Continue the id sequence :meth:`IdFactory.dump` described (its seed is kept for :meth:`reset`)."""
        self.ids.load(data)
        self._seed = data.get("seed")

    def reset(self) -> None:
        """Return to a fresh mock: no state, faults or journal; ids restarted.

        A ``wall`` clock keeps the real time (clients compute expiry from it); a ``manual`` or ``auto``
        clock goes back to its fixed epoch.
        """
        self.faults.reset()
        self.journal.clear()
        if self.clock.mode == "wall":
            self.clock.reset(time.time())
        else:
            self.clock.reset()
        self.ids.seed(self._seed)
        self.dns.replace({}, "synthetic")
        self.reset_state()

    def seed(self, seed: int | None) -> None:
        """Make ids deterministic from ``seed`` from now on."""
        self._seed = seed
        self.ids.seed(seed)

    def advance(self, seconds: float) -> float:
        """Move the virtual clock forward, apply what became due, and return the new time."""
        now = self.clock.advance(seconds)
        self.on_clock_advance()
        return now

    def snapshot(self) -> dict[str, Any]:
        """Return the whole state (sandboxes, clock, DNS) as JSON."""
        return {
            "provider": self.provider,
            "clock": self.clock.dump(),
            "dns": self.dns.dump(),
            "state": self.dump_state(),
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Replace the whole state with a :meth:`snapshot`; nothing changes if it is invalid."""
        if not isinstance(data, dict) or data.get("provider") != self.provider:
            raise ValueError(f"not a {self.provider} snapshot")
        state = data.get("state")
        if not isinstance(state, dict):
            raise ValueError("snapshot has no state object")
        previous = self.snapshot()
        try:
            self.load_state(state)
            self.clock.load(dict(data.get("clock") or {}))
            self.dns.load(dict(data.get("dns") or {}))
        except Exception:
            self.load_state(previous["state"])
            self.clock.load(previous["clock"])
            self.dns.load(previous["dns"])
            raise
