"""What every provider's linux runtime keeps for its records: their real sandboxes, pending files, applied egress.

A provider mock on ``runtime="linux"`` binds each of its sandbox records to a real
:class:`~mockserver.linux.LinuxSandbox`, made on first use. :class:`SandboxBindings` is the part that does
not depend on the provider: the :class:`~mockserver.linux.host.LinuxHost` holding the sandboxes, the files
a restored record waits to have written in (:meth:`SandboxBindings._write_restored` when its sandbox is
made), what egress each sandbox enforces (:meth:`SandboxBindings.applied_policy`), destroying them
(:meth:`~SandboxBindings.forget`, :meth:`~SandboxBindings.clear`, :meth:`~SandboxBindings.close`) and the
app relaying to a port inside a record's sandbox (:meth:`~SandboxBindings.port_app`). A provider subclass
says how a record's sandbox is made and kept in step (:meth:`~SandboxBindings.ensure_async`).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from mockserver.core.clock import VirtualClock
from mockserver.core.dns import DnsTable

from .host import LinuxHost
from .hostfs import HostFileSystem
from .ingress import ASGIApp, Scope, port_proxy
from .limits import SandboxLimits
from .sandbox import LinuxSandbox

__all__ = ["SandboxBindings", "empty_dump"]


def empty_dump() -> dict[str, Any]:
    """Return the files of a sandbox nothing has used yet (the writable folders are made with it)."""
    return {"version": 1, "user": "root", "entries": []}


#: A provider's sandbox record.
R = TypeVar("R")
#: What a provider remembers it applied to a real sandbox (its egress policy, and more).
A = TypeVar("A")


class SandboxBindings(ABC, Generic[R, A]):
    """The real sandboxes behind one mock's records, keyed by record id; thread-safe."""

    def __init__(self, dns: DnsTable, limits: SandboxLimits | None = None) -> None:
        self.dns = dns
        self.host = LinuxHost(dns, limits=limits)
        self._lock = threading.RLock()
        self._restore: dict[str, Mapping[str, Any]] = {}
        self._applied: dict[str, A] = {}

    def follow_clock(self, clock: VirtualClock) -> None:
        """Let the sandboxes' ``sleep`` follow the mock's ``clock`` under its ``manual`` mode (docs/runtime.md)."""
        self.host.follow_clock(clock)

    @abstractmethod
    async def ensure_async(self, record: R) -> LinuxSandbox:
        """Return the real sandbox of ``record`` (made now if needed, in step with it) without blocking the loop."""

    # -- files -------------------------------------------------------------------------------------

    def _unmade(self, key: str) -> Mapping[str, Any] | None:
        """Return what the files of ``key`` will be while its sandbox is not made (None once it is)."""
        if self.host.get(key) is not None:
            return None
        with self._lock:
            pending = self._restore.get(key)
        return empty_dump() if pending is None else pending

    def _write_restored(self, key: str, sandbox: LinuxSandbox) -> None:
        """Write the files ``key`` was restored with (if any) into its newly made ``sandbox``."""
        with self._lock:
            dump = self._restore.pop(key, None)
        if dump is not None:
            HostFileSystem(lambda: sandbox).load_dump(dump)

    # -- egress ------------------------------------------------------------------------------------

    def applied_policy(self, key: str) -> tuple[bool, object]:
        """Return whether the real sandbox of ``key`` enforces a policy yet, and which (the record's object)."""
        if key not in self._applied:
            return (False, None)
        return (True, self._policy_of(self._applied[key]))

    def _policy_of(self, applied: A) -> object:
        """Return the egress policy among what was applied (all of it unless a provider keeps more)."""
        return applied

    # -- ending ------------------------------------------------------------------------------------

    def forget(self, key: str) -> None:
        """Destroy the real sandbox of ``key`` (its record ended)."""
        with self._lock:
            self._restore.pop(key, None)
        self._applied.pop(key, None)
        self.host.forget(key)

    def clear(self) -> None:
        """Destroy every real sandbox (the mock was reset or its state replaced)."""
        with self._lock:
            self._restore.clear()
        self._applied.clear()
        self.host.clear()

    def close(self) -> None:
        """Destroy every real sandbox and close the runtime."""
        self.host.close()

    # -- ports -------------------------------------------------------------------------------------

    def port_app(self, record: R, port: int) -> ASGIApp:
        """Return the app relaying to ``port`` inside the sandbox of ``record``."""

        async def sandbox_of(scope: Scope) -> LinuxSandbox:
            return await self.ensure_async(record)

        return port_proxy(sandbox_of, port)
