"""The named TensorLake fault catalogue: the situations the SDK reacts to, from Python or over HTTP.

Built on what the mock already offers: the create outcomes and timings of :mod:`..model.admin`, the release of
a stuck sandbox, and the core's fault rules. One module per thing a fault touches, as on OpenSandbox:
:mod:`.lifecycle` (the lifecycle API's answers), :mod:`.management` (the sandbox proxy in front of the
in-sandbox management API) and :mod:`.state` (the state model: create outcomes, transition timings);
:mod:`.base` holds what they share. The SDK reactions are those of tensorlake 0.5.161 as measured (its HTTP
calls are made in Rust: reads are tried 3 times on 429/502/503/504, mutations 6 times on 502/503/504, a
create and anything answered 500 never).

The same faults are served over HTTP (:mod:`mockserver.admin.catalogue`): :meth:`TensorLakeFaults.named`
lists each with its parameters and what the SDK does on it (``GET /_mock/faults/catalogue``).
"""

from __future__ import annotations

from mockserver.admin.catalogue import NamedFault, catalogue_of

from .base import COMMON_PARAMS, TensorLakeFaultHost
from .lifecycle import LifecycleFaults
from .management import ManagementFaults
from .state import StateFaults

__all__ = ["TensorLakeFaultHost", "TensorLakeFaults"]


class TensorLakeFaults(LifecycleFaults, ManagementFaults, StateFaults):
    """Trigger the failures the TensorLake SDK has a reaction to, from Python or over HTTP."""

    def __init__(self, mock: TensorLakeFaultHost) -> None:
        self.mock = mock

    def named(self) -> dict[str, NamedFault]:
        """Return the named faults by name (what ``GET /_mock/faults/catalogue`` lists)."""
        return catalogue_of(self, COMMON_PARAMS)
