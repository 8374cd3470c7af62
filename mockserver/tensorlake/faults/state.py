"""Named TensorLake faults armed on the state model: create outcomes, a stuck sandbox's release, transition timings.

The outcomes and timings are the model's (:mod:`..model.admin`); these are their catalogue entries.
"""

from __future__ import annotations

from typing import Any

from mockserver.admin.catalogue import named_fault
from mockserver.core import ApiError

from ..model import admin
from .base import TensorLakeFaultHost

__all__ = ["StateFaults"]

#: A transition this long (virtual seconds, about 31 years) never settles in any test.
NEVER = 1e9
TRANSITIONS = ("startup", "suspend", "resume", "snapshot", "resize")


def _transition(name: str) -> str:
    if name not in TRANSITIONS:
        raise ApiError(400, "invalid_transition", f"transition must be one of {list(TRANSITIONS)}, not {name!r}")
    return name


class StateFaults:
    """Faults that change what the state model does next."""

    mock: TensorLakeFaultHost

    @named_fault(
        "SDK: create raises SandboxError with the reason (the failure payload names the sandbox); the sandbox "
        "is listed as failed.",
        reason="the termination reason (ConfigurationError, no_capacity, ...)",
        status="the HTTP status of the failure payload (the SDK parses 422)",
        error_details="the error_details object of the payload",
    )
    def create_fails(
        self, reason: str = "ConfigurationError", status: int = 422, error_details: dict[str, Any] | None = None
    ) -> None:
        """The next create fails: the sandbox is recorded ``failed`` and the failure payload is answered."""
        body = {"kind": "failed", "reason": reason, "status": status, "error_details": error_details}
        admin.queue_outcome(self.mock.model, body)

    @named_fault(
        "SDK: a 504 timeout body is allowed; the blocking create polls GET every 2 s until the sandbox runs "
        "(release it), and raises SandboxPending with the sandbox id when its request budget runs out."
    )
    def create_times_out(self) -> None:
        """The next create answers ``504 {"status": "timeout"}`` and its sandbox stays pending until released."""
        admin.queue_outcome(self.mock.model, {"kind": "timeout"})

    @named_fault("SDK: the next GET of a polling create sees running and connects.", sandbox="the sandbox id or name")
    def release(self, sandbox: str) -> None:
        """A sandbox left pending (by ``create_times_out``) starts now."""
        found = self.mock.model.find_any(sandbox)
        if found is None:
            raise ApiError(404, "sandbox_not_found", f"no live sandbox {sandbox!r}")
        self.mock.model.release(found)

    @named_fault(
        "SDK: a blocking create, suspend or resume waits out its request budget (create: 504 timeout, then "
        "polls); the sandbox stays pending, suspending or resuming until the timing is set again."
    )
    def transition_never_settles(self, transition: str = "startup") -> None:
        """Every later ``transition`` takes about 31 virtual years (set the timing again to undo it)."""
        self.slow_transition(transition, NEVER)

    @named_fault(
        "SDK: blocking calls wait for the transition (within their budget) and poll otherwise.",
        seconds="how many virtual seconds the transition takes",
    )
    def slow_transition(self, transition: str = "startup", seconds: float = 30.0) -> None:
        """Every later ``transition`` takes ``seconds`` of virtual time."""
        try:
            timings = admin.timings_from(self.mock.model.timings, {_transition(transition): seconds})
        except ValueError as exc:
            raise ApiError(400, "invalid_timings", str(exc)) from exc
        self.mock.model.timings = timings
