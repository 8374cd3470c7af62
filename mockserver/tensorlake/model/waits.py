"""Waits as decisions: a rule that must let virtual time pass returns :class:`Settle`, it never sleeps.

A blocking call (a create that waits for its sandbox to run, ``?wait_ms=`` on suspend and resume, a proxied
request that wakes a suspended sandbox) answers ``Settle(at, budget, then)``: wait on the virtual clock until
``at`` but at most ``budget`` seconds, then call ``then(waited)`` for the answer. The HTTP layer awaits the
wait (:func:`wait_span` says how long); a caller that never waits, such as a contract oracle on a manual clock,
follows the decisions with :func:`without_waiting`.

The budget of a create comes from the SDK's timeout headers (:func:`request_budget`): its request timeout
minus its grace, 300 s when it sends none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["DEFAULT_BUDGET_MS", "Settle", "request_budget", "wait_span", "without_waiting"]

T = TypeVar("T")

DEFAULT_BUDGET_MS = 300_000
#: Header values longer than this are not read as numbers (the default applies).
_MAX_DIGITS = 12


@dataclass(frozen=True)
class Settle(Generic[T]):
    """Wait on the virtual clock until ``at`` (None: no deadline), at most ``budget`` seconds; then ``then(waited)``."""

    at: float | None
    budget: float
    then: Callable[[float], T | Settle[T]]


def _millis(raw: str | None) -> int | None:
    text = (raw or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS else None


def request_budget(timeout_ms: str | None, grace_ms: str | None) -> float:
    """Return the seconds a blocking call may take: ``x-tensorlake-request-timeout-ms`` minus its grace."""
    total = _millis(timeout_ms)
    spare = _millis(grace_ms) or 0
    return max(0.0, ((DEFAULT_BUDGET_MS if total is None else total) - spare) / 1000)


def wait_span(at: float | None, budget: float, now: float, *, manual: bool) -> float:
    """Return how long to wait for a :class:`Settle`: until ``at``, at most ``budget``; 0 on a manual clock.

    A manual clock never blocks a request (time moves only when a test says so), and neither does a decision
    without a deadline (a sandbox held back until released).
    """
    if at is None or budget <= 0 or manual:
        return 0.0
    return max(0.0, min(at - now, budget))


def without_waiting(result: T | Settle[T]) -> T:
    """Return the final answer of ``result``, following each wait decision as if no time passed."""
    while isinstance(result, Settle):
        result = result.then(0.0)
    return result
