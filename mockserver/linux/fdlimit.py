"""The runtime process's file descriptors: the soft limit raised to the hard one, and room for one more sandbox.

Every live sandbox holds :data:`FDS_PER_SANDBOX` descriptors in the process that runs the runtime (its
network namespace, the nft helper's copy of it, the socket to its init; measured with ``sleep`` running in
each), whatever it runs: its processes' pipes and PTYs live in the sandbox, behind its init. Nothing the
process does uses ``select()`` on them (libnftables runs in a helper process, see
:mod:`~mockserver.linux.nftables`), so they may go past 1023; running out of them altogether would still
make the server refuse connections, so :func:`has_room` keeps :func:`reserve` descriptors free for client
connections, files the APIs open, relays and PTYs: a server asked for more sandboxes than its limit can
hold refuses creates (the providers' capacity errors) instead.
"""

from __future__ import annotations

import contextlib
import os
import resource

__all__ = ["FDS_PER_SANDBOX", "has_room", "open_fds", "raise_soft_limit", "reserve", "sandboxes_that_fit", "soft_limit"]

#: Descriptors one live sandbox holds in the runtime's process.
FDS_PER_SANDBOX = 3
_MIN_RESERVE = 64


def soft_limit() -> int:
    """Return the soft RLIMIT_NOFILE (``RLIM_INFINITY`` counted as 2**20)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


def raise_soft_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (as far as the kernel allows); return (soft, hard) now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def reserve(limit: int | None = None) -> int:
    """Return the descriptors kept free for everything but sandboxes: an eighth of the limit, at least 64."""
    return max(_MIN_RESERVE, (soft_limit() if limit is None else limit) // 8)


def open_fds() -> int:
    """Return how many descriptors this process has open."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own
    except OSError:
        return 0


def has_room(more: int = 1) -> bool:
    """Tell whether ``more`` sandboxes fit in the descriptors left, :func:`reserve` kept aside."""
    limit = soft_limit()
    return limit - open_fds() - reserve(limit) >= FDS_PER_SANDBOX * more


def sandboxes_that_fit(limit: int | None = None, in_use: int = 64) -> int:
    """Return how many sandboxes a process with ``limit`` descriptors (``in_use`` of them taken) can hold."""
    limit = soft_limit() if limit is None else limit
    return max(0, (limit - in_use - reserve(limit)) // FDS_PER_SANDBOX)
