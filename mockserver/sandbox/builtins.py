"""Text and system builtins of the command emulator (echo, printf, cat, head, grep, test, ...)."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator, Sequence

from .filesystem import FsError
from .steps import Exit, Handler, Invocation, Sleep, Step, err, fail, out, read_stdin, stream_stdin


class UsageError(Exception):
    """Signal a bad command-line option."""


def parse_opts(args: Sequence[str], flags: str, valued: str = "") -> tuple[set[str], dict[str, str], list[str]]:
    """Split combinable short options (anywhere; `--` ends them) from operands."""
    found: set[str] = set()
    values: dict[str, str] = {}
    operands: list[str] = []
    queue = list(args)
    while queue:
        arg = queue.pop(0)
        if arg == "--":
            operands.extend(queue)
            break
        if not arg.startswith("-") or arg == "-":
            operands.append(arg)
            continue
        if arg.startswith("--"):
            raise UsageError(f"unrecognized option '{arg}'")
        for index, ch in enumerate(arg[1:], start=1):
            if ch in valued:
                value = arg[index + 1 :] or (queue.pop(0) if queue else None)
                if value is None:
                    raise UsageError(f"option requires an argument -- '{ch}'")
                values[ch] = value
                break
            if ch not in flags:
                raise UsageError(f"invalid option -- '{ch}'")
            found.add(ch)
    return found, values, operands


def read_inputs(inv: Invocation, operands: Sequence[str]) -> Generator[Step, None, list[tuple[str, bytes | FsError]]]:
    """Return (name, content or error) for each operand; no operands or `-` mean stdin (an open pipe is waited on)."""
    inputs: list[tuple[str, bytes | FsError]] = []
    for name in operands or ["-"]:
        if name == "-":
            inputs.append((name, (yield from read_stdin(inv.stdin))))
            continue
        try:
            inputs.append((name, inv.fs.read(inv.path(name))))
        except FsError as exc:
            inputs.append((name, exc))
    return inputs


def unescape(text: str) -> tuple[bytes, bool]:
    """Interpret backslash escapes as echo -e does; return the bytes and whether `\\c` stopped output."""
    result = bytearray()
    simple = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}
    i = 0
    while i < len(text):
        ch = text[i]
        nxt = text[i + 1 : i + 2]
        if ch != "\\" or not nxt:
            result += ch.encode()
            i += 1
        elif nxt in simple:
            result += simple[nxt]
            i += 2
        elif nxt == "c":
            return bytes(result), True
        elif nxt == "e":
            result += b"\x1b"
            i += 2
        elif nxt == "0" or nxt == "x":
            pattern = r"[0-7]{0,3}" if nxt == "0" else r"[0-9a-fA-F]{1,2}"
            match = re.match(pattern, text[i + 2 :])
            digits = match.group(0) if match else ""
            if nxt == "x" and not digits:
                result += b"\\x"
            else:
                result.append(int(digits or "0", 8 if nxt == "0" else 16) & 0xFF)
            i += 2 + len(digits)
        else:
            result += b"\\" + nxt.encode()
            i += 2
    return bytes(result), False


def echo(inv: Invocation) -> Iterator[Step]:
    """Print the arguments (-n: no newline, -e: interpret escapes)."""
    args = list(inv.args)
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        for flag in args.pop(0)[1:]:
            newline = newline and flag != "n"
            escapes = flag == "e" if flag in "eE" else escapes
    text = " ".join(args)
    data, stopped = unescape(text) if escapes else (text.encode(), False)
    yield out(data + (b"\n" if newline and not stopped else b""))


_PRINTF_SPEC = re.compile(r"%([-+ 0#]*)(\d*)(?:\.(\d+))?([sdiouxXcbfeEgG%])")


def _number(value: str, conv: str) -> tuple[int | float, str | None]:
    if value[:1] in ("'", '"'):
        return (ord(value[1]) if len(value) > 1 else 0), None
    try:
        return (float(value) if conv in "feEgG" else int(value, 0 if value[:2].lower() == "0x" else 10)), None
    except ValueError:
        return 0, f"printf: {value}: expected numeric value"


def printf(inv: Invocation) -> Iterator[Step]:
    """Format arguments like printf(1): %s %d %i %x %o %c %b %f %%, widths, reused format."""
    if not inv.args:
        yield from fail("printf: usage: printf format [arguments]", 2)
        return
    fmt, args = inv.args[0], list(inv.args[1:])
    chunks = _PRINTF_SPEC.split(fmt)
    result = bytearray()
    code = 0
    while True:
        consumed = False
        for index in range(0, len(chunks), 5):
            literal, stopped = unescape(chunks[index])
            result += literal
            if stopped:
                yield out(bytes(result))
                yield Exit(code)
                return
            if index + 4 >= len(chunks):
                break
            flags, width, precision, conv = chunks[index + 1 : index + 5]
            if conv == "%":
                result += b"%"
                continue
            value = args.pop(0) if args else ""
            consumed = consumed or bool(value) or bool(args)
            spec = f"%{flags}{width}{'.' + precision if precision else ''}"
            if conv in "sc":
                result += ((spec + "s") % (value[:1] if conv == "c" else value)).encode()
            elif conv == "b":
                result += unescape(value)[0]
            else:
                number, problem = _number(value or "0", conv)
                if problem:
                    yield err(problem + "\n")
                    code = 1
                py_conv = {"i": "d", "u": "d"}.get(conv, conv)
                result += ((spec + py_conv) % (number if conv in "feEgG" else int(number))).encode()
        if not args or not consumed:
            break
    yield out(bytes(result))
    yield Exit(code)


def cat(inv: Invocation) -> Iterator[Step]:
    """Concatenate files (or stdin, an open pipe's writes as they come) to stdout."""
    code = 0
    for name in [a for a in inv.args if a not in ("-u",)] or ["-"]:
        if name == "-":
            yield from stream_stdin(inv.stdin)
            continue
        try:
            content = inv.fs.read(inv.path(name))
        except FsError as exc:
            yield err(f"cat: {name}: {exc.strerror}\n")
            code = 1
            continue
        if content:
            yield out(content)
    yield Exit(code)


def _count_args(args: Sequence[str]) -> list[str]:
    return [
        f"-n{arg[1:]}" if re.fullmatch(r"-\d+", arg) and (i == 0 or args[i - 1] not in ("-n", "-c")) else arg
        for i, arg in enumerate(args)
    ]


def _head_tail(inv: Invocation, tail: bool) -> Iterator[Step]:
    name = "tail" if tail else "head"
    try:
        _, values, operands = parse_opts(_count_args(inv.args), "qvf", "nc")
    except UsageError as exc:
        yield from fail(f"{name}: {exc}", 1)
        return
    raw = values.get("c", values.get("n", "10"))
    from_start = tail and raw.startswith("+")
    if not raw.lstrip("+-").isdigit():
        yield from fail(f"{name}: invalid number of {'bytes' if 'c' in values else 'lines'}: '{raw}'", 1)
        return
    count, code = int(raw.lstrip("+-")), 0
    multiple = len(operands) > 1
    for position, (label, content) in enumerate((yield from read_inputs(inv, operands))):
        if isinstance(content, FsError):
            yield err(f"{name}: cannot open '{label}' for reading: {content.strerror}\n")
            code = 1
            continue
        if multiple:
            yield out(f"{chr(10) if position else ''}==> {'standard input' if label == '-' else label} <==\n")
        units: Sequence[bytes] = (
            [content[i : i + 1] for i in range(len(content))] if "c" in values else content.splitlines(True)
        )
        if from_start:
            picked = units[max(count - 1, 0) :]
        elif tail:
            picked = units[len(units) - count :] if count else []
        else:
            picked = units[:count]
        yield out(b"".join(picked))
    yield Exit(code)


def head(inv: Invocation) -> Iterator[Step]:
    """Print the first lines (-n N) or bytes (-c N) of each input."""
    return _head_tail(inv, tail=False)


def tail(inv: Invocation) -> Iterator[Step]:
    """Print the last lines (-n N, +N from line N) or bytes (-c N) of each input."""
    return _head_tail(inv, tail=True)


def wc(inv: Invocation) -> Iterator[Step]:
    """Count lines (-l), words (-w) and bytes (-c) of each input."""
    try:
        flags, _, operands = parse_opts(inv.args, "lwcm")
    except UsageError as exc:
        yield from fail(f"wc: {exc}", 1)
        return
    chosen = [f for f in "lwc" if f in flags or (f == "c" and "m" in flags)] or ["l", "w", "c"]
    rows: list[tuple[list[int], str]] = []
    code = 0
    for name, content in (yield from read_inputs(inv, operands)):
        if isinstance(content, FsError):
            yield err(f"wc: {name}: {content.strerror}\n")
            code = 1
            continue
        counts = {"l": content.count(b"\n"), "w": len(content.split()), "c": len(content)}
        rows.append(([counts[f] for f in chosen], "" if name == "-" and not operands else name))
    if len(rows) > 1:
        rows.append(([sum(r[0][i] for r in rows) for i in range(len(chosen))], "total"))
    single = len(rows) == 1 and len(chosen) == 1
    width = 1 if single else max([len(str(n)) for r in rows for n in r[0]] + [1])
    if not operands and not single:
        width = 7
    text = "".join(
        " ".join(f"{n:>{width}}" for n in nums) + (f" {label}" if label else "") + "\n" for nums, label in rows
    )
    yield out(text)
    yield Exit(code)


def sleep_seconds(text: str) -> float | None:
    """Parse a sleep(1)/timeout(1) duration such as `1.5`, `2m` or `infinity`."""
    if text in ("inf", "infinity"):
        return float("inf")
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", text)
    if not match:
        return None
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def sleep(inv: Invocation) -> Iterator[Step]:
    """Yield a Sleep step for the total of the given intervals."""
    if not inv.args:
        yield from fail("sleep: missing operand", 1)
        return
    total = 0.0
    for arg in inv.args:
        seconds = sleep_seconds(arg)
        if seconds is None:
            yield from fail(f"sleep: invalid time interval '{arg}'", 1)
            return
        total += seconds
    if total > 0:
        yield Sleep(total)
    yield Exit(0)


def _constant(code: int, text: str = "") -> Handler:
    def handler(inv: Invocation) -> Iterator[Step]:
        if text:
            yield out(text)
        yield Exit(code)

    return handler


def pwd(inv: Invocation) -> Iterator[Step]:
    """Print the working directory."""
    yield out(inv.cwd + "\n")


def whoami(inv: Invocation) -> Iterator[Step]:
    """Print the sandbox user."""
    yield out(inv.user + "\n")


def hostname(inv: Invocation) -> Iterator[Step]:
    """Print the sandbox hostname."""
    yield out(inv.hostname + "\n")


def uname(inv: Invocation) -> Iterator[Step]:
    """Print system information (-a -s -n -r -m)."""
    fields = {"s": "Linux", "n": inv.hostname, "r": "6.1.0-sandbox", "v": "#1 SMP", "m": "x86_64", "o": "GNU/Linux"}
    wanted = "snrvmo" if "-a" in inv.args else "".join(a.lstrip("-") for a in inv.args) or "s"
    yield out(" ".join(fields[f] for f in "snrvmo" if f in wanted) + "\n")


def id_(inv: Invocation) -> Iterator[Step]:
    """Print user and group ids (-u, -g, -n)."""
    uid = 0 if inv.user == "root" else 1000
    flags = "".join(a.lstrip("-") for a in inv.args)
    if "u" in flags or "g" in flags:
        yield out((inv.user if "n" in flags else str(uid)) + "\n")
        return
    yield out(f"uid={uid}({inv.user}) gid={uid}({inv.user}) groups={uid}({inv.user})\n")


def basename(inv: Invocation) -> Iterator[Step]:
    """Strip directories (and an optional suffix) from a path."""
    if not inv.args:
        yield from fail("basename: missing operand", 1)
        return
    name = inv.args[0].rstrip("/").rsplit("/", 1)[-1] or "/"
    suffix = inv.args[1] if len(inv.args) > 1 else ""
    if suffix and name.endswith(suffix) and name != suffix:
        name = name[: -len(suffix)]
    yield out(name + "\n")


def dirname(inv: Invocation) -> Iterator[Step]:
    """Strip the last component from a path."""
    if not inv.args:
        yield from fail("dirname: missing operand", 1)
        return
    path = inv.args[0].rstrip("/")
    head_part = path.rsplit("/", 1)[0] if "/" in path else "."
    yield out((head_part.rstrip("/") or "/") + "\n")


TEXT_BUILTINS: dict[str, Handler] = {
    "echo": echo,
    "printf": printf,
    "cat": cat,
    "head": head,
    "tail": tail,
    "wc": wc,
    "true": _constant(0),
    "false": _constant(1),
    "sleep": sleep,
    "pwd": pwd,
    "whoami": whoami,
    "hostname": hostname,
    "uname": uname,
    "id": id_,
    "basename": basename,
    "dirname": dirname,
}
