"""``sandproof serve`` as a subprocess on free ports, for the tests that reach the served mocks over HTTP only.

:func:`bench_module` imports one of the ``bench/`` scripts (a folder of scripts, not a package) for the tests
that run a short version of a benchmark.
"""

from __future__ import annotations

import importlib.util
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def bench_module(name: str) -> ModuleType:
    """Import ``bench/<name>.py`` as a module (its folder goes on the path for its own imports)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"sandproof_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@contextmanager
def served(*extra: str) -> Iterator[tuple[dict[str, str], list[str]]]:
    """Run ``sandproof serve`` (with ``extra`` arguments) on free ports until its banner's last line.

    Yield both mocks' URLs and the lines it printed up to then (a scenario's are among them); on exit the
    server gets SIGINT and is waited for.
    """
    command = [sys.executable, "-m", "sandproof.cli", "serve", "--tensorlake-port", "0", "--opensandbox-port", "0"]
    proc = subprocess.Popen([*command, *extra], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        urls: dict[str, str] = {}
        lines: list[str] = []
        while not lines or not lines[-1].startswith("point the SDKs"):
            line = proc.stdout.readline()
            assert line, f"serve exited before its banner: {lines}"
            lines.append(line.rstrip("\n"))
            name, _, rest = line.partition(" ")
            if name in ("tensorlake", "opensandbox") and rest.strip().startswith("http"):
                urls[name] = rest.split()[0]
        yield urls, lines
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


@contextmanager
def served_opensandbox(*extra: str) -> Iterator[str]:
    """Run ``sandproof serve`` (with ``extra`` arguments) on free ports; yield the OpenSandbox mock's URL."""
    with served(*extra) as (urls, _):
        yield urls["opensandbox"]


def closed_by_server(sock: socket.socket, wait: float) -> bool:
    """Tell whether the server closed ``sock`` within ``wait`` seconds (after an answer, or with a reset)."""
    sock.settimeout(wait)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except (TimeoutError, OSError):
        return False
    return True


def refused(port: int, within: float = 10.0) -> bool:
    """Tell whether connections to ``port`` on loopback are refused, once a listener had ``within`` seconds to stop."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return True
        time.sleep(0.02)
    return False
