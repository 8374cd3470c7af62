"""A Python code context: one long-lived interpreter that runs cells in shared globals, like a Jupyter kernel.

Run inside a sandbox as ``python3 /.sandproof/kernel.py <marker>`` with stdin a pipe. Each request is one
line of JSON on stdin, ``{"code": "..."}``. The cell runs in the context's globals (a variable one cell
sets, the next one reads); what it prints goes straight to file descriptors 1 and 2, so the output of child
processes it starts arrives too. When the cell ends, the kernel writes the marker and one line of JSON to
*both* stdout and stderr:

    <marker>{"count": n, "result": "<repr of the last expression>" | null, "error": null | {...}}\\n

so the reader knows every byte of the cell's output on either stream came before it. ``error`` is
``{"ename", "evalue", "traceback": [...]}``. SIGINT interrupts the running cell (``KeyboardInterrupt``)
and is ignored between cells, so the kernel always waits for the next one. It uses the standard library only.
"""

import ast
import json
import os
import signal
import sys
import traceback


class _Stream:
    """A text stream writing straight to a file descriptor (no buffering: output is seen as it comes)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.encoding = "utf-8"
        self.errors = "replace"

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.fd

    def writable(self) -> bool:
        return True


def _run(code: str, scope: dict[str, object]) -> tuple[object, bool]:
    """Run a cell; return the value of its last expression (and whether there was one)."""
    tree = ast.parse(code, "<cell>", "exec")
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body = tree.body[:-1]
    exec(compile(tree, "<cell>", "exec"), scope)
    if last is None:
        return None, False
    value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), scope)
    return value, True


def _error(exc: BaseException) -> dict[str, object]:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {"ename": type(exc).__name__, "evalue": str(exc), "traceback": [line.rstrip("\n") for line in lines]}


def main() -> None:
    marker = sys.argv[1]
    stdin = os.fdopen(0, "rb", buffering=0)
    sys.stdout = _Stream(1)
    sys.stderr = _Stream(2)
    sys.stdin = open(os.devnull)  # noqa: SIM115  # the cells' stdin: the control pipe is ours
    scope: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    count = 0
    pending = b""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        chunk = stdin.read(65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if not line.strip():
                continue
            count += 1
            result, error = None, None
            try:
                code = json.loads(line)["code"]
                signal.signal(signal.SIGINT, signal.default_int_handler)
                try:
                    value, has_value = _run(code, scope)
                finally:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                if has_value and value is not None:
                    result = repr(value)
            except BaseException as exc:  # a cell's failure, SystemExit included, is reported
                error = _error(exc)
            report = marker + json.dumps({"count": count, "result": result, "error": error}) + "\n"
            for fd in (1, 2):
                os.write(fd, report.encode())


if __name__ == "__main__":
    main()
