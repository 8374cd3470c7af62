"""Serve the real opensandbox-server 1.1.1 with sandproof's own execd, or check the contract suite against it.

``python -m harness.differential.serve_real`` starts the real server on the fake Docker Engine API
(:class:`~harness.differential.real_server.RealOpenSandboxServer`), with every sandbox's execd served by a sandbox of
its own in sandproof's OpenSandbox mock (:class:`~harness.differential.execd.MockExecd`), prints the URL and the
API key as shell lines (``OPEN_SANDBOX_URL=...``, ``OPEN_SANDBOX_API_KEY=...``) and serves until interrupted.

``python -m harness.differential.serve_real --check [ARGS...]`` starts the same server, runs
``sandproof check --target opensandbox:URL ARGS...`` against it with ``OPEN_SANDBOX_API_KEY`` set, stops the
server and exits with the check's status (``make contracts-real``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from harness.differential.execd import MockExecd, SidecarReadiness
from harness.differential.real_server import RealOpenSandboxServer, RealOpenSandboxUnavailable

__all__ = ["STAND_IN", "build_parser", "check_command", "main", "real_server"]

#: What the run says about the runtime behind the server's sandboxes.
STAND_IN = (
    "each sandbox's execd is served by sandproof's own (a sandbox of its own in sandproof's OpenSandbox mock); "
    "no egress sidecar runs"
)


@contextmanager
def real_server(*, api_key: str = "sandproof-real-key") -> Iterator[RealOpenSandboxServer]:
    """Run the real server with sandproof's own execd behind every sandbox; stop both on exit."""
    execd = MockExecd()
    try:
        with RealOpenSandboxServer(api_key=api_key, execd=execd, egress=SidecarReadiness()) as server:
            yield server
    finally:
        execd.mock.close()


def check_command(url: str, args: Sequence[str]) -> list[str]:
    """Return the ``sandproof check`` command line against the real server at ``url``."""
    return [sys.executable, "-m", "harness.cli", "--target", f"opensandbox:{url}", *args]


def build_parser() -> argparse.ArgumentParser:
    """Return the command line parser."""
    parser = argparse.ArgumentParser(
        prog="python -m harness.differential.serve_real",
        description="Serve the real opensandbox-server 1.1.1 (fake Docker, sandproof's execd), or check it.",
    )
    parser.add_argument("--key", default="sandproof-real-key", help="the server's API key")
    parser.add_argument(
        "--check",
        action="store_true",
        help="run `sandproof check --target opensandbox:URL` with the remaining arguments, then stop",
    )
    return parser


def _stop(signum: int, frame: object) -> None:
    """Stop on SIGTERM as on Ctrl-C, so the server and the fake Docker API are shut down."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Serve (or check) the real server; return the exit status."""
    signal.signal(signal.SIGTERM, _stop)
    args, rest = build_parser().parse_known_args(list(sys.argv[1:] if argv is None else argv))
    if rest and not args.check:
        build_parser().error(f"unrecognized arguments: {' '.join(rest)} (only --check passes arguments on)")
    try:
        with real_server(api_key=args.key) as server:
            print(f"OPEN_SANDBOX_URL={server.url}", flush=True)
            print(f"OPEN_SANDBOX_API_KEY={server.api_key}", flush=True)
            print(f"# the real opensandbox-server 1.1.1 (fake Docker Engine API); {STAND_IN}", flush=True)
            if args.check:
                env = dict(os.environ, OPEN_SANDBOX_API_KEY=str(server.api_key))
                return subprocess.call(check_command(server.url, rest), env=env)
            print("# serving until Ctrl-C", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return 0
    except RealOpenSandboxUnavailable as exc:
        print(f"serve_real: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
