"""What every part of the OpenSandbox fault catalogue shares: the mock it arms, rule building, shared words."""

from __future__ import annotations

from typing import Any, Protocol

from mockserver.core import FaultRule, FaultSet, VirtualClock

from ..model.store import OpenSandboxState

__all__ = ["COMMON_PARAMS", "CREATE", "EXECD", "ONE_SANDBOX", "CatalogueBase", "FaultHost"]

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


class FaultHost(Protocol):
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
    def state(self) -> OpenSandboxState:
        """The mock's sandboxes."""
        ...

    def server(self, **options: Any) -> Any:
        """Return a server for the mock (started with ``with``)."""
        ...


class CatalogueBase:
    """The mock a catalogue arms, and the one way its faults add a rule."""

    def __init__(self, mock: FaultHost) -> None:
        self.mock = mock

    def _add(self, **rule: Any) -> FaultRule:
        return self.mock.faults.add(
            FaultRule.from_json({k: v for k, v in rule.items() if v is not None or k == "times"})
        )

    def respond(
        self,
        method: str,
        path: str,
        status: int,
        body: Any = None,
        *,
        sandbox_id: str | None = None,
        times: int | None = 1,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
        name: str = "",
    ) -> FaultRule:
        """Answer matching requests with ``status`` and ``body`` instead of the mock's own answer."""
        return self._add(
            method=method,
            path=path,
            action="respond",
            status=status,
            body=body,
            sandbox_id=sandbox_id,
            times=times,
            headers=headers or {},
            content_type=content_type,
            name=name,
        )
