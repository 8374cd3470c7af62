"""The emulator's interface on a real sandbox, for tests: ``run(command, *, env, cwd, stdin) -> Iterator[Step]``.

:class:`StepRunner` has the signature of :meth:`mockserver.sandbox.CommandEmulator.run`, so the runtime's
:class:`~mockserver.runtime.emulator.Runner` protocol and any code walking ``Output``/``Sleep``/``Exit`` steps
take it unchanged: the tests run the same commands on both and compare their steps. It never
yields ``Sleep`` (real time passes by itself); ``Exit`` carries the shell-style code (128 + signal when
killed, so 137 for SIGKILL and OOM kills). A command that cannot start yields the shell's message on stderr
and ``Exit(127)`` (not found, or a missing working directory) or ``Exit(126)`` (not executable), as
``/bin/sh`` would. Closing the iterator early kills the command.

The blocking iterator must not run on an event loop; :meth:`StepRunner.astream` is the same walk for
async callers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence

from mockserver.linux.process import Exited, LinuxProcess, OutputChunk
from mockserver.linux.sandbox import LinuxSandbox, SandboxStateError, SpawnError
from mockserver.runtime import spawn_exit_code
from mockserver.sandbox.steps import Exit, Output, Step

__all__ = ["StepRunner", "status_steps"]


def _failure(exc: SpawnError) -> list[Step]:
    return [Output("stderr", f"sh: {exc.message}\n".encode()), Exit(spawn_exit_code(exc.code))]


def _stop(proc: LinuxProcess) -> None:
    """Kill a command its reader abandoned (nothing to do if it ended, or if the sandbox is paused or gone)."""
    if proc.running:
        with contextlib.suppress(SandboxStateError):
            proc.kill()


def status_steps(event: OutputChunk | Exited) -> Step:
    """Return the step of one process event (PTY output counts as stdout)."""
    if isinstance(event, OutputChunk):
        return Output("stderr" if event.stream == "stderr" else "stdout", event.data)
    return Exit(event.shell_code)


class StepRunner:
    """Run commands in one sandbox, yielding emulator steps."""

    def __init__(self, sandbox: LinuxSandbox, *, timeout: float | None = None) -> None:
        self.sandbox = sandbox
        self.timeout = timeout

    def _feed(self, proc: LinuxProcess, stdin: bytes) -> None:
        if stdin:
            proc.write_stdin(stdin)
        proc.close_stdin()

    def run(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bytes = b"",
    ) -> Iterator[Step]:
        """Return the steps of running ``command`` (a shell line, or an argv without a shell); ends with Exit."""
        return self._walk(command, dict(env or {}), cwd, stdin)

    def _walk(self, command: str | Sequence[str], env: dict[str, str], cwd: str, stdin: bytes) -> Iterator[Step]:
        try:
            proc = self.sandbox.start_process(command, env=env, cwd=cwd, stdin=True, timeout=self.timeout)
        except SpawnError as exc:
            yield from _failure(exc)
            return
        try:
            self._feed(proc, stdin)
            for event in proc.events():
                yield status_steps(event)
        finally:
            _stop(proc)

    async def astream(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bytes = b"",
    ) -> AsyncIterator[Step]:
        """Yield the same steps as :meth:`run` without blocking the event loop."""
        try:
            proc = await self.sandbox.start_process_async(
                command, env=dict(env or {}), cwd=cwd, stdin=True, timeout=self.timeout
            )
        except SpawnError as exc:
            for step in _failure(exc):
                yield step
            return
        try:
            self._feed(proc, stdin)
            async for event in proc.aevents():
                yield status_steps(event)
        finally:
            _stop(proc)
