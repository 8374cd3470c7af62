"""The named OpenSandbox fault catalogue: the failures the SDKs and NeMo Gym react to, from Python or over HTTP.

One module per thing a fault touches, as on TensorLake: :mod:`.lifecycle` (the lifecycle server's answers),
:mod:`.execd` (execd, on the direct endpoint and through the server proxy alike, ``*/44772/...``) and
:mod:`.state` (faults armed on the model, :mod:`..model.faults`); :mod:`.base` holds what they share. Every
rule-adding fault takes an optional ``sandbox_id`` (None: any sandbox) and ``times`` (None: forever) and
returns the core ``FaultRule`` it added, so tests can inspect ``rule.fired``. Numbers refer to the wire notes
(F1-F34) and the NeMo Gym notes (NG-F1...).

The same faults are served over HTTP (:mod:`mockserver.admin.catalogue`): :meth:`OpenSandboxFaults.named`
lists each with its parameters and what the SDKs do on it (``GET /_mock/faults/catalogue``).
"""

from __future__ import annotations

from mockserver.admin.catalogue import NamedFault, catalogue_of

from .base import COMMON_PARAMS, OpenSandboxFaultHost
from .execd import ExecdFaults
from .lifecycle import LifecycleFaults
from .state import StateFaults

__all__ = ["OpenSandboxFaultHost", "OpenSandboxFaults"]


class OpenSandboxFaults(ExecdFaults, LifecycleFaults, StateFaults):
    """Trigger each documented OpenSandbox failure, per call and per sandbox, from Python or over HTTP."""

    def __init__(self, mock: OpenSandboxFaultHost) -> None:
        self.mock = mock

    def named(self) -> dict[str, NamedFault]:
        """Return the named faults by name (what ``GET /_mock/faults/catalogue`` lists)."""
        return catalogue_of(self, COMMON_PARAMS)
