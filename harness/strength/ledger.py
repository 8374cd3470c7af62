"""The outcomes of tagged checks during one contract test, and the run's mode (default or strict).

The pytest plugin opens a :class:`Ledger` around every contract test (``with ledger(strict=...)``); code that
runs checks records each outcome with :func:`record` (a whole list of policy results with
:func:`record_results`), and the plugin folds them into the report. Outside a ledger (the Python API),
:func:`record` only computes the status and the mode is the default one.

:func:`breach` is the call an assertion makes when the target differs from a tagged contract: it records the
failure and raises when the contract fails the run under the current mode (spec and observed always, choice
only in strict mode); a differing choice, and on a real target a documented deviation of it
(:mod:`harness.strength.deviations`), return normally after they have been recorded, so the caller goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.strength.deviations import KnownDeviation, documented_deviation
from harness.strength.model import CheckResult, Contract, Status, status_of

__all__ = [
    "CheckOutcome",
    "ContractBreach",
    "Ledger",
    "breach",
    "current",
    "ledger",
    "record",
    "record_results",
    "strict_mode",
]

_MAX_TEXT = 2000


def _clip(text: str | None) -> str | None:
    """Cut a long counterexample or message."""
    if text is None or len(text) <= _MAX_TEXT:
        return text
    return text[: _MAX_TEXT - 1] + "…"


@dataclass(frozen=True)
class CheckOutcome:
    """One tagged check as the report shows it: contract, strength, status, source and counterexample."""

    contract: str
    strength: str
    status: Status
    source: str
    counterexample: str | None = None
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the outcome as a JSON object."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckOutcome:
        """Rebuild an outcome from :meth:`to_json`."""
        return cls(
            str(data["contract"]),
            str(data["strength"]),
            data["status"],
            str(data.get("source", "")),
            data.get("counterexample"),
            data.get("message"),
        )


_RANK: dict[str, int] = {"passed": 0, "deviation": 1, "differs": 2, "failed": 3}


@dataclass
class Ledger:
    """The outcomes recorded during one contract test, one per contract, and whether the run is strict.

    A contract checked several times (a state machine asserts it at every step) keeps its worst status and
    the first counterexample of that status.
    """

    strict: bool = False
    by_contract: dict[str, CheckOutcome] = field(default_factory=dict)
    #: Whether the target is a real server, whose documented deviations (:mod:`.deviations`) are not failures.
    real_target: bool = False
    #: The known deviations looked up (None: :data:`harness.strength.deviations.DEVIATIONS`).
    known: tuple[KnownDeviation, ...] | None = None

    @property
    def outcomes(self) -> list[CheckOutcome]:
        """Return one outcome per contract, in the order they were first recorded."""
        return list(self.by_contract.values())

    def add(self, contract: Contract, passed: bool, counterexample: str | None, message: str | None) -> CheckOutcome:
        """Record one check of ``contract``; return its outcome under this ledger's mode."""
        status = status_of(passed, contract.strength, self.strict)
        if status == "failed" and self.real_target:
            deviation = documented_deviation(contract.key, message, counterexample, self.known)
            if deviation is not None:
                status = "deviation"
                message = f"documented deviation ({deviation.finding}): {deviation.real}; {message or ''}".rstrip("; ")
        outcome = CheckOutcome(
            contract.key,
            contract.strength,
            status,
            contract.source,
            _clip(counterexample),
            _clip(message),
        )
        known = self.by_contract.get(contract.key)
        if known is None or _RANK[outcome.status] > _RANK[known.status]:
            self.by_contract[contract.key] = outcome
        return outcome


_CURRENT: ContextVar[Ledger | None] = ContextVar("sandproof_ledger", default=None)


@contextmanager
def ledger(
    *, strict: bool = False, real_target: bool = False, known: tuple[KnownDeviation, ...] | None = None
) -> Iterator[Ledger]:
    """Collect the outcomes recorded inside the block into a fresh ledger (nested blocks shadow outer ones).

    ``real_target``: the target is a real server, so a failure that is a documented deviation of it is recorded
    as ``deviation`` (``known`` replaces the table of :mod:`harness.strength.deviations`).
    """
    book = Ledger(strict, real_target=real_target, known=known)
    token = _CURRENT.set(book)
    try:
        yield book
    finally:
        _CURRENT.reset(token)


def current() -> Ledger | None:
    """Return the open ledger, or None outside a contract test."""
    return _CURRENT.get()


def strict_mode() -> bool:
    """Tell whether the current run is strict (choices fail it too); False outside a ledger."""
    book = _CURRENT.get()
    return book is not None and book.strict


def record(contract: Contract, passed: bool, counterexample: str | None = None, message: str | None = None) -> Status:
    """Record one check of ``contract`` in the open ledger (if any) and return its status under the mode."""
    book = _CURRENT.get()
    if book is None:
        return status_of(passed, contract.strength, False)
    return book.add(contract, passed, counterexample, message).status


def record_results(results: Iterable[CheckResult]) -> list[CheckResult]:
    """Record every tagged result in the open ledger; return the results that fail the run under the mode.

    An untagged result (no contract) always fails the run when it failed, and is not recorded; a documented
    deviation of a real target does not fail it.
    """
    failing: list[CheckResult] = []
    for result in results:
        if result.contract is not None:
            if record(result.contract, result.passed, result.counterexample, result.message) == "failed":
                failing.append(result)
        elif not result.passed:
            failing.append(result)
    return failing


class ContractBreach(AssertionError):
    """A target differs from a contract that fails the run under the current mode."""

    def __init__(self, contract: Contract, message: str, counterexample: str | None = None) -> None:
        super().__init__(f"[{contract.key} · {contract.strength}] {message}")
        self.contract = contract
        self.counterexample = counterexample


def breach(
    contract: Contract,
    message: str,
    counterexample: str | None = None,
    *,
    error: Callable[[str], BaseException] | None = None,
) -> None:
    """Report that the target differs from ``contract``: record it, then raise unless it is a differing choice.

    ``error`` builds the exception to raise from the message (default :class:`ContractBreach`), so an API
    machine keeps raising its own ``ContractViolation``; the contract is set on it as ``contract``. A differing
    choice returns normally outside strict mode.
    """
    if record(contract, False, counterexample, message) in ("differs", "deviation"):
        return
    if error is None:
        raise ContractBreach(contract, message, counterexample)
    exc = error(message)
    with suppress(AttributeError):
        exc.contract = contract  # type: ignore[attr-defined]  # lets a mutation judge read the strength
    raise exc
