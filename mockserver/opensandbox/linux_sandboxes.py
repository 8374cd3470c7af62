"""The OpenSandbox mock's sandboxes on the linux runtime: making them, their files, and keeping them in step.

:class:`LinuxSandboxes` is what ``OpenSandboxMock(runtime="linux")`` composes in; the model keeps deciding
everything and this module follows it.

* **Files**: each record's ``fs`` becomes a :class:`~mockserver.linux.hostfs.HostFileSystem` on its real
  sandbox as soon as the record appears, so execd's ``/files`` and ``/directories`` rules read and write
  what the processes see. A record restored from a snapshot (or from a state file) has its files written
  into the real sandbox when that is made.
* **Making** (on first use: the first request execd or a sandbox port admits): a sandbox named by the
  record's id with its ``env``, hostname (the id's first 12 characters, as Docker's) and
  ``resourceLimits.memory``; then the sidecar's policy (``networkPolicy``) in the record's enforcement mode
  (``dns`` or ``dns+nft``) is compiled into its nft table.
* **Keeping in step** (:meth:`reconcile`, after every request the mock answers and every clock move):
  ``Paused`` freezes the sandbox, ``Running`` thaws it, a policy the sidecar's ``/policy`` or the lifecycle
  ``networkpolicy`` changed is swapped in one nft transaction (before the request's answer starts),
  ``Failed``, ``Stopping``, deleted and expired sandboxes are destroyed.
* **OOM**: a process the memory cgroup's OOM killer ends takes the container with it, as on Docker: the
  record turns ``Failed`` with the runtime's OOM status (:meth:`oom`) and the sandbox is destroyed.
* **Ports**: any port but execd's and the sidecar's relays to the sandbox's own service; Jupyter's port
  (44771) listens inside every sandbox (:mod:`.linux_jupyter`), for the code-interpreter SDK's health check.

Known deviations: ``image`` and ``entrypoint`` choose nothing (the sandbox is the host's system folders,
read-only, and no entrypoint runs); ``resourceLimits.cpu`` is reported by ``/metrics`` but not enforced; a
snapshot keeps the writable files only (a sandbox created from it starts with them and no process).
"""

from __future__ import annotations

import asyncio
import contextlib

from mockserver.core import DnsTable
from mockserver.linux import LinuxRuntime, LinuxSandbox, SandboxLimits
from mockserver.linux.bindings import SandboxBindings
from mockserver.linux.hostfs import HostFileSystem

from .linux_egress import OpenSandboxMode, opensandbox_apply
from .linux_jupyter import JupyterListeners
from .model.config import ServerConfig
from .model.egress import effective_policy
from .model.execd import disk_limit_bytes, memory_limit_bytes
from .model.operations import OpenSandboxModel
from .model.records import SandboxRecord

__all__ = ["LinuxSandboxes"]

#: States whose container no longer runs: the real sandbox is destroyed.
ENDED = frozenset({"Failed", "Terminated", "Stopping"})


class LinuxSandboxes(SandboxBindings[SandboxRecord, object]):
    """The real sandboxes of one OpenSandbox mock (each record's applied policy object); thread-safe."""

    def __init__(
        self, state: OpenSandboxModel, config: ServerConfig, dns: DnsTable, limits: SandboxLimits | None = None
    ) -> None:
        super().__init__(dns, limits)
        self.state = state
        self.config = config
        self.jupyter = JupyterListeners()

    @property
    def mode(self) -> OpenSandboxMode:
        """Return the egress sidecar's enforcement mode."""
        return "dns+nft" if self.config.enforcement == "dns+nft" else "dns"

    # -- making ------------------------------------------------------------------------------------

    def _make(self, record: SandboxRecord) -> LinuxSandbox:
        def make(runtime: LinuxRuntime) -> LinuxSandbox:
            sandbox = runtime.create_sandbox(
                record.id,
                hostname=record.id[:12],
                env=dict(record.spec.env),
                memory_bytes=memory_limit_bytes(record),
                disk_bytes=disk_limit_bytes(record),
            )
            try:
                policy = effective_policy(record)
                opensandbox_apply(sandbox.firewall, policy, self.mode, self.dns)
                self._applied[record.id] = policy
                self._write_restored(record.id, sandbox)
                self.jupyter.open(record.id, sandbox)
            except BaseException:
                sandbox.destroy()
                raise
            return sandbox

        return self.host.ensure(record.id, make)

    def ensure(self, record: SandboxRecord) -> LinuxSandbox:
        """Return the real sandbox of ``record``, making it now if needed (blocking)."""
        self._attach_files(record)
        sandbox = self._make(record)
        self._follow(record, sandbox)
        return sandbox

    async def ensure_async(self, record: SandboxRecord) -> LinuxSandbox:
        """Return the real sandbox of ``record`` without blocking the event loop."""
        sandbox = self.host.get(record.id)
        if sandbox is None:
            return await asyncio.to_thread(self.ensure, record)
        self._follow(record, sandbox)
        return sandbox

    def _attach_files(self, record: SandboxRecord) -> None:
        with self._lock:
            if isinstance(record.fs, HostFileSystem):
                return
            restored = any(not e.is_dir and not e.path.startswith("/etc/") for e in record.fs.walk("/"))
            if record.spec.snapshot_id or restored:
                self._restore[record.id] = record.fs.dump()
            record.fs = HostFileSystem(lambda: self.ensure(record), user="root", unmade=lambda: self._unmade(record.id))

    # -- keeping in step ---------------------------------------------------------------------------

    def _follow(self, record: SandboxRecord, sandbox: LinuxSandbox) -> None:
        if record.state == "Paused":
            with contextlib.suppress(Exception):
                sandbox.freeze()
        elif sandbox.state == "frozen":
            sandbox.thaw()
        policy = effective_policy(record)
        if self._applied.get(record.id, policy) is not policy or record.id not in self._applied:
            opensandbox_apply(sandbox.firewall, policy, self.mode, self.dns)
            self._applied[record.id] = policy

    def reconcile(self) -> None:
        """Bring every real sandbox in line with its record (see the module docstring); cheap when nothing changed."""
        with self.state.lock:
            records = dict(self.state.sandboxes)
        for record in records.values():
            self._attach_files(record)
        for key in self.host.held():
            found = records.get(key)
            sandbox = self.host.get(key)
            if found is None or found.state in ENDED:
                self.forget(key)
            elif sandbox is not None:
                self._follow(found, sandbox)

    def oom(self, record: SandboxRecord) -> None:
        """The container was OOM-killed: the record turns Failed with the runtime's OOM status; destroy it."""
        with contextlib.suppress(Exception):
            self.state.fail(record.id, *self.state.profile.oom_status())
        self.forget(record.id)

    def forget(self, key: str) -> None:
        """Destroy the real sandbox of ``key`` and close its Jupyter port."""
        self.jupyter.close(key)
        super().forget(key)

    def clear(self) -> None:
        """Destroy every real sandbox and its Jupyter port."""
        self.jupyter.close_all()
        super().clear()

    def close(self) -> None:
        """Destroy every real sandbox, close the Jupyter ports and the runtime."""
        self.jupyter.close_all()
        super().close()
