"""Contract strength: does a check come from the provider's documents, from the real system, or from sandproof?

Every contract carries a :class:`Basis`:

* ``spec``: a sentence of the provider's documentation says so. :func:`spec` takes sentence ids of
  :mod:`harness.strength.sources`, whose quotes are checked against the vendored documents.
* ``observed``: it was seen on the real system. :func:`observed` takes where (at least one
  :class:`~harness.strength.observations.Observation`: the real-server run of ``make contracts-real``, a capture
  in the repository with a quote, or a published source with the file and the quoted rule) and what was seen.
* ``choice``: the sources are silent and sandproof decided. :func:`choice` takes the one-line reason.

A :class:`Contract` is a named check of one suite with its basis. Policy checks declare theirs with the
:func:`tagged` decorator, so the tag sits on the check itself and the runner reads it from the result; every
contract defined is kept in :data:`REGISTRY`, which ``docs/contracts.md`` is generated from.

Only ``spec`` and ``observed`` contracts fail a run by default; a failing ``choice`` contract is reported as
"differs from sandproof's choice" and fails the run only in strict mode (:func:`fails_run`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, ParamSpec, get_args

from harness.strength.observations import Observation
from harness.strength.sources import SENTENCES, Sentence

__all__ = [
    "ENFORCED",
    "REGISTRY",
    "STATUSES",
    "STRENGTHS",
    "Basis",
    "CheckResult",
    "Contract",
    "Status",
    "Strength",
    "choice",
    "contract_provider",
    "contracts",
    "define",
    "fails_run",
    "observed",
    "spec",
    "status_of",
    "tagged",
]

Strength = Literal["spec", "observed", "choice"]
STRENGTHS: tuple[Strength, ...] = get_args(Strength)
#: The strengths that fail a default run.
ENFORCED: frozenset[str] = frozenset({"spec", "observed"})
#: How one check ended under a run's mode: ``differs`` is a failing choice outside strict mode; ``deviation`` is a
#: failing spec or observed check that is a documented deviation of the real server (:mod:`.deviations`).
Status = Literal["passed", "failed", "differs", "deviation"]
#: Every status, in the order reports show them.
STATUSES: tuple[Status, ...] = get_args(Status)

P = ParamSpec("P")


@dataclass(frozen=True)
class Basis:
    """Why a contract holds: its strength, the citation or reason, the source sentences it checks, and (observed)
    where it was observed."""

    strength: Strength
    source: str
    sentences: tuple[str, ...] = ()
    observations: tuple[Observation, ...] = ()

    def __post_init__(self) -> None:
        """Refuse an unknown strength, an empty source, unknown sentence ids, and an observed basis that names
        no place it was observed."""
        if self.strength not in STRENGTHS:
            raise ValueError(f"strength must be one of {', '.join(STRENGTHS)}, got {self.strength!r}")
        if not self.source.strip():
            raise ValueError("a contract's basis needs a source: the citation, where it was observed, or the reason")
        if self.strength == "observed" and not self.observations:
            raise ValueError(
                "an observed basis names where it was observed: REAL_RUN, capture(path, quote) or "
                "published(dist, path, quote) (harness.strength.observations)"
            )
        unknown = [s for s in self.sentences if s not in SENTENCES]
        if unknown:
            raise ValueError(f"unknown source sentence(s): {', '.join(unknown)}")


def _cite(sentence: Sentence) -> str:
    """Render one sentence as a citation: document and quote."""
    return f"{sentence.document.title}: “{sentence.quote}”"


def spec(*sentence_ids: str) -> Basis:
    """Return a ``spec`` basis citing the given sentences of the provider's documents (at least one)."""
    if not sentence_ids:
        raise ValueError("spec() needs at least one sentence id")
    unknown = [s for s in sentence_ids if s not in SENTENCES]
    if unknown:
        raise ValueError(f"unknown source sentence(s): {', '.join(unknown)}")
    source = "; ".join(_cite(SENTENCES[s]) for s in sentence_ids)
    return Basis("spec", source, tuple(sentence_ids))


def observed(
    at: Observation | Sequence[Observation], what: str, *, note: str = "", sentences: Iterable[str] = ()
) -> Basis:
    """Return an ``observed`` basis: ``what`` was seen, ``at`` which places (:mod:`harness.strength.observations`:
    the real-server run, a capture in the repository, a published source; at least one).

    ``note`` names the reference note that describes it (``opensandbox-wire.md §3``), if any; ``sentences`` the
    document sentences the observation makes precise, if any.
    """
    places = (at,) if isinstance(at, Observation) else tuple(at)
    if not places or not all(isinstance(p, Observation) for p in places):
        raise ValueError(
            "observed() needs where it was observed: REAL_RUN, capture(path, quote) or published(dist, path, quote)"
        )
    if not what.strip():
        raise ValueError("observed() needs what was seen")
    described = f"{note.strip()}; " if note.strip() else ""
    source = f"{what.strip()} ({described}observed: {'; '.join(p.render() for p in places)})"
    return Basis("observed", source, tuple(sentences), places)


def choice(reason: str, *, sentences: Iterable[str] = ()) -> Basis:
    """Return a ``choice`` basis: the sources are silent and sandproof decided, for ``reason`` (one line)."""
    if "\n" in reason.strip():
        raise ValueError("a choice's reason is one line")
    return Basis("choice", reason.strip(), tuple(sentences))


@dataclass(frozen=True)
class Contract:
    """One named check of a suite (``tensorlake-policy``, ``opensandbox-policy``, ...) with its basis."""

    suite: str
    name: str
    basis: Basis
    summary: str = ""

    @property
    def key(self) -> str:
        """Return ``suite:name``, the contract's identity."""
        return f"{self.suite}:{self.name}"

    @property
    def strength(self) -> Strength:
        """Return the contract's strength."""
        return self.basis.strength

    @property
    def source(self) -> str:
        """Return the citation, the observation or the reason."""
        return self.basis.source

    @property
    def sentences(self) -> tuple[str, ...]:
        """Return the ids of the document sentences the contract checks."""
        return self.basis.sentences


#: Every contract defined so far, by ``suite:name``.
REGISTRY: dict[str, Contract] = {}
_LOCK = threading.Lock()


def define(suite: str, name: str, basis: Basis, summary: str = "") -> Contract:
    """Create and register a contract; defining the same ``suite:name`` differently raises ``ValueError``."""
    if not suite.strip() or not name.strip() or ":" in suite:
        raise ValueError(f"a contract needs a suite without ':' and a name, got {suite!r}, {name!r}")
    contract = Contract(suite.strip(), name.strip(), basis, " ".join(summary.split()))
    with _LOCK:
        known = REGISTRY.get(contract.key)
        if known is not None:
            if known != contract:
                raise ValueError(f"contract {contract.key} is already defined with another basis or summary")
            return known
        REGISTRY[contract.key] = contract
    return contract


#: Suites whose name does not start with their provider's: the concurrency suite names a contract per provider,
#: and the NeMo Gym network checks run for every provider.
_SHARED_SUITES = frozenset({"concurrency", "nemo-gym-network"})


def contract_provider(contract: Contract) -> str | None:
    """Return the provider a contract is about (its suite's prefix; the concurrency contract's name), or None
    for a suite every provider shares."""
    if contract.suite == "concurrency":
        return contract.name
    if contract.suite in _SHARED_SUITES:
        return None
    return contract.suite.split("-", 1)[0]


def contracts(suite: str | None = None) -> list[Contract]:
    """Return the registered contracts (of ``suite`` if given) in definition order."""
    with _LOCK:
        return [c for c in REGISTRY.values() if suite is None or c.suite == suite]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: its name, whether it held, the (shrunk) failing input, and its contract."""

    name: str
    passed: bool
    counterexample: str | None = None
    message: str | None = None
    contract: Contract | None = None

    @property
    def strength(self) -> Strength | None:
        """Return the strength of the check's contract (None for an untagged check)."""
        return None if self.contract is None else self.contract.strength

    def status(self, strict: bool = False) -> Status:
        """Return ``passed``, ``failed`` or (a failing choice outside strict mode) ``differs``."""
        return status_of(self.passed, self.strength, strict)

    def fails_run(self, strict: bool = False) -> bool:
        """Tell whether this result fails the run under the given mode."""
        return self.status(strict) == "failed"


def fails_run(strength: str | None, strict: bool = False) -> bool:
    """Tell whether a failing check of ``strength`` fails the run: spec, observed and untagged always, choice if strict."""
    return strict or strength != "choice"


def status_of(passed: bool, strength: str | None, strict: bool = False) -> Status:
    """Return the status of a check that ``passed`` or not, given its strength and the mode."""
    if passed:
        return "passed"
    return "failed" if fails_run(strength, strict) else "differs"


def tagged(suite: str, name: str, basis: Basis) -> Callable[[Callable[P, CheckResult]], Callable[P, CheckResult]]:
    """Decorate a check function: define its contract and attach it to every result the check returns.

    The decorated function gets a ``contract`` attribute, which the runners and the docs read::

        @tagged("tensorlake-policy", "wildcard_apex", spec("tl.allow.wildcard-apex"))
        def check_wildcard_apex(engine, *, max_examples=60, derandomize=True, shrink=True) -> CheckResult: ...
    """

    def decorate(check: Callable[P, CheckResult]) -> Callable[P, CheckResult]:
        doc = (check.__doc__ or "").strip().splitlines()
        contract = define(suite, name, basis, doc[0] if doc else "")

        @functools.wraps(check)
        def run(*args: P.args, **kwargs: P.kwargs) -> CheckResult:
            return replace(check(*args, **kwargs), name=contract.name, contract=contract)

        run_any: Any = run
        run_any.contract = contract
        return run

    return decorate
