"""The named OpenSandbox fault catalogue: helpers over the core ``FaultSet`` plus state-driven faults.

Every rule helper takes an optional ``sandbox_id`` (None: any sandbox) and ``times`` (None: forever) and
returns the core ``FaultRule`` it added, so tests can inspect ``rule.fired``; the state-driven faults arm the
model (:mod:`..model.faults`). Numbers refer to the wire notes (F1-F34) and the NeMo Gym notes
(NG-F1...). Execd paths match both the direct endpoint and the server proxy (``*/44772/...``).

The same faults are served over HTTP (:mod:`mockserver.admin.catalogue`): :meth:`FaultCatalogue.named`
lists each with its parameters and what the SDKs do on it.
"""

from __future__ import annotations

from mockserver.admin.catalogue import NamedFault, catalogue_of

from .base import COMMON_PARAMS, FaultHost
from .execd import ExecdFaults
from .lifecycle import LifecycleFaults
from .state import StateFaults

__all__ = ["FaultCatalogue", "FaultHost"]


class FaultCatalogue(ExecdFaults, LifecycleFaults, StateFaults):
    """Trigger each documented OpenSandbox failure, per call and per sandbox, from Python or over HTTP."""

    def named(self) -> dict[str, NamedFault]:
        """Return the named faults by name (what ``GET /_mock/faults/catalogue`` lists)."""
        return catalogue_of(self, COMMON_PARAMS)
