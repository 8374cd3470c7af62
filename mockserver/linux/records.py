"""The small value types and errors a sandbox reports: limits, usage, run results, refusals."""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .process import Exited

__all__ = ["Limits", "RunResult", "SandboxStateError", "SpawnError", "Usage", "spawn_error"]


class SandboxStateError(RuntimeError):
    """The sandbox cannot do that now (frozen, or destroyed)."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(message)
        self.state = state


class SpawnError(RuntimeError):
    """A process could not be started; ``code`` says why."""

    def __init__(self, code: str, message: str, errno_value: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.errno = errno_value


@dataclass(frozen=True)
class Limits:
    """The resource limits a sandbox has, and which of them the kernel enforces.

    ``memory_bytes`` and ``pids`` are cgroup limits (``memory``, ``pids`` in ``enforced`` when a cgroup
    enforces them); ``disk_bytes`` is the size of the tmpfs that is the sandbox's writable root (``disk``).
    """

    memory_bytes: int | None = None
    pids: int | None = None
    enforced: frozenset[str] = frozenset()
    disk_bytes: int | None = None

    def deviations(self) -> list[str]:
        """Return the limits recorded but not enforced."""
        out = []
        if self.memory_bytes is not None and "memory" not in self.enforced:
            out.append(f"memory limit {self.memory_bytes} bytes recorded, not enforced (no writable memory cgroup)")
        if self.pids is not None and "pids" not in self.enforced:
            out.append(f"pids limit {self.pids} recorded, not enforced (no writable pids cgroup)")
        if self.disk_bytes is not None and "disk" not in self.enforced:
            out.append(f"disk limit {self.disk_bytes} bytes recorded, not enforced (no tmpfs for the sandbox's root)")
        return out


@dataclass(frozen=True)
class Usage:
    """What the sandbox's processes use now (for a metrics endpoint)."""

    cpu_seconds: float
    memory_bytes: int
    processes: int
    cpu_count: int


@dataclass(frozen=True)
class RunResult:
    """A process run to completion."""

    stdout: bytes
    stderr: bytes
    status: Exited

    @property
    def exit_code(self) -> int:
        """Return the shell-style exit code (128 + signal when killed)."""
        return self.status.shell_code


def spawn_error(reply: Mapping[str, Any], argv: Sequence[str], cwd: str) -> SpawnError:
    """Return the SpawnError of an init's refusal to start ``argv`` in ``cwd``."""
    stage, number = str(reply.get("error")), int(reply.get("errno") or 0)
    message = str(reply.get("message") or "")
    if stage == "cwd":
        if number in (errno.ENOENT, errno.ENOTDIR):
            return SpawnError("cwd_not_found", f"working directory does not exist: {cwd}", number)
        return SpawnError("cwd_not_found" if number == errno.EACCES else "exec_failed", f"{cwd}: {message}", number)
    if stage == "exec" and number == errno.ENOENT:
        return SpawnError("not_found", f"{argv[0]}: command not found", number)
    if stage == "exec" and number == errno.EACCES:
        return SpawnError("permission_denied", f"{argv[0]}: Permission denied", number)
    return SpawnError("exec_failed", f"{argv[0]}: {message or 'cannot start'}", number)
