"""Parse a POSIX shell line into a small syntax tree (lists, and-or chains, pipes, redirections)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

META = frozenset(" \t\n;&|<>()")
_WORD_STOP = META | frozenset("'\"\\$`")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_REDIRECT = re.compile(r"(\d*)(<<<|<<-|<<|>>|>&|>\||>|<|&>>|&>)")
_UNSUPPORTED = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "function",
        "select",
        "{",
        "}",
        "[[",
        "]]",
    ]
)


#: Appended to what the emulator cannot run, so a user knows it is the emulator's limit, not their code's.
EMULATOR_LIMITS = (
    "sandproof's command emulator runs simple commands, pipelines, lists and redirections with its own "
    "builtins; its limits are listed in docs/emulator.md; serve with --runtime linux for a real shell"
)


class ShellSyntaxError(Exception):
    """Signal a line the emulated shell cannot parse; ``unsupported`` when it is valid sh the emulator lacks."""

    def __init__(self, message: str, *, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported

    def note(self) -> str:
        """Return the text to append to the message: the emulator's limits when the line is valid sh."""
        return f" ({EMULATOR_LIMITS})" if self.unsupported else ""


@dataclass(frozen=True)
class Lit:
    """Literal text; quoted text is neither split nor globbed."""

    text: str
    quoted: bool


@dataclass(frozen=True)
class Param:
    """A parameter expansion such as `$X`, `${X}`, `${X:-default}` or `${#X}`."""

    name: str
    quoted: bool
    op: str = ""
    arg: Word | None = None


@dataclass(frozen=True)
class CmdSub:
    """A command substitution, `$(...)` or backticks."""

    script: Script
    quoted: bool


Part = Lit | Param | CmdSub


@dataclass(frozen=True)
class Word:
    """One shell word made of literal and expansion parts."""

    parts: tuple[Part, ...]


@dataclass
class HereDoc:
    """A here-document body, filled in once the parser reaches the end of the line."""

    delimiter: str
    strip_tabs: bool
    quoted: bool
    body: Word = field(default_factory=lambda: Word(()))


@dataclass(frozen=True)
class Redirect:
    """A redirection; fd -1 means both stdout and stderr (`&>`)."""

    fd: int
    op: str
    target: Word | HereDoc


@dataclass(frozen=True)
class Simple:
    """A simple command: assignments, words and redirections."""

    assigns: tuple[tuple[str, Word], ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]


@dataclass(frozen=True)
class Group:
    """A `( ... )` subshell with its redirections."""

    body: Script
    redirects: tuple[Redirect, ...]


Command = Simple | Group


@dataclass(frozen=True)
class Pipeline:
    """Commands joined by `|`, optionally negated with `!`."""

    commands: tuple[Command, ...]
    negate: bool = False


@dataclass(frozen=True)
class AndOr:
    """Pipelines joined by `&&` / `||`."""

    first: Pipeline
    rest: tuple[tuple[str, Pipeline], ...] = ()


@dataclass(frozen=True)
class Script:
    """A list of and-or chains separated by `;` or newlines."""

    items: tuple[AndOr, ...]


#: Lines up to this long have their parse kept (:func:`parse`); a longer script is parsed each time it runs.
CACHED_SOURCE_CHARS = 1024


def parse(source: str) -> Script:
    """Parse a whole shell script.

    The tree is never changed once built, so a short line run again (``echo hi`` on every request) reuses
    its parse; a line that fails raises afresh each time.
    """
    if len(source) <= CACHED_SOURCE_CHARS:
        return _parse_cached(source)
    return _Parser(source).parse_all()


@lru_cache(maxsize=512)
def _parse_cached(source: str) -> Script:
    return _Parser(source).parse_all()


def literal(text: str) -> Word:
    """Return a word that expands to exactly `text`."""
    return Word((Lit(text, True),))


class _Parser:
    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0
        self.heredocs: list[HereDoc] = []

    # -- low level ---------------------------------------------------------------------------------

    def peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def at_end(self) -> bool:
        return self.i >= len(self.s)

    def skip_blanks(self) -> None:
        while not self.at_end():
            c = self.peek()
            if c in " \t":
                self.i += 1
            elif self.peek(2) == "\\\n":
                self.i += 2
            elif c == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
            else:
                break

    def skip_newlines(self) -> None:
        self.skip_blanks()
        while self.peek() == "\n":
            self.i += 1
            self.read_heredocs()
            self.skip_blanks()

    def unexpected(self) -> ShellSyntaxError:
        if self.at_end():
            return ShellSyntaxError("end of file unexpected")
        token = self.peek(2) if self.peek(2) in ("&&", "||", ";;", ">>") else self.peek()
        return ShellSyntaxError(f'"{token}" unexpected' if token != "\n" else "newline unexpected")

    # -- grammar -----------------------------------------------------------------------------------

    def parse_all(self) -> Script:
        script = self.parse_script(None)
        if not self.at_end():
            raise self.unexpected()
        self.read_heredocs()
        return script

    def parse_script(self, stop: str | None) -> Script:
        items: list[AndOr] = []
        while True:
            self.skip_newlines()
            if self.at_end() or self.peek() == stop:
                break
            items.append(self.parse_andor())
            self.skip_blanks()
            c = self.peek()
            if c == ";" and self.peek(2) != ";;":
                self.i += 1
            elif c == "\n":
                self.i += 1
                self.read_heredocs()
            elif c == "&" and self.peek(2) != "&&":
                raise ShellSyntaxError("background jobs (&) are not supported", unsupported=True)
            elif not (self.at_end() or c == stop):
                raise self.unexpected()
        return Script(tuple(items))

    def parse_andor(self) -> AndOr:
        first = self.parse_pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while True:
            self.skip_blanks()
            op = self.peek(2)
            if op not in ("&&", "||"):
                return AndOr(first, tuple(rest))
            self.i += 2
            self.skip_newlines()
            rest.append((op, self.parse_pipeline()))

    def parse_pipeline(self) -> Pipeline:
        self.skip_blanks()
        negate = False
        if self.peek() == "!" and self.peek(2)[1:] in (" ", "\t"):
            negate = True
            self.i += 1
        commands = [self.parse_command()]
        while True:
            self.skip_blanks()
            if self.peek() != "|" or self.peek(2) == "||":
                return Pipeline(tuple(commands), negate)
            self.i += 1
            self.skip_newlines()
            commands.append(self.parse_command())

    def parse_command(self) -> Command:
        self.skip_blanks()
        if self.peek() == "(":
            self.i += 1
            body = self.parse_script(")")
            if self.peek() != ")":
                raise ShellSyntaxError('end of file unexpected (expecting ")")')
            self.i += 1
            redirects: list[Redirect] = []
            while True:
                self.skip_blanks()
                redirect = self.try_redirect()
                if redirect is None:
                    return Group(body, tuple(redirects))
                redirects.append(redirect)
        return self.parse_simple()

    def parse_simple(self) -> Simple:
        assigns: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            self.skip_blanks()
            redirect = self.try_redirect()
            if redirect is not None:
                redirects.append(redirect)
                continue
            if self.at_end() or self.peek() in ";&|)\n(":
                break
            word = self.parse_word()
            head = word.parts[0] if word.parts else None
            match = _ASSIGN.match(head.text) if isinstance(head, Lit) and not head.quoted else None
            if not words and match and isinstance(head, Lit):
                rest = head.text[match.end() :]
                value = ((Lit(rest, False),) if rest else ()) + word.parts[1:]
                assigns.append((match.group(1), Word(value)))
                continue
            if not words and any(word == Word((Lit(kw, False),)) for kw in _UNSUPPORTED):
                raise ShellSyntaxError(f"unsupported shell construct: {''.join(_texts(word))}", unsupported=True)
            words.append(word)
        if not (assigns or words or redirects):
            raise self.unexpected()
        return Simple(tuple(assigns), tuple(words), tuple(redirects))

    def try_redirect(self) -> Redirect | None:
        match = _REDIRECT.match(self.s, self.i)
        if match is None:
            return None
        digits, op = match.groups()
        if digits and op.startswith("&"):
            return None
        self.i = match.end()
        fd = int(digits) if digits else (0 if op.startswith("<") else 1)
        if op.startswith("&"):
            fd, op = -1, op[1:]
        op = {">|": ">"}.get(op, op)
        self.skip_blanks()
        if self.at_end() or self.peek() in META:
            raise self.unexpected()
        target = self.parse_word()
        if op in ("<<", "<<-"):
            delimiter = "".join(p.text for p in target.parts if isinstance(p, Lit))
            quoted = any(isinstance(p, Lit) and p.quoted for p in target.parts)
            doc = HereDoc(delimiter, op == "<<-", quoted)
            self.heredocs.append(doc)
            return Redirect(0, "<<", doc)
        if op == ">&" and fd != -1 and not _is_fd_word(target):
            fd = -1
            op = ">"
        return Redirect(fd, op, target)

    def read_heredocs(self) -> None:
        for doc in self.heredocs:
            lines: list[str] = []
            while not self.at_end():
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i : end]
                self.i = min(end + 1, len(self.s))
                if doc.strip_tabs:
                    line = line.lstrip("\t")
                if line == doc.delimiter:
                    break
                lines.append(line + "\n")
            body = "".join(lines)
            doc.body = literal(body) if doc.quoted else Word(tuple(_Parser(body).parse_quoted(None, True)))
        self.heredocs.clear()

    # -- words -------------------------------------------------------------------------------------

    def parse_word(self) -> Word:
        parts: list[Part] = []
        start = self.i
        while not self.at_end():
            c = self.peek()
            if c in META:
                break
            if c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("Unterminated quoted string")
                parts.append(Lit(self.s[self.i + 1 : end], True))
                self.i = end + 1
            elif c == '"':
                self.i += 1
                parts.append(Lit("", True))
                parts.extend(self.parse_quoted('"', False))
                self.i += 1
            elif c == "\\":
                nxt = self.s[self.i + 1 : self.i + 2]
                if nxt != "\n":
                    parts.append(Lit(nxt or "\\", True))
                self.i += 2
            elif c == "$":
                parts.append(self.parse_dollar(False))
            elif c == "`":
                parts.append(self.parse_backtick(False))
            elif c == "~" and self.i == start and self.peek(2)[1:] in META | {"", "/"}:
                parts.append(Param("HOME", True))
                self.i += 1
            else:
                end = self.i
                while end < len(self.s) and self.s[end] not in _WORD_STOP:
                    end += 1
                parts.append(Lit(self.s[self.i : max(end, self.i + 1)], False))
                self.i = max(end, self.i + 1)
        return Word(tuple(parts))

    def parse_quoted(self, end: str | None, heredoc: bool) -> list[Part]:
        parts: list[Part] = []
        buf: list[str] = []
        escapable = "$`\\\n" if heredoc else '$`"\\\n'

        def flush() -> None:
            if buf:
                parts.append(Lit("".join(buf), True))
                buf.clear()

        while not self.at_end():
            c = self.peek()
            if c == end:
                flush()
                return parts
            if c == "\\" and self.s[self.i + 1 : self.i + 2] in tuple(escapable):
                if self.s[self.i + 1] != "\n":
                    buf.append(self.s[self.i + 1])
                self.i += 2
            elif c in "$`":
                flush()
                parts.append(self.parse_dollar(True) if c == "$" else self.parse_backtick(True))
            else:
                buf.append(c)
                self.i += 1
        if end is not None:
            raise ShellSyntaxError("Unterminated quoted string")
        flush()
        return parts

    def parse_dollar(self, quoted: bool) -> Part:
        self.i += 1
        if self.peek(2) == "((":
            raise ShellSyntaxError("arithmetic expansion is not supported", unsupported=True)
        if self.peek() == "(":
            self.i += 1
            script = self.parse_script(")")
            if self.peek() != ")":
                raise ShellSyntaxError('end of file unexpected (expecting ")")')
            self.i += 1
            return CmdSub(script, quoted)
        if self.peek() == "{":
            return self.parse_braced(quoted)
        name = self.read_name()
        return Param(name, quoted) if name else Lit("$", quoted)

    def parse_braced(self, quoted: bool) -> Param:
        self.i += 1
        length = self.peek() == "#" and self.peek(2) != "#}"
        if length:
            self.i += 1
        name = self.read_name()
        op = ""
        arg: Word | None = None
        for candidate in (":-", ":+", "-", "+"):
            if not length and name and self.s.startswith(candidate, self.i):
                op = candidate
                self.i += len(candidate)
                arg = Word(tuple(self.parse_quoted("}", False)))
                break
        if not name or self.peek() != "}":
            raise ShellSyntaxError("Bad substitution")
        self.i += 1
        return Param(name, quoted, "#" if length else op, arg)

    def read_name(self) -> str:
        match = _NAME.match(self.s, self.i)
        if match:
            self.i = match.end()
            return match.group(0)
        c = self.peek()
        if c and (c in "?$#@*!-" or c.isdigit()):
            self.i += 1
            return c
        return ""

    def parse_backtick(self, quoted: bool) -> CmdSub:
        self.i += 1
        buf: list[str] = []
        while not self.at_end() and self.peek() != "`":
            if self.peek() == "\\" and self.s[self.i + 1 : self.i + 2] in ("`", "\\", "$"):
                buf.append(self.s[self.i + 1])
                self.i += 2
            else:
                buf.append(self.peek())
                self.i += 1
        if self.at_end():
            raise ShellSyntaxError("Unterminated quoted string")
        self.i += 1
        return CmdSub(_Parser("".join(buf)).parse_all(), quoted)


def _is_fd_word(word: Word) -> bool:
    return len(word.parts) == 1 and isinstance(word.parts[0], Lit) and word.parts[0].text in ("0", "1", "2", "-")


def _texts(word: Word) -> list[str]:
    return [p.text for p in word.parts if isinstance(p, Lit)]
