"""What every part of the OpenSandbox fault catalogue shares: the mock it arms, path globs, shared words."""

from __future__ import annotations

from typing import Any, Protocol

from mockserver.core import FaultSet, VirtualClock

from ..model.operations import OpenSandboxModel

__all__ = ["COMMON_PARAMS", "CREATE", "EXECD", "ONE_SANDBOX", "OpenSandboxFaultHost"]

EXECD = "*/44772"
CREATE = "*/sandboxes"
ONE_SANDBOX = "*/sandboxes/*"

#: What the parameters many faults share mean.
COMMON_PARAMS = {
    "sandbox_id": "the sandbox it applies to (null: any sandbox)",
    "times": "how many matching requests it answers (null: every one)",
    "method": "the HTTP method it matches (* for any)",
    "path": "the request-path glob it matches (* crosses /)",
    "status": "the HTTP status it answers",
    "code": "the error code in the JSON body",
    "retry_after": "the Retry-After header, in seconds",
}


class OpenSandboxFaultHost(Protocol):
    """What the catalogue arms: the mock's fault rules, clock and state, and a way to serve it."""

    @property
    def faults(self) -> FaultSet:
        """The fault rules the HTTP layer applies."""
        ...

    @property
    def clock(self) -> VirtualClock:
        """The mock's virtual clock."""
        ...

    @property
    def state(self) -> OpenSandboxModel:
        """The mock's sandboxes."""
        ...

    def server(self, **options: Any) -> Any:
        """Return a server for the mock (started with ``with``)."""
        ...
