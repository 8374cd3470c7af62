"""Shell state and word expansion: parameters, command substitution, field splitting, globbing."""

from __future__ import annotations

import fnmatch
import glob
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace

from .filesystem import FileSystem, FsError, normpath
from .shell import CmdSub, Lit, Param, Script, Word
from .steps import Step

_IFS = re.compile(r"[ \t\n]+")
_MAGIC = re.compile(r"[*?[]")
#: ``"$@"``: each positional parameter as its own field.
_ALL_ARGS = Param("@", True)

Substituter = Callable[[Script, "ShellState"], Generator[Step, None, str]]


@dataclass
class ShellState:
    """Mutable state of one (sub)shell: variables, working directory, positional parameters."""

    env: dict[str, str]
    cwd: str
    args: list[str] = field(default_factory=list)
    name: str = "sh"
    status: int = 0
    sub_status: int | None = None
    errexit: bool = False
    pipefail: bool = False
    stdin: bytes = b""
    depth: int = 0

    def copy(self) -> ShellState:
        """Return an independent copy, as a subshell gets."""
        return replace(self, env=dict(self.env), args=list(self.args))


def _special(name: str, sh: ShellState) -> str | None:
    if name == "?":
        return str(sh.status)
    if name == "$":
        return "1"
    if name == "#":
        return str(len(sh.args))
    if name == "0":
        return sh.name
    if name.isdigit():
        index = int(name)
        return sh.args[index - 1] if index <= len(sh.args) else None
    if name in ("@", "*"):
        return " ".join(sh.args)
    if name in ("!", "-"):
        return ""
    return sh.env.get(name)


def expand_param(part: Param, sh: ShellState, substitute: Substituter) -> Generator[Step, None, str]:
    """Expand one parameter reference, including `:-`, `-`, `:+`, `+` and `#` forms."""
    value = _special(part.name, sh)
    if part.op == "#":
        return str(len(value or ""))
    if part.op in (":-", "-") and (value is None or (part.op == ":-" and value == "")):
        return (yield from expand_string(part.arg, sh, substitute)) if part.arg else ""
    if part.op in (":+", "+"):
        is_set = value is not None and (part.op == "+" or value != "")
        return (yield from expand_string(part.arg, sh, substitute)) if is_set and part.arg else ""
    return value or ""


def _expand_part(part: Param | CmdSub, sh: ShellState, substitute: Substituter) -> Generator[Step, None, str]:
    if isinstance(part, Param):
        return (yield from expand_param(part, sh, substitute))
    return (yield from substitute(part.script, sh))


def expand_string(word: Word, sh: ShellState, substitute: Substituter) -> Generator[Step, None, str]:
    """Expand a word to one string without field splitting or globbing (assignments, here-docs)."""
    pieces: list[str] = []
    for part in word.parts:
        pieces.append(part.text if isinstance(part, Lit) else (yield from _expand_part(part, sh, substitute)))
    return "".join(pieces)


Field = list[tuple[str, bool]]


def expand_word(
    word: Word, sh: ShellState, substitute: Substituter, fs: FileSystem
) -> Generator[Step, None, list[str]]:
    """Expand a word into argv fields: parameters, substitutions, IFS splitting, pathname globbing."""
    parts = word.parts
    if len(parts) == 1 and isinstance(parts[0], Lit):  # the most common word: one literal, one field
        return _glob_field([(parts[0].text, not parts[0].quoted)], sh.cwd, fs)
    if [p for p in parts if not (isinstance(p, Lit) and p.quoted and not p.text)] == [_ALL_ARGS]:
        return list(sh.args)
    fields: list[Field] = []
    current: Field = []
    active = False
    for part in word.parts:
        if isinstance(part, Lit):
            current.append((part.text, not part.quoted))
            active = True
            continue
        value = yield from _expand_part(part, sh, substitute)
        if part.quoted:
            current.append((value, False))
            active = True
            continue
        if not value:
            continue
        pieces = _IFS.split(value.strip(" \t\n"))
        if value[0] in " \t\n" and active:
            fields.append(current)
            current, active = [], False
        for index, piece in enumerate(p for p in pieces if p):
            if index:
                fields.append(current)
                current = []
            current.append((piece, True))
            active = True
        if value[-1] in " \t\n" and active:
            fields.append(current)
            current, active = [], False
    if active:
        fields.append(current)
    result: list[str] = []
    for item in fields:
        result.extend(_glob_field(item, sh.cwd, fs))
    return result


def _glob_field(item: Field, cwd: str, fs: FileSystem) -> list[str]:
    text = "".join(chunk for chunk, _ in item)
    if not any(globbable and _MAGIC.search(chunk) for chunk, globbable in item):
        return [text]
    pattern = "".join(chunk if globbable else glob.escape(chunk) for chunk, globbable in item)
    return glob_paths(fs, pattern, cwd) or [text]


def glob_paths(fs: FileSystem, pattern: str, cwd: str) -> list[str]:
    """Return the sorted paths matching a shell glob, relative if the pattern is relative."""
    bases = ["/"] if pattern.startswith("/") else [""]
    for component in (c for c in pattern.split("/") if c):
        found: list[str] = []
        for base in bases:
            directory = normpath(base or ".", cwd)
            if not _MAGIC.search(component):
                candidate = _join(base, component)
                if fs.exists(normpath(candidate, cwd)):
                    found.append(candidate)
                continue
            try:
                names = [info.name for info in fs.listdir(directory)]
            except FsError:
                continue
            for name in names:
                if name.startswith(".") and not component.startswith("."):
                    continue
                if fnmatch.fnmatchcase(name, component):
                    found.append(_join(base, name))
        bases = found
    return sorted(bases) if bases != ["/"] and bases != [""] else []


def _join(base: str, name: str) -> str:
    if not base:
        return name
    return base.rstrip("/") + "/" + name
