"""What runs inside a mock sandbox: an in-memory filesystem, a command emulator and egress probes."""

from .commands import CommandEmulator
from .filesystem import FileInfo, FileSystem, FsError, FsErrorCode, normpath
from .local import LocalBackend
from .network import EgressGate, HttpResponse, HttpTable, OpenGate, Resolution
from .steps import Completed, Exit, Handler, Invocation, Output, Sleep, Step

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
    "LocalBackend",
    "OpenGate",
    "Output",
    "Resolution",
    "Sleep",
    "Step",
    "normpath",
]
