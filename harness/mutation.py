"""Mutation score: deliberately wrong implementations the contracts must reject, and how many they do.

``MUTANTS`` maps a mutant's name (``"<suite>:<mutant>"``, e.g. ``"opensandbox-api:create-200"``) to a factory
that builds it (for the OpenSandbox API suite: a wrong ``OpenSandboxMock``). Suites register theirs with
:func:`register_mutants`; the mutant modules of this checkout (``MUTANT_MODULES``, under ``tests/``) are imported
on first use by :func:`load_mutants`, and silently skipped when ``tests`` is not importable (an installed package).

``mutation_score(run)`` calls ``run(name, factory)`` for every mutant; ``run`` returns True when the contract
rejected (killed) that mutant. It returns ``(killed, total)``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping

__all__ = [
    "MUTANTS",
    "MUTANT_MODULES",
    "MutantFactory",
    "load_mutants",
    "mutation_results",
    "mutation_score",
    "register_mutants",
]

MutantFactory = Callable[[], object]
Runner = Callable[[str, MutantFactory], bool]

#: name → factory of every registered mutant.
MUTANTS: dict[str, MutantFactory] = {}
#: Modules that register mutants when imported (tried by :func:`load_mutants`).
MUTANT_MODULES: tuple[str, ...] = ("tests.mutants.opensandbox_mocks", "tests.mutants.tensorlake_mocks")

_LOCK = threading.Lock()


def register_mutants(suite: str, factories: Mapping[str, MutantFactory]) -> None:
    """Register ``factories`` as ``"<suite>:<name>"``; registering the same name again replaces it."""
    if not suite or ":" in suite:
        raise ValueError(f"suite must be a non-empty name without ':', got {suite!r}")
    with _LOCK:
        for name, factory in factories.items():
            if not callable(factory):
                raise TypeError(f"mutant {suite}:{name} is not callable")
            MUTANTS[f"{suite}:{name}"] = factory


def load_mutants(suite: str | None = None) -> dict[str, MutantFactory]:
    """Import the known mutant modules (missing ones are skipped) and return the mutants, of ``suite`` if given."""
    for module in MUTANT_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
    with _LOCK:
        return {name: factory for name, factory in MUTANTS.items() if suite is None or name.split(":", 1)[0] == suite}


def mutation_results(run: Runner, mutants: Mapping[str, MutantFactory] | None = None) -> dict[str, bool]:
    """Return, for every mutant (default: all loaded), whether ``run`` killed it."""
    chosen = load_mutants() if mutants is None else dict(mutants)
    return {name: bool(run(name, factory)) for name, factory in sorted(chosen.items())}


def mutation_score(run: Runner, mutants: Mapping[str, MutantFactory] | None = None) -> tuple[int, int]:
    """Return ``(killed, total)``: how many mutants (default: all loaded) ``run`` killed, out of how many."""
    results = mutation_results(run, mutants)
    return sum(results.values()), len(results)
