"""The resource limits every sandbox gets unless its create request (or ``sandproof serve``) names others.

A sandbox of the linux runtime always has three limits, so that one sandbox cannot take the host or the
other sandboxes down with it:

* **pids** (:data:`DEFAULT_PIDS`): the cgroup ``pids.max``; a fork bomb fills its own sandbox only, and
  the other sandboxes' processes still start;
* **memory** (:data:`DEFAULT_MEMORY`): the cgroup ``memory.max`` (v1: ``memory.limit_in_bytes``), swap
  included; the kernel's OOM killer acts inside the sandbox;
* **disk** (:data:`DEFAULT_DISK`): the size of the tmpfs that is the sandbox's writable root, so writes
  past it fail with ``ENOSPC`` and ``df /`` inside shows the sandbox's own size. Files written by the
  sandbox's processes count against its memory limit too (tmpfs pages are memory).

A provider's create fields override them per sandbox (TensorLake ``resources.memory_mb`` and
``resources.disk_mb``; OpenSandbox ``resourceLimits.memory`` and ``resourceLimits.ephemeral-storage``);
``sandproof serve --sandbox-memory/--sandbox-pids/--sandbox-disk`` (:class:`SandboxLimits`) overrides
the defaults. Where no writable cgroup offers a controller the limit is recorded, not enforced
(:meth:`~mockserver.linux.records.Limits.deviations`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_DISK", "DEFAULT_MEMORY", "DEFAULT_PIDS", "SandboxLimits", "parse_size"]

#: Tasks (processes and threads) per sandbox: room for build tools and thread pools, far below the host's.
DEFAULT_PIDS = 1024
#: Memory per sandbox when the request names none: the OpenSandbox SDK's default ``resourceLimits.memory``.
DEFAULT_MEMORY = 2 * 1024**3
#: Writable storage per sandbox when the request names none: TensorLake's documented ``disk_mb`` default.
DEFAULT_DISK = 10 * 1024**3

_SIZE = re.compile(r"\s*(\d+)\s*([kmgt]i?b?|b)?\s*", re.IGNORECASE)
_FACTORS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """Return a size in bytes from ``1073741824``, ``512M``, ``2Gi`` or ``10GB`` (binary units); ValueError else."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise ValueError(f"not a size: {text!r} (e.g. 512M, 2G, 1073741824)")
    unit = (found.group(2) or "").lower()[:1]
    size = int(found.group(1)) * _FACTORS[unit]
    if size <= 0:
        raise ValueError(f"a size must be positive, got {text!r}")
    return size


@dataclass(frozen=True)
class SandboxLimits:
    """The limits a sandbox gets when its request names none."""

    memory_bytes: int = DEFAULT_MEMORY
    pids: int = DEFAULT_PIDS
    disk_bytes: int = DEFAULT_DISK

    def __post_init__(self) -> None:
        if self.memory_bytes <= 0 or self.pids <= 0 or self.disk_bytes <= 0:
            raise ValueError("sandbox limits must be positive")
