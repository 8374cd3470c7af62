"""Steps a sandboxed command yields while it runs, and the contract for command handlers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from .filesystem import FileSystem, normpath

Stream = Literal["stdout", "stderr"]


@dataclass(frozen=True)
class Output:
    """Carry a chunk of bytes the command wrote to stdout or stderr."""

    stream: Stream
    data: bytes


@dataclass(frozen=True)
class Sleep:
    """Ask the caller to advance its (virtual) clock by `seconds` before resuming the command."""

    seconds: float


@dataclass(frozen=True)
class ShellEnd:
    """A shell's variables and working directory when it ended (what a bash session keeps for its next run)."""

    cwd: str
    env: Mapping[str, str]


@dataclass(frozen=True)
class Exit:
    """End the command with exit status `code`; always the last step.

    The emulator's top-level shell also reports where it ended (``shell``), so a session can carry its
    variables and directory to its next run; other runners leave it None. It takes no part in comparisons.
    """

    code: int
    shell: ShellEnd | None = field(default=None, compare=False, repr=False)


Step = Output | Sleep | Exit


@dataclass(frozen=True)
class Completed:
    """Collect the result of running a command to completion."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    slept: float
    timed_out: bool = False


@dataclass(frozen=True)
class Invocation:
    """Describe one command invocation handed to a handler."""

    argv: tuple[str, ...]
    fs: FileSystem
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "/"
    stdin: bytes = b""
    user: str = "user"
    hostname: str = "sandbox"

    @property
    def name(self) -> str:
        """Return the command name (argv[0] without directories)."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        """Return the arguments after argv[0]."""
        return self.argv[1:]

    def path(self, name: str) -> str:
        """Resolve `name` against the working directory."""
        return normpath(name, self.cwd)


Handler = Callable[[Invocation], Iterable[Step]]


def out(text: str | bytes) -> Output:
    """Return a stdout step."""
    return Output("stdout", text.encode() if isinstance(text, str) else text)


def err(text: str | bytes) -> Output:
    """Return a stderr step."""
    return Output("stderr", text.encode() if isinstance(text, str) else text)


def fail(message: str, code: int = 1) -> Iterator[Step]:
    """Yield `message` (plus newline) on stderr and then `Exit(code)`."""
    yield err(message + "\n")
    yield Exit(code)
