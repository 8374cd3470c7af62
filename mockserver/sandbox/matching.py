"""Pattern and condition builtins of the command emulator: grep, and test / [."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .builtins import UsageError, parse_opts, read_inputs
from .filesystem import FsError
from .steps import Exit, Handler, Invocation, Step, err, fail, out


def _bre_to_python(pattern: str) -> str:
    result: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            result.append(nxt if nxt in "(){}|+?" else "\\" + nxt)
            i += 2
            continue
        result.append("\\" + ch if ch in "(){}|+?" else ch)
        i += 1
    return "".join(result)


def grep(inv: Invocation) -> Iterator[Step]:
    """Search inputs for a pattern (basic regex; -F fixed, -E extended, -i -v -c -n -q -l -h -H)."""
    try:
        flags, values, operands = parse_opts(inv.args, "FEGivcnqlhHsw", "e")
    except UsageError as exc:
        yield from fail(f"grep: {exc}", 2)
        return
    if "e" not in values and not operands:
        yield from fail("Usage: grep [OPTION]... PATTERNS [FILE]...", 2)
        return
    pattern = values["e"] if "e" in values else operands.pop(0)
    source = re.escape(pattern) if "F" in flags else pattern if "E" in flags else _bre_to_python(pattern)
    if "w" in flags:
        source = rf"\b(?:{source})\b"
    try:
        regex = re.compile(source.encode(), re.IGNORECASE if "i" in flags else 0)
    except re.error:
        yield from fail(f"grep: Invalid regular expression: {pattern}", 2)
        return
    show_names = ("H" in flags or len(operands) > 1) and "h" not in flags
    matched, code = False, 0
    for name, content in (yield from read_inputs(inv, operands)):
        label = "(standard input)" if name == "-" else name
        if isinstance(content, FsError):
            if "s" not in flags:
                yield err(f"grep: {name}: {content.strerror}\n")
            code = 2
            continue
        hits = [
            (number, line)
            for number, line in enumerate(content.splitlines(), start=1)
            if bool(regex.search(line)) != ("v" in flags)
        ]
        matched = matched or bool(hits)
        if "q" in flags:
            continue
        prefix = f"{label}:" if show_names else ""
        if "l" in flags:
            yield out(f"{label}\n" if hits else "")
        elif "c" in flags:
            yield out(f"{prefix}{len(hits)}\n")
        else:
            for number, line in hits:
                yield out(prefix.encode() + (f"{number}:".encode() if "n" in flags else b"") + line + b"\n")
    yield Exit(0 if matched and (code == 0 or "q" in flags) else code or 1)


class _TestError(Exception):
    pass


_UNARY = frozenset(["-e", "-f", "-d", "-s", "-r", "-w", "-x", "-z", "-n", "-L", "-h"])
_BINARY = frozenset(["=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"])


def _integer(text: str) -> int:
    if not re.fullmatch(r"\s*-?\d+\s*", text):
        raise _TestError(f"Illegal number: {text}")
    return int(text)


def _evaluate(inv: Invocation, tokens: list[str]) -> bool:
    if not tokens:
        return False
    if tokens[0] == "!" and len(tokens) > 1:
        return not _evaluate(inv, tokens[1:])
    for op in ("-o", "-a"):
        if op in tokens[1:-1]:
            index = tokens.index(op, 1)
            left, right = _evaluate(inv, tokens[:index]), _evaluate(inv, tokens[index + 1 :])
            return (left or right) if op == "-o" else (left and right)
    if tokens[0] == "(" and tokens[-1] == ")" and len(tokens) > 2:
        return _evaluate(inv, tokens[1:-1])
    if len(tokens) == 1:
        return tokens[0] != ""
    if len(tokens) == 2 and tokens[0] in _UNARY:
        return _unary(inv, tokens[0], tokens[1])
    if len(tokens) == 3 and tokens[1] in _BINARY:
        lhs, op, rhs = tokens
        if op in ("=", "==", "!="):
            return (lhs == rhs) != (op == "!=")
        a, b = _integer(lhs), _integer(rhs)
        return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]
    raise _TestError(f"{tokens[0]}: unexpected operator")


def _unary(inv: Invocation, op: str, operand: str) -> bool:
    if op in ("-z", "-n"):
        return (operand == "") == (op == "-z")
    try:
        info = inv.fs.stat(inv.path(operand))
    except FsError:
        return False
    checks = {
        "-e": True,
        "-f": not info.is_dir,
        "-d": info.is_dir,
        "-s": info.size > 0 and not info.is_dir,
        "-r": True,
        "-w": True,
        "-x": info.is_dir or bool(info.mode & 0o111),
    }
    return checks.get(op, False)


def test(inv: Invocation) -> Iterator[Step]:
    """Evaluate a test(1) / [ expression: -e -f -d -s -x -z -n, string and integer comparisons, !, -a, -o."""
    tokens = list(inv.args)
    if inv.name == "[":
        if not tokens or tokens[-1] != "]":
            yield from fail("sh: 1: [: missing ]", 2)
            return
        tokens.pop()
    try:
        result = _evaluate(inv, tokens)
    except _TestError as exc:
        yield from fail(f"sh: 1: {inv.name}: {exc}", 2)
        return
    yield Exit(0 if result else 1)


MATCHING_BUILTINS: dict[str, Handler] = {"grep": grep, "test": test, "[": test}
