"""The command emulator behind the runtime interface: commands only, as steps on the mock's virtual clock.

A sandbox's commands run in a :class:`Runner` (the shared :class:`~mockserver.sandbox.CommandEmulator`
bound to its filesystem and egress gate, or a stand-in a test or a mutant gives); a runner yields
:class:`~mockserver.sandbox.steps.Output` (the runtime's output event), ``Sleep`` (virtual seconds the
provider waits on its clock) and ``Exit`` (the runtime's end: ``Exited(code)``). :class:`EmulatorBackend`
builds each sandbox's runner; the emulator has no terminals, ports or code contexts
(:data:`~.interface.EMULATOR`). The emulator's top-level shell ends with an ``Exit`` that says where it ended
(:class:`~mockserver.sandbox.steps.ShellEnd`), which is what a bash session keeps between runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from mockserver.sandbox.steps import Step

from .interface import EMULATOR, Capabilities

__all__ = ["EmulatorBackend", "Runner"]

#: A provider's sandbox record.
R = TypeVar("R")


class Runner(Protocol):
    """What runs one command in one sandbox: yields output, sleeps and the exit as steps."""

    def run(
        self, command: str | Sequence[str], *, env: Mapping[str, str], cwd: str, stdin: bytes = b""
    ) -> Iterator[Step]:
        """Yield the command's steps (``Exit`` last); an open ``stdin`` pipe is waited on (``WaitStdin``)."""
        ...


class EmulatorBackend(Generic[R]):
    """The emulator for one provider: the runner of each record, built by ``factory``.

    With ``key`` a record's runner is built once and kept (until :meth:`clear`); without, each command gets a
    fresh one.
    """

    capabilities: Capabilities = EMULATOR

    def __init__(self, factory: Callable[[R], Runner], key: Callable[[R], str] | None = None) -> None:
        self.factory = factory
        self.key = key
        self._runners: dict[str, Runner] = {}

    def runner_for(self, record: R) -> Runner:
        """Return the runner the record's commands run in."""
        if self.key is None:
            return self.factory(record)
        key = self.key(record)
        runner = self._runners.get(key)
        if runner is None:
            runner = self._runners[key] = self.factory(record)
        return runner

    def clear(self) -> None:
        """Forget every kept runner (the sandboxes are gone or replaced)."""
        self._runners.clear()
