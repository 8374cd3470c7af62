"""Documented deviations of the real servers from their own documents: a failing check that is one of these is
reported as a ``deviation``, not a failure, on a target that is not one of sandproof's mocks.

A spec or observed check states what the provider's documents say (or what was seen on the real system). When
the real opensandbox-server contradicts its own documentation, the suite still checks the documented rule, and a
run against the real server shows that check as a documented deviation: quoted here (the document's words and
what the server does instead) and listed in ``docs/differential-findings.md`` under :attr:`KnownDeviation.finding`.
A test checks that every entry's heading is there. Against sandproof's own mocks nothing here applies: a mock that
fails a spec check fails the run.

Nothing is listed today: every spec and observed check that runs against the real server in ``make contracts-real``
passes there (the differences found on the way were the model's and were fixed). An entry names one contract and
a pattern its failure message must match, so an unrelated failure of the same contract still fails the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEVIATIONS", "FINDINGS_DOC", "KnownDeviation", "documented_deviation"]

#: Where every known deviation is written up, with its quote and the run that shows it.
FINDINGS_DOC = "docs/differential-findings.md"


@dataclass(frozen=True)
class KnownDeviation:
    """One way the real server contradicts its documents, as one contract's failure shows it."""

    contract: str
    """The contract's ``suite:name``."""
    pattern: str
    """A regular expression the failure's message (or counterexample) must match."""
    documented: str
    """The document's words, quoted verbatim, with the document named."""
    real: str
    """What the real server does instead."""
    finding: str
    """The heading of its entry in :data:`FINDINGS_DOC`."""

    def __post_init__(self) -> None:
        """Refuse an entry without a contract, a quote, what the server does or a finding."""
        if ":" not in self.contract or not self.documented.strip() or not self.real.strip() or not self.finding:
            raise ValueError(f"a known deviation needs a contract key, a quote, the real answer and a finding: {self}")
        re.compile(self.pattern)

    def matches(self, contract: str, text: str) -> bool:
        """Tell whether a failure of ``contract`` with this message is this deviation."""
        return contract == self.contract and re.search(self.pattern, text) is not None


#: Every known deviation of the real servers from their documents.
DEVIATIONS: tuple[KnownDeviation, ...] = ()


def documented_deviation(
    contract: str,
    message: str | None,
    counterexample: str | None = None,
    table: tuple[KnownDeviation, ...] | None = None,
) -> KnownDeviation | None:
    """Return the known deviation a failure of ``contract`` is, or None (``table`` defaults to :data:`DEVIATIONS`)."""
    text = "\n".join(part for part in (message, counterexample) if part)
    return next((d for d in (DEVIATIONS if table is None else table) if d.matches(contract, text)), None)
