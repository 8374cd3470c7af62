"""What runs inside a mock sandbox: an in-memory filesystem, a command emulator and egress probes.

The names below load on first use (the command emulator is large, and most requests never run a command),
so importing :mod:`mockserver.sandbox.filesystem` does not load the shell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockserver.core.lazy import lazy_name

if TYPE_CHECKING:
    from .commands import CommandEmulator
    from .filesystem import FileInfo, FileSystem, FsError, FsErrorCode, normpath
    from .network import EgressGate, HttpResponse, HttpTable, OpenGate, Resolution
    from .steps import Completed, Exit, Handler, Invocation, Output, Sleep, Step

_HOMES = {
    "CommandEmulator": ".commands",
    "FileInfo": ".filesystem",
    "FileSystem": ".filesystem",
    "FsError": ".filesystem",
    "FsErrorCode": ".filesystem",
    "normpath": ".filesystem",
    "EgressGate": ".network",
    "HttpResponse": ".network",
    "HttpTable": ".network",
    "OpenGate": ".network",
    "Resolution": ".network",
    "Completed": ".steps",
    "Exit": ".steps",
    "Handler": ".steps",
    "Invocation": ".steps",
    "Output": ".steps",
    "Sleep": ".steps",
    "Step": ".steps",
}

__all__ = [
    "CommandEmulator",
    "Completed",
    "EgressGate",
    "Exit",
    "FileInfo",
    "FileSystem",
    "FsError",
    "FsErrorCode",
    "Handler",
    "HttpResponse",
    "HttpTable",
    "Invocation",
    "OpenGate",
    "Output",
    "Resolution",
    "Sleep",
    "Step",
    "normpath",
]


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _HOMES, name)
