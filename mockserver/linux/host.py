"""One mock's linux sandboxes: a :class:`~mockserver.linux.LinuxRuntime` and its sandboxes by provider id.

A provider mock built with ``runtime="linux"`` keeps one :class:`LinuxHost`. The real sandbox behind a
provider's sandbox record is made on first use (the first command, file, port or PTY), not at create: the
contract suites create hundreds of sandboxes that never run anything. :meth:`LinuxHost.ensure` makes it
once however many threads ask at the same time, with the ``make`` callable the provider gives (which knows
the record's limits, environment and egress policy); :meth:`LinuxHost.forget` destroys it when the record
goes away. Everything is thread-safe; :meth:`ensure_async` does the making off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future

from mockserver.core.clock import VirtualClock
from mockserver.core.dns import DnsTable

from .limits import SandboxLimits
from .runtime import LinuxRuntime
from .sandbox import LinuxSandbox

__all__ = ["LinuxHost", "MakeSandbox"]

#: Builds the real sandbox of one provider record from the runtime.
MakeSandbox = Callable[[LinuxRuntime], LinuxSandbox]


class LinuxHost:
    """A runtime and the sandboxes it holds for one mock; :meth:`close` when the mock is done."""

    def __init__(self, dns: DnsTable, *, warm: int = 1, limits: SandboxLimits | None = None) -> None:
        self.runtime = LinuxRuntime(dns=dns, warm=warm, limits=limits)
        self._lock = threading.Lock()
        self._sandboxes: dict[str, LinuxSandbox] = {}
        self._making: dict[str, Future[LinuxSandbox]] = {}
        self._closed = False

    def get(self, key: str) -> LinuxSandbox | None:
        """Return the live sandbox made for ``key``, or None when there is none (yet)."""
        with self._lock:
            sandbox = self._sandboxes.get(key)
        return sandbox if sandbox is not None and sandbox.state != "destroyed" else None

    def ensure(self, key: str, make: MakeSandbox) -> LinuxSandbox:
        """Return the sandbox of ``key``, making it with ``make`` when there is none; one maker at a time."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the linux runtime of this mock is closed")
            sandbox = self._sandboxes.get(key)
            if sandbox is not None and sandbox.state != "destroyed":
                return sandbox
            pending = self._making.get(key)
            mine = pending is None
            if pending is None:
                pending = Future()
                self._making[key] = pending
        if not mine:
            return pending.result()
        try:
            made = make(self.runtime)
        except BaseException as exc:
            with self._lock:
                self._making.pop(key, None)
            pending.set_exception(exc)
            raise
        with self._lock:
            self._making.pop(key, None)
            self._sandboxes[key] = made
        pending.set_result(made)
        return made

    async def ensure_async(self, key: str, make: MakeSandbox) -> LinuxSandbox:
        """:meth:`ensure` without blocking the event loop (the making runs in a worker thread)."""
        sandbox = self.get(key)
        if sandbox is not None:
            return sandbox
        return await asyncio.to_thread(self.ensure, key, make)

    def forget(self, key: str) -> None:
        """Destroy the sandbox of ``key`` (kill its processes, remove its namespaces and files), if any."""
        with self._lock:
            sandbox = self._sandboxes.pop(key, None)
        if sandbox is not None:
            with contextlib.suppress(Exception):
                sandbox.destroy()

    def held(self) -> list[str]:
        """Return the keys that have a sandbox."""
        with self._lock:
            return list(self._sandboxes)

    def clear(self) -> None:
        """Destroy every sandbox (the mock was reset)."""
        for key in self.held():
            self.forget(key)

    def follow_clock(self, clock: VirtualClock) -> None:
        """Let the sandboxes' ``sleep`` follow the mock's ``clock`` (see :meth:`LinuxRuntime.follow_clock`)."""
        self.runtime.follow_clock(clock)

    def close(self) -> None:
        """Destroy every sandbox and close the runtime; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.clear()
        self.runtime.close()
