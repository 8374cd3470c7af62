"""Builtins that act on the shell itself: cd, exit, export, set, sh -c, env, which, timeout, ..."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping

from .builtins import sleep_seconds
from .expand import ShellState
from .filesystem import FileSystem, FsError, normpath
from .shell import Script, ShellSyntaxError, parse
from .steps import Sleep, Step, err, out, read_stdin

Status = Generator[Step, None, int]
Special = Callable[[list[str], ShellState, dict[str, str], bytes], Status]

SHELL_ONLY = frozenset({"cd", "exit", "export", "unset", "set", "source", ".", ":", "exec", "command", "read"})
SHELLS = frozenset({"sh", "bash", "dash"})
MAX_DEPTH = 40
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ShellExit(Exception):
    """Unwind the current (sub)shell with an exit status."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _home_of(fs: FileSystem, user: str) -> str | None:
    """Return ``user``'s home directory from the sandbox's ``/etc/passwd``, or None when there is no such user."""
    try:
        passwd = fs.read("/etc/passwd").decode(errors="replace")
    except FsError:
        passwd = "root:x:0:0:root:/root:/bin/sh\n"
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and fields[0] == user:
            return fields[5] or "/"
    return None


class SpecialBuiltins:
    """Mixin implementing the shell-level builtins on top of the interpreter's dispatch."""

    fs: FileSystem
    user: str

    def _dispatch(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        raise NotImplementedError

    def _toplevel(self, source: str, sh: ShellState) -> Status:
        raise NotImplementedError

    def _canonical(self, name: str) -> str | None:
        raise NotImplementedError

    def _script(self, script: Script, sh: ShellState) -> Status:
        raise NotImplementedError

    def _specials(self) -> Mapping[str, Special]:
        return {
            "cd": self._cd,
            "exit": self._exit,
            "export": self._export,
            "unset": self._unset,
            "set": self._set,
            ":": self._colon,
            "source": self._source,
            ".": self._source,
            "exec": self._exec,
            "command": self._command_builtin,
            "read": self._read,
            "which": self._which,
            "env": self._env,
            "timeout": self._timeout,
            "su": self._su,
            **dict.fromkeys(SHELLS, self._sh),
        }

    def _colon(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        yield from ()
        return 0

    def _cd(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        target = argv[1] if len(argv) > 1 else sh.env.get("HOME", "/")
        if target == "-":
            target = sh.env.get("OLDPWD", sh.cwd)
            yield out(target + "\n")
        try:
            path = normpath(target, sh.cwd)
            ok = self.fs.is_dir(path)
        except FsError:
            ok = False
        if not ok:
            yield err(f"{sh.name}: 1: cd: can't cd to {target}\n")
            return 2
        sh.env["OLDPWD"] = sh.cwd
        sh.cwd = sh.env["PWD"] = path
        return 0

    def _exit(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        if len(argv) > 1 and not re.fullmatch(r"\d+", argv[1]):
            yield err(f"{sh.name}: 1: exit: Illegal number: {argv[1]}\n")
            raise ShellExit(2)
        raise ShellExit(int(argv[1]) & 0xFF if len(argv) > 1 else sh.status)

    def _export(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        names = [a for a in argv[1:] if a != "-p"]
        if not names:
            yield out("".join(f"export {k}={_quote(v)}\n" for k, v in sorted(sh.env.items())))
            return 0
        for arg in names:
            name, eq, value = arg.partition("=")
            if not _NAME.fullmatch(name):
                yield err(f"{sh.name}: 1: export: {arg}: bad variable name\n")
                return 2
            if eq:
                sh.env[name] = value
        return 0

    def _unset(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        for name in argv[1:]:
            if not name.startswith("-"):
                sh.env.pop(name, None)
        yield from ()
        return 0

    def _set(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        args = argv[1:]
        if not args:
            yield out("".join(f"{k}={_quote(v)}\n" for k, v in sorted(sh.env.items())))
            return 0
        while args:
            arg = args.pop(0)
            if arg == "--":
                sh.args = args
                break
            if arg in ("-o", "+o"):
                option = args.pop(0) if args else ""
                if option in ("pipefail", "errexit"):
                    setattr(sh, option, arg == "-o")
            elif arg[:1] in "-+" and len(arg) > 1:
                if "e" in arg:
                    sh.errexit = arg[0] == "-"
            else:
                sh.args = [arg, *args]
                break
        return 0

    def _source(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        if len(argv) < 2:
            yield err(f"{sh.name}: 1: {argv[0]}: filename argument required\n")
            return 2
        try:
            source = self.fs.read(normpath(argv[1], sh.cwd)).decode(errors="replace")
            script = parse(source)
        except FsError:
            yield err(f"{sh.name}: 1: {argv[0]}: cannot open {argv[1]}: No such file\n")
            return 2
        except ShellSyntaxError as exc:
            yield err(f"{sh.name}: 1: Syntax error: {exc}{exc.note()}\n")
            return 2
        if sh.depth >= MAX_DEPTH:
            yield err(f"{sh.name}: 1: {argv[0]}: maximum nesting depth exceeded\n")
            return 2
        sh.depth += 1
        try:
            return (yield from self._script(script, sh))
        finally:
            sh.depth -= 1

    def _exec(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        if len(argv) < 2:
            return 0
        raise ShellExit((yield from self._dispatch(argv[1:], sh, env, stdin)))

    def _command_builtin(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        args = argv[1:]
        if args[:1] in (["-v"], ["-V"]):
            code = 0
            for name in args[1:]:
                known = self._canonical(name)
                if known is None:
                    code = 1
                else:
                    yield out((name if known in SHELL_ONLY or "/" in name else f"/usr/bin/{name}") + "\n")
            return code
        if not args:
            return 0
        return (yield from self._dispatch(args, sh, env, stdin))

    def _read(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        names = [a for a in argv[1:] if not a.startswith("-")] or ["REPLY"]
        stdin = yield from read_stdin(stdin)
        if not stdin:
            return 1
        line, newline, _ = stdin.decode(errors="replace").partition("\n")
        fields = line.split(maxsplit=len(names) - 1)
        for index, name in enumerate(names):
            sh.env[name] = fields[index] if index < len(fields) else ""
        return 0 if newline else 1

    def _which(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        code = 0
        for name in (a for a in argv[1:] if not a.startswith("-")):
            if "/" in name:
                try:
                    info = self.fs.stat(normpath(name, sh.cwd))
                    found = not info.is_dir and bool(info.mode & 0o111)
                except FsError:
                    found = False
                path = name
            else:
                found = self._canonical(name) not in (None, *SHELL_ONLY)
                path = f"/usr/bin/{name}"
            if found:
                yield out(path + "\n")
            else:
                code = 1
        return code

    def _env(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        args = argv[1:]
        new_env = dict(env)
        while args:
            arg = args[0]
            if arg in ("-i", "-", "--ignore-environment"):
                new_env = {}
            elif arg == "-u" and len(args) > 1:
                new_env.pop(args.pop(1), None)
            elif "=" in arg and not arg.startswith("="):
                key, _, value = arg.partition("=")
                new_env[key] = value
            elif arg == "--":
                args.pop(0)
                break
            else:
                break
            args.pop(0)
        if not args:
            yield out("".join(f"{k}={v}\n" for k, v in new_env.items()))
            return 0
        if self._canonical(args[0]) in (None, *SHELL_ONLY):
            yield err(f"env: '{args[0]}': No such file or directory\n")
            return 127
        return (yield from self._dispatch(args, sh, new_env, stdin))

    def _timeout(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        args = argv[1:]
        while args and args[0].startswith("-"):
            flag = args.pop(0)
            if flag in ("-s", "-k", "--signal", "--kill-after") and args:
                args.pop(0)
        limit = sleep_seconds(args[0]) if args else None
        if limit is None or len(args) < 2:
            yield err(f"timeout: {'invalid time interval ' + repr(args[0]) if args else 'missing operand'}\n")
            return 125
        inner = self._dispatch(args[1:], sh, env, stdin)
        if limit == 0:
            return (yield from inner)
        budget = limit
        try:
            step = next(inner)
            while True:
                if isinstance(step, Sleep):
                    if step.seconds > budget:
                        if budget > 0:
                            yield Sleep(budget)
                        inner.close()
                        return 124
                    budget -= step.seconds
                yield step
                step = next(inner)
        except StopIteration as stop:
            code: int = stop.value
            return code

    def _su(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        """``su [-|-l] [-c COMMAND] [-s SHELL] [USER]``: run COMMAND (or stdin) as USER (default root).

        The emulator has one identity per sandbox: the command runs with USER's ``USER``/``LOGNAME``/``HOME``
        and, for a login shell, in USER's home; only root (or the same user) may switch without a password.
        """
        args, command, login = argv[1:], None, False
        users: list[str] = []
        while args:
            flag = args.pop(0)
            if not flag.startswith("-"):
                users.append(flag)
            elif flag in ("-", "-l", "--login"):
                login = True
            elif flag in ("-c", "--command", "-s", "--shell") and args:
                value = args.pop(0)
                command = value if flag in ("-c", "--command") else command
            elif flag.startswith("--command="):
                command = flag.split("=", 1)[1]
            elif flag not in ("-m", "-p", "--preserve-environment"):
                yield err(f"su: invalid option -- '{flag.lstrip('-')[:1]}'\n")
                return 1
        target = users[0] if users else "root"
        home = _home_of(self.fs, target)
        if home is None:
            yield err(f"su: user {target} does not exist or the user entry does not contain all the required fields\n")
            return 1
        if self.user not in ("root", target):
            yield err("su: Authentication failure\n")
            return 1
        if command is None and not stdin:
            yield err("su: must be run from a terminal\n")
            return 1
        sub_env = {**env, "USER": target, "LOGNAME": target, "HOME": home}
        cwd = home if login and self.fs.is_dir(home) else sh.cwd
        shell_argv = ["sh", "-c", command] if command is not None else ["sh"]
        sub = ShellState(sub_env, cwd, [], "sh", stdin=stdin)
        sub.depth = sh.depth
        return (yield from self._sh(shell_argv, sub, sub_env, stdin))

    def _sh(self, argv: list[str], sh: ShellState, env: dict[str, str], stdin: bytes) -> Status:
        args = argv[1:]
        shell = argv[0].rsplit("/", 1)[-1]
        command_mode = errexit = pipefail = False
        while args and args[0][:1] in "-+" and args[0] not in ("-", "--"):
            flag = args.pop(0)
            if flag in ("-o", "+o"):
                option = args.pop(0) if args else ""
                errexit = errexit or (option == "errexit" and flag == "-o")
                pipefail = pipefail or (option == "pipefail" and flag == "-o")
            elif not flag.startswith("--"):
                command_mode = command_mode or "c" in flag
                errexit = errexit or (flag[0] == "-" and "e" in flag)
        if args[:1] in (["-"], ["--"]):
            args.pop(0)
        if command_mode:
            if not args:
                yield err(f"{shell}: 0: -c requires an argument\n")
                return 2
            source, name, positional = args[0], (args[1] if len(args) > 1 else shell), args[2:]
        elif args:
            try:
                source = self.fs.read(normpath(args[0], sh.cwd)).decode(errors="replace")
            except FsError:
                if shell == "bash":
                    yield err(f"bash: {args[0]}: No such file or directory\n")
                    return 127
                yield err(f"{shell}: 0: cannot open {args[0]}: No such file\n")
                return 2
            name, positional = args[0], args[1:]
        else:
            script = yield from read_stdin(stdin)
            source, name, positional, stdin = script.decode(errors="replace"), shell, [], b""
        sub = ShellState(dict(env), sh.cwd, positional, name, errexit=errexit, pipefail=pipefail, stdin=stdin)
        sub.depth = sh.depth + 1
        return (yield from self._toplevel(source, sub))
