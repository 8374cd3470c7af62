"""Named faults armed on the state: OOM kills, transitions that end in Failed or stall, recovery, expiry.

The rules are the model's (:mod:`..model.faults`); these are their catalogue entries. Each refuses an
unknown sandbox with 404 ``sandbox_not_found`` and arms nothing.
"""

from __future__ import annotations

from mockserver.admin.catalogue import named_fault

from ..model import faults as model_faults
from ..model.profiles import OOM_WORDINGS
from .base import OpenSandboxFaultHost

__all__ = ["StateFaults"]

_WORDING = (
    "how the status words the kill: "
    + ", ".join(sorted(OOM_WORDINGS))
    + " (null: the runtime's own, docker-1.1.1 or kubernetes-1.1.1)"
)
_SANDBOX = "the sandbox it applies to"


class StateFaults:
    """Faults that change what the state machine does next."""

    mock: OpenSandboxFaultHost

    @named_fault(
        "NeMo Gym: resubmits the 502, then reads the sandbox: with an OOMKilled wording it raises "
        "SandboxBackendUnreachableError('Sandbox was OOM-killed ...'); with docker-1.1.1's it raises "
        "'... unreachable through N submissions' (its OOM pattern does not match).",
        sandbox_id=_SANDBOX,
        wording=_WORDING,
    )
    def oom_on_next_exec(self, sandbox_id: str, wording: str | None = None) -> None:
        """NG-F4 / F31: the next ``POST /command`` answers 502 and the sandbox turns Failed (exit 137)."""
        model_faults.oom_on_next_exec(self.mock.state, sandbox_id, wording)

    @named_fault("SDK: reports state Failed; NeMo Gym: status() is error.", sandbox_id=_SANDBOX, wording=_WORDING)
    def oom_kill(self, sandbox_id: str, wording: str | None = None) -> None:
        """F31: the sandbox turns Failed now, as an OOM kill (exit 137)."""
        model_faults.oom_kill(self.mock.state, sandbox_id, wording)

    @named_fault(
        "NeMo Gym: pause polls until Paused and raises RuntimeError('... entered error while pausing'); a resume "
        "fails its readiness wait.",
        sandbox_id=_SANDBOX,
        operation="pause or resume",
        reason="the Failed status's reason (null: the runtime's container-exited one)",
        message="the Failed status's message (null: the runtime's)",
    )
    def fail_next_transition(
        self, sandbox_id: str, operation: str = "pause", reason: str | None = None, message: str | None = None
    ) -> None:
        """The sandbox's next pause (or resume) is accepted (202) but ends in ``Failed``."""
        model_faults.fail_next_transition(self.mock.state, sandbox_id, operation, reason, message)

    @named_fault(
        "NeMo Gym: pause polls while the sandbox reports Pausing and raises TimeoutError('Timed out waiting for "
        "OpenSandbox sandbox ... to pause after Ns') at operations.pause_resume_timeout_s; a resume fails its "
        "readiness wait (execd does not answer a Resuming sandbox).",
        sandbox_id=_SANDBOX,
        operation="pause or resume",
        seconds="how long (virtual seconds) it stays Pausing or Resuming (null: until the sandbox is deleted)",
    )
    def stall_next_transition(self, sandbox_id: str, operation: str = "pause", seconds: float | None = None) -> None:
        """NG-F11: the sandbox's next pause (or resume) is accepted (202) but stays Pausing (Resuming)."""
        model_faults.stall_next_transition(self.mock.state, sandbox_id, operation, seconds)

    @named_fault("SDK: reports state Running again; execd answers again.", sandbox_id="the Failed sandbox")
    def recover(self, sandbox_id: str) -> None:
        """A Failed sandbox is put back to Running (its container restarted); 409 when it is not Failed."""
        model_faults.recover(self.mock.state, sandbox_id)

    @named_fault("SDK: GET answers 404 SANDBOX_NOT_FOUND; NeMo Gym: status() is stopped.", sandbox_id=_SANDBOX)
    def expire(self, sandbox_id: str) -> None:
        """F31: the sandbox reaches its expiry now."""
        model_faults.expire(self.mock.state, sandbox_id)
