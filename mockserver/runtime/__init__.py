"""The runtime seam: what the providers run commands, terminals and ports on, behind one interface.

A provider (``mockserver.tensorlake``, ``mockserver.opensandbox``) turns the events of a runtime into its own
records and wire events; it never walks the emulator's steps or a real process's events itself.

* :mod:`.interface`: the vocabulary. A runtime's :class:`~.interface.Capabilities` (``pty``, ``ports``,
  ``code``, ``sessions``), a :class:`~.interface.Process` and a :class:`~.interface.Terminal`, and their
  events: :class:`~.interface.Output` and :class:`~.interface.Exited`; the spawn codes (126, 127) a command
  that cannot start ends with.
* :mod:`.emulator`: the command emulator (:mod:`mockserver.sandbox`) as a runtime: one
  :class:`~.emulator.Runner` per sandbox, no terminals, no ports.
* :mod:`.walk`: the one walker of the emulator's steps on the virtual clock (output, sleeps, stdin waits, a
  timeout deadline fixed at the start, periodic ticks) both providers' emulator runtimes use.
* :mod:`.linux`: real processes in Linux namespaces (:mod:`mockserver.linux`) as a runtime: the one relay
  loop from a real process's events to the runtime's, terminals, ports and the shell execd picks.

The runtime layer sits between the providers and ``mockserver.sandbox`` / ``mockserver.linux``: it imports
those two and the core, never a provider, the web stack or the admin service (``lint-imports``).
"""

from __future__ import annotations

from .interface import (
    EMULATOR,
    LINUX,
    SPAWN_CODES,
    Capabilities,
    Exited,
    Output,
    Process,
    RuntimeEvent,
    Terminal,
    spawn_exit_code,
)

__all__ = [
    "EMULATOR",
    "LINUX",
    "SPAWN_CODES",
    "Capabilities",
    "Exited",
    "Output",
    "Process",
    "RuntimeEvent",
    "Terminal",
    "spawn_exit_code",
]
