"""How a process ended, one record for every runtime: the emulator's steps and the linux runtime's processes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Exited"]


@dataclass(frozen=True)
class Exited:
    """How a process ended: an exit code, or the signal that killed it, and why; always its last event.

    ``lost``: the runtime lost track of it (its sandbox went away under it).
    """

    code: int | None
    signal: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    lost: bool = False

    @property
    def shell_code(self) -> int:
        """Return the status a shell reports: the code, or 128 + signal (137 for SIGKILL and OOM kills)."""
        if self.code is not None:
            return self.code
        return 128 + (self.signal or 9)

    @property
    def reason(self) -> str:
        """Return ``oom_killed``, ``timed_out``, ``signaled`` or ``exited``."""
        if self.oom_killed:
            return "oom_killed"
        if self.timed_out:
            return "timed_out"
        return "signaled" if self.code is None else "exited"
