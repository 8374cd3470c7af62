"""The TensorLake mock's sandboxes on the linux runtime: making them, their files, and keeping them in step.

:class:`LinuxSandboxes` is what ``TensorLakeMock(runtime="linux")`` composes in. The model keeps deciding
everything; this module makes the real sandbox behind a record and follows the record's changes:

* **Making** (on first use: a command, a file, a port, a PTY): a sandbox named by the record's id, with
  ``resources.memory_mb`` as its memory limit, then the record's ``network`` enforced by its firewall
  (:func:`.linux_egress.tensorlake_apply`). A sandbox restored from a snapshot or copied gets the
  snapshot's files written in first.
* **Files**: every record's filesystem is a :class:`~mockserver.linux.hostfs.HostFileSystem` on its real
  sandbox (:meth:`new` / :meth:`restore`, the model's ``filesystems``), so the management API's files
  routes read and write what the processes see.
* **Changes** (:meth:`reconcile`, the model's ``on_change``): ``suspended`` freezes the sandbox, running
  again thaws it, a PATCH of ``network`` replaces its nft table in one transaction before the PATCH
  answers, a resize sets the new memory limit; terminating destroys it (:meth:`forget`).
* **Ports**: a user port's app relays to the port inside the sandbox (:func:`mockserver.linux.ingress.port_proxy`).

Known deviations: a suspended sandbox's processes are frozen in place (cgroup freezer, else SIGSTOP), not
checkpointed, and its memory stays in use; a checkpoint (snapshot) keeps the writable files only, so a
sandbox restored from it (or copied) starts with those files and no process running; ``cpus``, ``disk_mb``
and GPUs are recorded, not enforced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from contracts.tensorlake import NetworkConfig
from mockserver.core.dns import DnsTable
from mockserver.linux import LinuxRuntime, LinuxSandbox, SandboxLimits
from mockserver.linux.bindings import SandboxBindings
from mockserver.linux.hostfs import HostFileSystem
from mockserver.sandbox.filesystem import FileSystem

from .linux_egress import tensorlake_apply
from .model.records import Sandbox

__all__ = ["LinuxSandboxes"]

#: Statuses in which the sandbox's processes are stopped.
FROZEN = frozenset({"suspended"})
#: What was applied to a real sandbox: the record's ``network`` object and the memory limit in bytes.
Applied = tuple[NetworkConfig | None, int]


class LinuxSandboxes(SandboxBindings[Sandbox, Applied]):
    """The real sandboxes of one TensorLake mock; thread-safe."""

    def __init__(
        self, dns: DnsTable, lookup: Callable[[str], Sandbox | None], limits: SandboxLimits | None = None
    ) -> None:
        super().__init__(dns, limits)
        self.lookup = lookup

    # -- the model's filesystems -------------------------------------------------------------------

    def new(self, ident: str) -> FileSystem:
        """Return the files of a new sandbox (its real sandbox is made on first use)."""
        return HostFileSystem(lambda: self.ensure(ident), unmade=lambda: self._unmade(ident))

    def restore(self, ident: str, dump: Mapping[str, Any]) -> FileSystem:
        """Return the files of a sandbox restored from ``dump``: written in when its sandbox is made."""
        with self._lock:
            self._restore[ident] = dump
        return HostFileSystem(lambda: self.ensure(ident), unmade=lambda: self._unmade(ident))

    # -- making ------------------------------------------------------------------------------------

    def _maker(self, ident: str) -> Callable[[LinuxRuntime], LinuxSandbox]:
        def make(runtime: LinuxRuntime) -> LinuxSandbox:
            record = self.lookup(ident)
            memory = record.resources.memory_mb << 20 if record is not None else None
            disk = record.resources.disk_mb << 20 if record is not None else None
            sandbox = runtime.create_sandbox(ident, hostname=ident[:63], memory_bytes=memory, disk_bytes=disk)
            try:
                network = record.network if record is not None else None
                tensorlake_apply(sandbox.firewall, network, self.dns)
                self._applied[ident] = (network, memory or 0)
                self._write_restored(ident, sandbox)
                if record is not None and record.status in FROZEN:
                    sandbox.freeze()
            except BaseException:
                sandbox.destroy()
                raise
            return sandbox

        return make

    def ensure(self, ident: str) -> LinuxSandbox:
        """Return the real sandbox of record ``ident``, making it now if needed (blocking)."""
        sandbox = self.host.ensure(ident, self._maker(ident))
        record = self.lookup(ident)
        if record is not None:
            self.reconcile(record)  # a change that landed while it was being made
        return sandbox

    async def ensure_async(self, record: Sandbox) -> LinuxSandbox:
        """Return the real sandbox of ``record`` without blocking the event loop."""
        sandbox = await self.host.ensure_async(record.id, self._maker(record.id))
        self.reconcile(record)
        return sandbox

    # -- following the model -----------------------------------------------------------------------

    def reconcile(self, record: Sandbox) -> None:
        """Bring the real sandbox (if made) in line with ``record``: frozen or not, egress, memory limit."""
        sandbox = self.host.get(record.id)
        if sandbox is None:
            return
        if record.status in FROZEN:
            with contextlib.suppress(Exception):
                sandbox.freeze()
        elif sandbox.state == "frozen":
            sandbox.thaw()
        memory = record.resources.memory_mb << 20
        network, applied_memory = self._applied.get(record.id, (None, 0))
        if record.network is not network:
            tensorlake_apply(sandbox.firewall, record.network, self.dns)
        if memory != applied_memory and sandbox.cgroup is not None:
            sandbox.cgroup.set_memory(memory)
        self._applied[record.id] = (record.network, memory)

    def _policy_of(self, applied: Applied) -> NetworkConfig | None:
        """Return the ``network`` object among what was applied."""
        return applied[0]
