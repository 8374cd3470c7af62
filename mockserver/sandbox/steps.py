"""Steps a sandboxed command yields while it runs, and the contract for command handlers."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
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


class StdinPipe:
    """A process's stdin pipe: what its writer has written so far, and whether the writer closed it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False


class OpenStdin(bytes):
    """The stdin of a process whose pipe is still open: empty as bytes, its content arrives through ``pipe``.

    It travels through the shell as any stdin does; a command that reads it waits on the pipe
    (:func:`read_stdin`, :func:`stream_stdin`), and a redirection or a pipeline stage replaces it.
    """

    pipe: StdinPipe

    def __new__(cls, pipe: StdinPipe) -> OpenStdin:
        """Return an open stdin reading from ``pipe``."""
        made = super().__new__(cls, b"")
        made.pipe = pipe
        return made


@dataclass(frozen=True)
class WaitStdin:
    """Ask the caller to resume the command once its stdin pipe holds more than ``offset`` bytes or is closed.

    Only a caller that passed an :class:`OpenStdin` sees it (the TensorLake process runtime, for a process
    started with ``stdin_mode: "pipe"``); it feeds and closes the pipe.
    """

    pipe: StdinPipe
    offset: int


Step = Output | Sleep | Exit | WaitStdin


def read_stdin(stdin: bytes) -> Generator[Step, None, bytes]:
    """Return all of ``stdin``; an open pipe is waited on until its writer closes it."""
    if not isinstance(stdin, OpenStdin):
        return stdin
    pipe = stdin.pipe
    while not pipe.closed:
        yield WaitStdin(pipe, len(pipe.data))
    return bytes(pipe.data)


def stream_stdin(stdin: bytes) -> Iterator[Step]:
    """Yield ``stdin`` to stdout; an open pipe's writes as they come, until its writer closes it."""
    if not isinstance(stdin, OpenStdin):
        if stdin:
            yield out(stdin)
        return
    pipe, sent = stdin.pipe, 0
    while True:
        closed = pipe.closed
        if len(pipe.data) > sent:
            yield out(bytes(pipe.data[sent:]))
            sent = len(pipe.data)
        if closed:
            return
        yield WaitStdin(pipe, sent)


def sleep_end(now: float, seconds: float, deadline: float | None) -> tuple[float, bool]:
    """Return when a ``Sleep(seconds)`` begun at ``now`` ends, and whether a timeout at ``deadline`` kills it there.

    The one timeout rule of every step walker: a command's deadline is fixed when it starts (a real process is
    killed after the wall time since its start, whatever it was doing), a sleep that would end past it ends at the
    deadline (at once, if the deadline has already gone by) and the command is killed; one that ends on or
    before it runs whole.
    """
    end = now + seconds
    if deadline is not None and end > deadline:
        return max(now, deadline), True
    return end, False


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
