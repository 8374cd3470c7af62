"""Contract strength: every check says whether the provider's documents, the real system or sandproof's choice backs it.

:mod:`harness.strength.model` holds the strengths, bases, contracts and the ``tagged`` decorator,
:mod:`harness.strength.ledger` the per-test record of outcomes and the run's mode, :mod:`harness.strength.deviations` the documented
deviations of the real servers, and
:mod:`harness.strength.sources` the vendored documents and their quoted sentences.
"""

from harness.strength.deviations import DEVIATIONS, KnownDeviation, documented_deviation
from harness.strength.ledger import (
    CheckOutcome,
    ContractBreach,
    Ledger,
    breach,
    current,
    ledger,
    record,
    record_results,
    strict_mode,
)
from harness.strength.model import (
    ENFORCED,
    REGISTRY,
    STATUSES,
    STRENGTHS,
    Basis,
    CheckResult,
    Contract,
    Status,
    Strength,
    choice,
    contract_provider,
    contracts,
    define,
    fails_run,
    observed,
    spec,
    status_of,
    tagged,
)
from harness.strength.sources import DOCUMENTS, SENTENCES, Document, Sentence

__all__ = [
    "DEVIATIONS",
    "DOCUMENTS",
    "ENFORCED",
    "REGISTRY",
    "SENTENCES",
    "STATUSES",
    "STRENGTHS",
    "Basis",
    "CheckOutcome",
    "CheckResult",
    "Contract",
    "ContractBreach",
    "Document",
    "KnownDeviation",
    "Ledger",
    "Sentence",
    "Status",
    "Strength",
    "breach",
    "choice",
    "contract_provider",
    "contracts",
    "current",
    "define",
    "documented_deviation",
    "fails_run",
    "ledger",
    "observed",
    "record",
    "record_results",
    "spec",
    "status_of",
    "strict_mode",
    "tagged",
]
