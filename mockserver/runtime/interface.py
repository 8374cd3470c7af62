"""The runtime interface: capabilities, processes, terminals and their two events (output, exit).

Both runtimes speak it. The emulator's commands yield :class:`Output` steps and end with an ``Exit`` step
(:mod:`mockserver.sandbox.steps`); a real process's events are relayed as :class:`Output` and
:class:`Exited` (:func:`mockserver.runtime.linux.relay`). What a runtime can serve beyond commands is its
:class:`Capabilities`; a provider answers its documented refusal where a capability is missing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from mockserver.core.exits import Exited
from mockserver.sandbox.steps import Output

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


#: One event of a running process: some output, or its end (always the last event).
RuntimeEvent = Output | Exited

#: The exit code of a command that could not start, by the runtime's reason (a shell's: 126 when the file
#: is not executable); any other reason (no such program, no such working directory) is 127.
SPAWN_CODES = {"permission_denied": 126}


def spawn_exit_code(reason: str) -> int:
    """Return the shell's exit code of a command that could not start for ``reason``."""
    return SPAWN_CODES.get(reason, 127)


@dataclass(frozen=True)
class Capabilities:
    """What a runtime serves beyond running commands.

    ``pty``: programs on terminals; ``ports``: connections to ports inside a sandbox (tunnels, a sandbox's
    own services); ``code``: code-interpreter contexts (a Python or JavaScript kernel per context);
    ``sessions``: bash sessions whose exported variables and working directory persist between runs.
    """

    pty: bool = False
    ports: bool = False
    code: bool = False
    sessions: bool = False


#: The command emulator's capabilities: commands, and bash sessions that keep their state (the emulated shell's).
EMULATOR = Capabilities(sessions=True)
#: The linux runtime's capabilities: everything a real process has.
LINUX = Capabilities(pty=True, ports=True, code=True, sessions=True)


class Process(Protocol):
    """A started process as a provider drives it."""

    @property
    def running(self) -> bool:
        """Tell whether the process still runs."""
        ...

    def events(self, since: int = 0) -> AsyncIterator[RuntimeEvent]:
        """Yield its events from the ``since``-th on, as they come; :class:`Exited` last."""
        ...

    def write_stdin(self, data: bytes) -> bool:
        """Feed ``data`` to its stdin; False when the runtime could not take it (the sandbox is paused or gone)."""
        ...

    def close_stdin(self) -> None:
        """Close its stdin (it sees end of file)."""
        ...

    def signal(self, number: int) -> None:
        """Send ``number`` to its process group (nothing once it ended)."""
        ...

    def kill(self) -> None:
        """SIGKILL its process group."""
        ...


class Terminal(Process, Protocol):
    """A process on a terminal: keystrokes go in on stdin, the screen comes out as ``stdout`` output."""

    def resize(self, rows: int, cols: int) -> None:
        """Set the terminal's size (its foreground process group gets SIGWINCH)."""
        ...
