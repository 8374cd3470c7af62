"""File builtins of the command emulator (ls, mkdir, rm, touch, cp, mv, chmod, tee, find)."""

from __future__ import annotations

import fnmatch
import re
import stat as stat_module
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from .builtins import UsageError, parse_opts
from .filesystem import FileInfo, FsError, normpath
from .steps import Exit, Handler, Invocation, Step, err, fail, out, read_stdin

_T = TypeVar("_T")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _mode_string(info: FileInfo) -> str:
    kind = stat_module.S_IFDIR if info.is_dir else stat_module.S_IFREG
    return stat_module.filemode(kind | info.mode)


def _long_line(inv: Invocation, info: FileInfo, name: str, size_width: int) -> str:
    links = 1
    if info.is_dir:
        try:
            links = 2 + sum(1 for child in inv.fs.listdir(info.path) if child.is_dir)
        except FsError:
            links = 2
    t = time.gmtime(info.mtime)
    stamp = f"{_MONTHS[t.tm_mon - 1]} {t.tm_mday:>2} {t.tm_hour:02d}:{t.tm_min:02d}"
    return f"{_mode_string(info)} {links} {info.owner} {info.group} {info.size:>{size_width}} {stamp} {name}\n"


def _blocks(info: FileInfo) -> int:
    return 4 * -(-info.size // 4096) if not info.is_dir else 4


def _render(inv: Invocation, entries: list[tuple[str, FileInfo]], long: bool, total: bool) -> str:
    if not long:
        return "".join(f"{name}\n" for name, _ in entries)
    width = max([len(str(info.size)) for _, info in entries] + [1])
    header = f"total {sum(_blocks(info) for _, info in entries)}\n" if total else ""
    return header + "".join(_long_line(inv, info, name, width) for name, info in entries)


def _apply(items: Iterable[_T], act: Callable[[_T], str | None], fault: Callable[[_T, FsError], str]) -> Iterator[Step]:
    """Run ``act`` on each item, reporting its problem (or ``fault``'s words for an FsError); exit 1 if any."""
    code = 0
    for item in items:
        try:
            problem = act(item)
        except FsError as exc:
            problem = fault(item, exc)
        if problem is not None:
            yield err(problem + "\n")
            code = 1
    yield Exit(code)


def ls(inv: Invocation) -> Iterator[Step]:
    """List directory contents (-l long, -a all, -A almost all, -1 one per line, -d directories)."""
    try:
        flags, _, operands = parse_opts(inv.args, "laA1dhF")
    except UsageError as exc:
        yield from fail(f"ls: {exc}\nTry 'ls --help' for more information.", 2)
        return
    long, code = "l" in flags, 0
    files: list[tuple[str, FileInfo]] = []
    dirs: list[tuple[str, FileInfo]] = []
    for name in operands or ["."]:
        try:
            info = inv.fs.stat(inv.path(name))
        except FsError as exc:
            yield err(f"ls: cannot access '{name}': {exc.strerror}\n")
            code = 2
            continue
        (dirs if info.is_dir and "d" not in flags else files).append((name, info))
    chunks: list[str] = [_render(inv, files, long, total=False)] if files else []
    for name, info in dirs:
        entries = [(child.name, child) for child in inv.fs.listdir(info.path)]
        if "a" in flags:
            parent = inv.fs.stat(normpath(info.path + "/.."))
            entries = [(".", info), ("..", parent), *entries]
        elif "A" not in flags:
            entries = [(n, i) for n, i in entries if not n.startswith(".")]
        title = f"{name}:\n" if len(operands) > 1 else ""
        chunks.append(title + _render(inv, entries, long, total=True))
    yield out("\n".join(chunks))
    yield Exit(code)


def mkdir(inv: Invocation) -> Iterator[Step]:
    """Create directories (-p parents, -m MODE)."""
    try:
        flags, values, operands = parse_opts(inv.args, "pv", "m")
        mode = int(values.get("m", "755"), 8)
    except (UsageError, ValueError) as exc:
        yield from fail(f"mkdir: {exc}", 1)
        return
    if not operands:
        yield from fail("mkdir: missing operand", 1)
        return

    def make(name: str) -> None:
        path = inv.path(name)
        if "p" in flags and inv.fs.exists(path) and not inv.fs.is_dir(path):
            raise FsError("exists", path)
        inv.fs.mkdir(path, mode, parents="p" in flags)

    yield from _apply(operands, make, lambda name, exc: f"mkdir: cannot create directory '{name}': {exc.strerror}")


def rmdir(inv: Invocation) -> Iterator[Step]:
    """Remove empty directories."""

    def remove(name: str) -> None:
        path = inv.path(name)
        if not inv.fs.stat(path).is_dir:
            raise FsError("not_a_directory", path)
        inv.fs.remove(path)

    yield from _apply(inv.args, remove, lambda name, exc: f"rmdir: failed to remove '{name}': {exc.strerror}")


def rm(inv: Invocation) -> Iterator[Step]:
    """Remove files and directories (-r/-R recursive, -f force, -d empty dirs)."""
    try:
        flags, _, operands = parse_opts(inv.args, "rRfdvi")
    except UsageError as exc:
        yield from fail(f"rm: {exc}", 1)
        return
    recursive, force = bool(flags & {"r", "R"}), "f" in flags
    if not operands and not force:
        yield from fail("rm: missing operand", 1)
        return
    code = 0
    for name in operands:
        try:
            path = inv.path(name)
            if path == "/" and recursive:
                yield err("rm: it is dangerous to operate recursively on '/'\n")
                yield err("rm: use --no-preserve-root to override this failsafe\n")
                code = 1
                continue
            info = inv.fs.stat(path)
            if info.is_dir and not recursive and "d" not in flags:
                raise FsError("is_a_directory", path)
            inv.fs.remove(path, recursive=recursive)
        except FsError as exc:
            if not (force and exc.code == "not_found"):
                yield err(f"rm: cannot remove '{name}': {exc.strerror}\n")
                code = 1
    yield Exit(code)


def touch(inv: Invocation) -> Iterator[Step]:
    """Create empty files or bump their modification time (-c: do not create)."""
    try:
        flags, _, operands = parse_opts(inv.args, "cam")
    except UsageError as exc:
        yield from fail(f"touch: {exc}", 1)
        return

    def bump(name: str) -> None:
        path = inv.path(name)
        if not (inv.fs.is_dir(path) or ("c" in flags and not inv.fs.exists(path))):
            inv.fs.write(path, b"", append=True)

    yield from _apply(operands, bump, lambda name, exc: f"touch: cannot touch '{name}': {exc.strerror}")


def _copy(inv: Invocation, src: str, dst: str) -> None:
    info = inv.fs.stat(src)
    if not info.is_dir:
        inv.fs.write(dst, inv.fs.read(src), mode=info.mode)
        return
    if dst == src or dst.startswith(src.rstrip("/") + "/"):
        raise FsError("invalid_path", dst)
    for entry in inv.fs.walk(src):
        target = dst + entry.path[len(src) :] if src != "/" else dst + entry.path
        if entry.is_dir:
            inv.fs.mkdir(target, entry.mode, parents=True)
        else:
            inv.fs.write(target, inv.fs.read(entry.path), mode=entry.mode)


def _targets(inv: Invocation, name: str, operands: list[str]) -> Iterator[tuple[str, str, str]] | str:
    if len(operands) < 2:
        return f"{name}: missing destination file operand" if operands else f"{name}: missing file operand"
    *sources, dest = operands
    dest_path = inv.path(dest)
    into_dir = inv.fs.is_dir(dest_path)
    if len(sources) > 1 and not into_dir:
        return f"{name}: target '{dest}' is not a directory"

    def pairs() -> Iterator[tuple[str, str, str]]:
        for src in sources:
            src_path = inv.path(src)
            base = src_path.rsplit("/", 1)[-1]
            yield src, src_path, normpath(dest_path + "/" + base) if into_dir else dest_path

    return pairs()


_Pair = tuple[str, str, str]


def _transfer(
    inv: Invocation,
    name: str,
    spec: str,
    act: Callable[[set[str], _Pair], str | None],
    fault: Callable[[_Pair, FsError], str],
) -> Iterator[Step]:
    """Parse a cp/mv command line and run ``act`` on each (source, source path, destination path)."""
    try:
        flags, _, operands = parse_opts(inv.args, spec)
    except UsageError as exc:
        yield from fail(f"{name}: {exc}", 1)
        return
    pairs = _targets(inv, name, operands)
    if isinstance(pairs, str):
        yield from fail(pairs, 1)
        return
    yield from _apply(pairs, lambda pair: act(flags, pair), fault)


def cp(inv: Invocation) -> Iterator[Step]:
    """Copy files (-r/-R/-a for directories)."""

    def copy(flags: set[str], pair: _Pair) -> str | None:
        src, src_path, dst_path = pair
        if inv.fs.stat(src_path).is_dir and not flags & {"r", "R", "a"}:
            return f"cp: -r not specified; omitting directory '{src}'"
        _copy(inv, src_path, dst_path)
        return None

    def fault(pair: _Pair, exc: FsError) -> str:
        src, src_path, dst_path = pair
        verb = "stat" if exc.code == "not_found" and not inv.fs.exists(src_path) else "copy"
        target = f"'{src}'" if verb == "stat" else f"'{src}' to '{dst_path}'"
        return f"cp: cannot {verb} {target}: {exc.strerror}"

    yield from _transfer(inv, "cp", "rRafpv", copy, fault)


def mv(inv: Invocation) -> Iterator[Step]:
    """Move or rename files and directories."""

    def move(_flags: set[str], pair: _Pair) -> str | None:
        src, src_path, dst_path = pair
        if not inv.fs.exists(src_path):
            return f"mv: cannot stat '{src}': No such file or directory"
        inv.fs.move(src_path, dst_path)
        return None

    def fault(pair: _Pair, exc: FsError) -> str:
        return f"mv: cannot move '{pair[0]}' to '{pair[2]}': {exc.strerror}"

    yield from _transfer(inv, "mv", "fvin", move, fault)


def apply_mode(current: int, spec: str, is_dir: bool) -> int:
    """Apply an octal or symbolic (u+x,go-w,a=r) chmod spec to `current`; raise ValueError if invalid."""
    if re.fullmatch(r"[0-7]{1,4}", spec):
        return int(spec, 8)
    mode = current
    for clause in spec.split(","):
        match = re.fullmatch(r"([ugoa]*)([-+=])([rwxXst]*)", clause)
        if not match:
            raise ValueError(spec)
        who, op, perms = match.groups()
        who = who.replace("a", "ugo") or "ugo"
        bits = 0
        for person in who:
            shift = {"u": 6, "g": 3, "o": 0}[person]
            for perm in perms:
                if perm == "X" and not (is_dir or current & 0o111):
                    continue
                bits |= {"r": 4, "w": 2, "x": 1, "X": 1}.get(perm, 0) << shift
            if "s" in perms and person in "ug":
                bits |= 0o4000 if person == "u" else 0o2000
        if "t" in perms:
            bits |= 0o1000
        if op == "+":
            mode |= bits
        elif op == "-":
            mode &= ~bits
        else:
            mask = sum(0o7 << {"u": 6, "g": 3, "o": 0}[p] for p in set(who))
            mode = (mode & ~mask) | bits
    return mode & 0o7777


def chmod(inv: Invocation) -> Iterator[Step]:
    """Change permission bits (octal or symbolic; -R recursive)."""
    args = list(inv.args)
    recursive = "-R" in args
    args = [a for a in args if a != "-R"]
    if len(args) < 2:
        yield from fail("chmod: missing operand", 1)
        return
    spec, names = args[0], args[1:]
    code = 0
    for name in names:
        try:
            infos = inv.fs.walk(inv.path(name)) if recursive else [inv.fs.stat(inv.path(name))]
            for info in infos:
                inv.fs.chmod(info.path, apply_mode(info.mode, spec, info.is_dir))
        except FsError as exc:
            yield err(f"chmod: cannot access '{name}': {exc.strerror}\n")
            code = 1
        except ValueError:
            yield from fail(f"chmod: invalid mode: '{spec}'", 1)
            return
    yield Exit(code)


def tee(inv: Invocation) -> Iterator[Step]:
    """Copy stdin to stdout and to each file (-a append)."""
    append = "-a" in inv.args
    code = 0
    data = yield from read_stdin(inv.stdin)
    for name in (a for a in inv.args if a != "-a"):
        try:
            inv.fs.write(inv.path(name), data, append=append)
        except FsError as exc:
            yield err(f"tee: {name}: {exc.strerror}\n")
            code = 1
    yield out(data)
    yield Exit(code)


def find(inv: Invocation) -> Iterator[Step]:
    """Walk directories printing paths (-name, -iname, -type f|d, -maxdepth, -mindepth)."""
    args = list(inv.args)
    roots: list[str] = []
    while args and not args[0].startswith("-"):
        roots.append(args.pop(0))
    tests: dict[str, str] = {}
    while args:
        primary = args.pop(0)
        if primary not in ("-name", "-iname", "-type", "-maxdepth", "-mindepth") or not args:
            yield from fail(f"find: unknown predicate '{primary}'", 1)
            return
        tests[primary] = args.pop(0)
    depths = (tests.get("-mindepth", "0"), tests.get("-maxdepth", "1000000"))
    if not all(d.isdigit() for d in depths) or tests.get("-type", "f") not in ("f", "d"):
        yield from fail("find: invalid argument to -type/-mindepth/-maxdepth", 1)
        return
    min_depth, max_depth = int(depths[0]), int(depths[1])
    code, lines = 0, []
    for root in roots or ["."]:
        base = inv.path(root)
        try:
            entries = inv.fs.walk(base)
        except FsError as exc:
            yield err(f"find: '{root}': {exc.strerror}\n")
            code = 1
            continue
        for info in entries:
            rel = info.path[len(base) :].lstrip("/") if base != "/" else info.path.lstrip("/")
            depth = rel.count("/") + 1 if rel else 0
            shown = root.rstrip("/") + "/" + rel if rel else root
            if not min_depth <= depth <= max_depth:
                continue
            if "-type" in tests and (tests["-type"] == "d") != info.is_dir:
                continue
            if "-name" in tests and not fnmatch.fnmatchcase(info.name, tests["-name"]):
                continue
            if "-iname" in tests and not fnmatch.fnmatch(info.name.lower(), tests["-iname"].lower()):
                continue
            lines.append(shown + "\n")
    yield out("".join(lines))
    yield Exit(code)


FILE_BUILTINS: dict[str, Handler] = {
    "ls": ls,
    "mkdir": mkdir,
    "rmdir": rmdir,
    "rm": rm,
    "touch": touch,
    "cp": cp,
    "mv": mv,
    "chmod": chmod,
    "tee": tee,
    "find": find,
}
