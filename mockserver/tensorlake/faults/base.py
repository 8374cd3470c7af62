"""What every part of the TensorLake fault catalogue shares: the mock it arms, path globs, shared words."""

from __future__ import annotations

from typing import Protocol

from mockserver.core import FaultSet

from ..model.operations import TensorLakeModel

__all__ = ["COMMON_PARAMS", "DAEMON", "LIFECYCLE", "TensorLakeFaultHost"]

#: The lifecycle API's paths.
LIFECYCLE = "*sandboxes*"
#: The in-sandbox management API, behind the sandbox proxy.
DAEMON = "/api/v1/*"

#: What the parameters many faults share mean.
COMMON_PARAMS = {
    "sandbox_id": "the sandbox it applies to (null: any sandbox)",
    "times": "how many matching requests it answers (null: every one)",
    "method": "the HTTP method it matches (* for any)",
    "path": "the request-path glob it matches (* crosses /)",
    "status": "the HTTP status it answers",
    "transition": "startup, suspend, resume, snapshot or resize",
}


class TensorLakeFaultHost(Protocol):
    """What the catalogue arms: the mock's fault rules and its state model."""

    @property
    def faults(self) -> FaultSet:
        """The fault rules the HTTP layer applies."""
        ...

    @property
    def model(self) -> TensorLakeModel:
        """The mock's state model."""
        ...
