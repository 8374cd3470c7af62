"""Deterministic command emulator: runs shell lines or argv against a sandbox's in-memory filesystem.

The emulator never sleeps and never reads a clock: `run()` yields `Output`, `Sleep` and a final
`Exit` step, and the caller decides how virtual time passes (and may stop iterating to kill).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass

from .builtins import TEXT_BUILTINS
from .expand import ShellState, expand_string, expand_word
from .filesystem import FileSystem, FsError, normpath
from .fileutils import FILE_BUILTINS
from .matching import MATCHING_BUILTINS
from .network import EgressGate, HttpTable, OpenGate
from .probes import make_probes
from .shell import (
    EMULATOR_LIMITS,
    Command,
    Group,
    HereDoc,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    Simple,
    parse,
)
from .shell import AndOr as AndOrNode
from .specials import MAX_DEPTH, SHELL_ONLY, SHELLS, ShellExit, SpecialBuiltins, Status
from .steps import (
    Completed,
    Exit,
    Handler,
    Invocation,
    Output,
    ShellEnd,
    Sleep,
    Step,
    Stream,
    WaitStdin,
    err,
    sleep_end,
)

BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
_PATHABLE_SPECIALS = frozenset({"which", "env", "timeout"}) | SHELLS


@dataclass(eq=False)
class _File:
    path: str
    full: bool = False


_Target = Stream | _File | None
_Router = Callable[[Output], Output | None]


@dataclass
class _Fds:
    stdout: _Target
    stderr: _Target
    stdin: bytes


def _route(inner: Status, router: _Router) -> Status:
    try:
        step = next(inner)
        while True:
            if not isinstance(step, Output):
                yield step
            elif (routed := router(step)) is not None:
                yield routed
            step = next(inner)
    except StopIteration as stop:
        code: int = stop.value
        return code
    finally:
        inner.close()


def _capture(buffer: bytearray) -> _Router:
    def route(step: Output) -> Output | None:
        if step.stream == "stdout":
            buffer.extend(step.data)
            return None
        return step

    return route


def _dash_reason(exc: FsError, creating: bool) -> str:
    if exc.code in ("not_found", "not_a_directory"):
        return "Directory nonexistent" if creating else "No such file"
    return exc.strerror


class CommandEmulator(SpecialBuiltins):
    """Run commands inside one mock sandbox: builtins, egress probes and user-registered handlers."""

    def __init__(
        self,
        fs: FileSystem,
        *,
        gate: EgressGate | None = None,
        http: HttpTable | None = None,
        handlers: Mapping[str, Handler] | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        hostname: str | None = None,
    ) -> None:
        self.fs = fs
        self.gate: EgressGate = gate if gate is not None else OpenGate()
        self.http = http if http is not None else HttpTable()
        self.user = user or fs.user
        if hostname is None and fs.is_file("/etc/hostname"):
            hostname = fs.read("/etc/hostname").decode(errors="replace").strip()
        self.hostname = hostname or "sandbox"
        home = "/root" if self.user == "root" else f"/home/{self.user}"
        self.env: dict[str, str] = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": home,
            "USER": self.user,
            "LOGNAME": self.user,
            "SHELL": "/bin/sh",
            "HOSTNAME": self.hostname,
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        self._builtins: dict[str, Handler] = {
            **TEXT_BUILTINS,
            **MATCHING_BUILTINS,
            **FILE_BUILTINS,
            **make_probes(self),
        }
        self._user: dict[str, Handler] = dict(handlers or {})
        self._special_table = self._specials()

    def register(self, name: str, handler: Handler) -> None:
        """Add or replace the handler for command `name` (takes precedence over builtins)."""
        self._user[name] = handler

    @property
    def commands(self) -> frozenset[str]:
        """Return every command name the emulator knows."""
        return frozenset(self._user) | frozenset(self._special_table) | frozenset(self._builtins)

    def run(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bytes = b"",
    ) -> Iterator[Step]:
        """Return the steps of running `command` (a shell line, or argv without a shell); ends with Exit."""
        return self._main(command, dict(env or {}), cwd, stdin)

    def run_to_completion(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        stdin: bytes = b"",
        timeout: float | None = None,
    ) -> Completed:
        """Run `command` collecting output; a virtual `timeout` (needed by endless commands) exits 124."""
        stdout, stderr = bytearray(), bytearray()
        slept = 0.0
        steps = self.run(command, env=env, cwd=cwd, stdin=stdin)
        try:
            for step in steps:
                if isinstance(step, Output):
                    (stdout if step.stream == "stdout" else stderr).extend(step.data)
                elif isinstance(step, Sleep):
                    slept, killed = sleep_end(slept, step.seconds, timeout)
                    if killed:
                        return Completed(bytes(stdout), bytes(stderr), 124, slept, timed_out=True)
                elif isinstance(step, WaitStdin):
                    step.pipe.closed = True  # nothing writes to it while a command runs to completion
                else:
                    return Completed(bytes(stdout), bytes(stderr), step.code, slept)
        finally:
            close = getattr(steps, "close", None)
            if close is not None:
                close()
        raise RuntimeError("command ended without an Exit step")

    # -- top level ---------------------------------------------------------------------------------

    def _main(self, command: str | Sequence[str], env: dict[str, str], cwd: str, stdin: bytes) -> Iterator[Step]:
        merged = {**self.env, **env}
        try:
            directory = normpath(cwd, "/")
            usable = self.fs.is_dir(directory)
        except FsError:
            usable = False
        if not usable:
            yield err(f"sh: 1: cd: can't cd to {cwd}\n")
            yield Exit(2)
            return
        merged["PWD"] = directory
        sh = ShellState(merged, directory, stdin=stdin)
        if isinstance(command, str):
            code = yield from self._toplevel(command, sh)
        elif not command:
            code = 0
        else:
            code = yield from self._subshell(self._dispatch(list(command), sh, merged, stdin))
        yield Exit(code, ShellEnd(sh.cwd, dict(sh.env)))

    def _toplevel(self, source: str, sh: ShellState) -> Status:
        if sh.depth > MAX_DEPTH:
            yield err(f"{sh.name}: 1: maximum nesting depth exceeded\n")
            return 2
        try:
            script = parse(source)
        except ShellSyntaxError as exc:
            yield err(f"{sh.name}: 1: Syntax error: {exc}{exc.note()}\n")
            return 2
        return (yield from self._subshell(self._script(script, sh)))

    def _subshell(self, inner: Status) -> Status:
        try:
            return (yield from inner)
        except ShellExit as exc:
            return exc.code

    # -- syntax tree -------------------------------------------------------------------------------

    def _script(self, script: Script, sh: ShellState) -> Status:
        for item in script.items:
            status, checked = yield from self._and_or(item, sh)
            sh.status = status
            if sh.errexit and status and checked:
                raise ShellExit(status)
        return sh.status

    def _and_or(self, item: AndOrNode, sh: ShellState) -> Generator[Step, None, tuple[int, bool]]:
        status = yield from self._pipeline(item.first, sh)
        checked = not item.first.negate and not item.rest
        for index, (op, pipeline) in enumerate(item.rest):
            if (op == "&&") != (status == 0):
                continue
            sh.status = status
            status = yield from self._pipeline(pipeline, sh)
            checked = index == len(item.rest) - 1 and not pipeline.negate
        return status, checked

    def _pipeline(self, pipeline: Pipeline, sh: ShellState) -> Status:
        if len(pipeline.commands) == 1:
            status = yield from self._command(pipeline.commands[0], sh, sh.stdin)
        else:
            data, statuses = sh.stdin, []
            for index, command in enumerate(pipeline.commands):
                stage = self._subshell(self._command(command, sh.copy(), data))
                if index < len(pipeline.commands) - 1:
                    buffer = bytearray()
                    statuses.append((yield from _route(stage, _capture(buffer))))
                    data = bytes(buffer)
                else:
                    statuses.append((yield from stage))
            status = statuses[-1]
            if sh.pipefail:
                status = next((s for s in reversed(statuses) if s), 0)
        return (0 if status else 1) if pipeline.negate else status

    def _command(self, command: Command, sh: ShellState, stdin: bytes) -> Status:
        if isinstance(command, Simple):
            return (yield from self._simple(command, sh, stdin))
        assert isinstance(command, Group)
        fds = yield from self._redirects(command.redirects, sh, stdin)
        if fds is None:
            return 2
        sub = sh.copy()
        sub.stdin = fds.stdin
        return (yield from _route(self._subshell(self._script(command.body, sub)), self._router(fds)))

    def _simple(self, command: Simple, sh: ShellState, stdin: bytes) -> Status:
        sh.sub_status = None
        argv: list[str] = []
        for word in command.words:
            argv += yield from expand_word(word, sh, self._substitute, self.fs)
        assigns: dict[str, str] = {}
        for name, word in command.assigns:
            assigns[name] = yield from expand_string(word, sh, self._substitute)
        fds = yield from self._redirects(command.redirects, sh, stdin)
        if fds is None:
            return 2
        if not argv:
            sh.env.update(assigns)
            return sh.sub_status or 0
        env = {**sh.env, **assigns}
        return (yield from _route(self._dispatch(argv, sh, env, fds.stdin), self._router(fds)))

    def _substitute(self, script: Script, sh: ShellState) -> Generator[Step, None, str]:
        buffer = bytearray()
        sh.sub_status = yield from _route(self._subshell(self._script(script, sh.copy())), _capture(buffer))
        return buffer.decode(errors="replace").rstrip("\n")

    # -- redirections ------------------------------------------------------------------------------

    def _redirects(
        self, redirects: Sequence[Redirect], sh: ShellState, stdin: bytes
    ) -> Generator[Step, None, _Fds | None]:
        fds = _Fds("stdout", "stderr", stdin)
        for redirect in redirects:
            if isinstance(redirect.target, HereDoc):
                fds.stdin = (yield from expand_string(redirect.target.body, sh, self._substitute)).encode()
                continue
            if redirect.op == "<<<":
                text = yield from expand_string(redirect.target, sh, self._substitute)
                fds.stdin = (text + "\n").encode()
                continue
            fields = yield from expand_word(redirect.target, sh, self._substitute, self.fs)
            if len(fields) != 1 or not fields[0]:
                yield err(f"{sh.name}: 1: ambiguous redirect\n")
                return None
            name = fields[0]
            if redirect.op == ">&":
                target: _Target = {"1": fds.stdout, "2": fds.stderr}.get(name)
            elif redirect.op == "<":
                if name != "/dev/stdin":
                    try:
                        fds.stdin = b"" if name == "/dev/null" else self.fs.read(normpath(name, sh.cwd))
                    except FsError as exc:
                        yield err(f"{sh.name}: 1: cannot open {name}: {_dash_reason(exc, False)}\n")
                        return None
                continue
            elif name in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                target = {"/dev/stdout": fds.stdout, "/dev/stderr": fds.stderr}.get(name)
            else:
                try:
                    path = normpath(name, sh.cwd)
                    self.fs.write(path, b"", append=redirect.op == ">>")
                except FsError as exc:
                    yield err(f"{sh.name}: 1: cannot create {name}: {_dash_reason(exc, True)}\n")
                    return None
                target = _File(path)
            if redirect.fd in (1, -1):
                fds.stdout = target
            if redirect.fd in (2, -1):
                fds.stderr = target
        return fds

    def _router(self, fds: _Fds) -> _Router:
        def route(step: Output) -> Output | None:
            target = fds.stdout if step.stream == "stdout" else fds.stderr
            if isinstance(target, _File):
                try:
                    self.fs.write(target.path, step.data, append=True)
                except FsError as exc:
                    if exc.code == "no_space" and not target.full:
                        target.full = True  # said once per redirection, as a real shell's write(2) fails once
                        return Output("stderr", f"sh: 1: write error: {exc.strerror}\n".encode())
                return None
            if target is None:
                return None
            return step if target == step.stream else Output(target, step.data)

        return route

    # -- dispatch ----------------------------------------------------------------------------------

    def _canonical(self, name: str) -> str | None:
        if name in self._user or name in self._special_table or name in self._builtins:
            return name
        directory, _, base = name.rpartition("/")
        if directory in BIN_DIRS and base not in SHELL_ONLY:
            known = base in self._user or base in self._builtins or base in _PATHABLE_SPECIALS
            return base if known else None
        return None

    def _dispatch(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        name = self._canonical(argv[0])
        if name is None:
            if "/" in argv[0]:
                return (yield from self._exec_file(argv, sh, env, stdin))
            yield err(f"{sh.name}: 1: {argv[0]}: not found ({EMULATOR_LIMITS})\n")
            return 127
        handler = self._user.get(name)
        if handler is None and name in self._special_table:
            return (yield from self._special_table[name](argv, sh, env, stdin))
        handler = handler or self._builtins[name]
        invocation = Invocation(tuple(argv), self.fs, env, sh.cwd, stdin, self.user, self.hostname)
        return (yield from self._call(handler, invocation))

    def _call(self, handler: Handler, invocation: Invocation) -> Status:
        steps = iter(handler(invocation))
        try:
            for step in steps:
                if isinstance(step, Exit):
                    return step.code
                if not (isinstance(step, Output) and not step.data):
                    yield step
        except FsError as exc:
            yield err(f"{invocation.name}: {exc.strerror}\n")
            return 1
        finally:
            close = getattr(steps, "close", None)
            if close is not None:
                close()
        return 0

    def _exec_file(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        try:
            path = normpath(argv[0], sh.cwd)
            info = self.fs.stat(path)
        except FsError:
            program_dir = normpath(argv[0], sh.cwd).rsplit("/", 1)[0] or "/"
            note = f" ({EMULATOR_LIMITS})" if program_dir in BIN_DIRS else ""
            yield err(f"{sh.name}: 1: {argv[0]}: not found{note}\n")
            return 127
        if info.is_dir or not info.mode & 0o111:
            yield err(f"{sh.name}: 1: {argv[0]}: Permission denied\n")
            return 126
        content = self.fs.read(path)
        if content.startswith(b"#!"):
            interpreter = content[2:].split(b"\n", 1)[0].decode(errors="replace").split()
            if interpreter and interpreter[0].endswith("/env"):
                interpreter = interpreter[1:]
            if interpreter and interpreter[0].rsplit("/", 1)[-1] not in SHELLS:
                return (yield from self._dispatch([*interpreter, argv[0], *argv[1:]], sh, env, stdin))
        sub = ShellState(dict(env), sh.cwd, list(argv[1:]), argv[0], stdin=stdin, depth=sh.depth + 1)
        return (yield from self._toplevel(content.decode(errors="replace"), sub))
