"""``sandproof serve`` as a subprocess on free ports, for the tests that reach the served mocks over HTTP only."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def served(*extra: str) -> Iterator[dict[str, str]]:
    """Run ``sandproof serve`` (with ``extra`` arguments) on free ports; yield both mocks' URLs by provider.

    The URLs are the ones ``serve`` prints; on exit the server gets SIGINT and is waited for.
    """
    command = [sys.executable, "-m", "sandproof.cli", "serve", "--tensorlake-port", "0", "--opensandbox-port", "0"]
    proc = subprocess.Popen([*command, *extra], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        urls: dict[str, str] = {}
        while len(urls) < 2:
            line = proc.stdout.readline()
            assert line, "serve exited before printing its URLs"
            name, _, rest = line.partition(" ")
            if name in ("tensorlake", "opensandbox"):
                urls[name] = rest.split()[0]
        yield urls
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


@contextmanager
def served_opensandbox(*extra: str) -> Iterator[str]:
    """Run ``sandproof serve`` (with ``extra`` arguments) on free ports; yield the OpenSandbox mock's URL."""
    with served(*extra) as urls:
        yield urls["opensandbox"]
