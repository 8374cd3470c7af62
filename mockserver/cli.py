"""The ``sandproof`` command: ``serve`` the mocks, print their ``env``, ``check`` a target."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from mockserver.asgi.server import MockServer
from mockserver.asgi.service import HttpMock
from mockserver.core import VirtualClock
from mockserver.core.clock import DEFAULT_EPOCH

TENSORLAKE_PORT = 8911
OPENSANDBOX_PORT = 8080
DEFAULT_API_KEY = "sandproof-key"


def build_mocks(*, seed: int | None, clock_mode: str, api_key: str | None) -> dict[str, HttpMock]:
    """Create both mocks with their own virtual clocks."""
    from .opensandbox import OpenSandboxMock
    from .tensorlake import TensorLakeMock

    def clock() -> VirtualClock:
        # A standalone wall clock starts at the real time, so SDK-computed expiry times make sense.
        start = time.time() if clock_mode == "wall" else DEFAULT_EPOCH
        return VirtualClock(mode=clock_mode, start=start)  # type: ignore[arg-type]

    return {
        "tensorlake": TensorLakeMock(seed=seed, clock=clock(), api_keys=None if api_key is None else [api_key]),
        "opensandbox": OpenSandboxMock(seed=seed, clock=clock(), api_key=api_key),
    }


def env_lines(host: str, tensorlake_port: int, opensandbox_port: int, api_key: str) -> list[str]:
    """Return the ``export`` lines that point the real SDKs at running mocks."""
    base = f"http://{host}:{tensorlake_port}"
    values = {
        "TENSORLAKE_API_URL": base,
        "TENSORLAKE_SANDBOX_API_URL": base,
        "TENSORLAKE_API_KEY": api_key,
        "OPEN_SANDBOX_DOMAIN": f"{host}:{opensandbox_port}",
        "OPEN_SANDBOX_PROTOCOL": "http",
        "OPEN_SANDBOX_API_KEY": api_key,
        "OPENSANDBOX_DISABLE_METRICS": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return [f"export {name}={shlex.quote(value)}" for name, value in values.items()]


def _serve(args: argparse.Namespace) -> int:
    from .state_file import StateSaver, load_state

    mocks = build_mocks(seed=args.seed, clock_mode=args.clock, api_key=args.api_key)
    state_path = Path(args.state_file) if args.state_file else None
    if state_path is not None and load_state(state_path, mocks):
        print(f"restored state from {state_path}", flush=True)
    ports = {"tensorlake": args.tensorlake_port, "opensandbox": args.opensandbox_port}
    servers = [
        MockServer(mock.app, host=args.host, port=ports[name], timeout_keep_alive=args.keep_alive)
        for name, mock in mocks.items()
    ]
    saver = StateSaver(state_path, mocks) if state_path is not None else None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        for name, server in zip(mocks, servers, strict=True):
            server.start()
            print(f"{name:<12} {server.url}   (admin: {server.url}/_mock)", flush=True)
        if saver is not None:
            saver.start()
        print('point the SDKs at these mocks with: eval "$(sandproof env)"; Ctrl-C stops', flush=True)
        stop.wait()
    finally:
        for server in servers:
            server.stop()
        if saver is not None:
            saver.stop()
            print(f"state saved to {state_path}", flush=True)
    return 0


def _env(args: argparse.Namespace) -> int:
    for line in env_lines(args.host, args.tensorlake_port, args.opensandbox_port, args.api_key):
        print(line)
    return 0


def parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    top = argparse.ArgumentParser(prog="sandproof", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    for name, helptext in (("serve", "run both mocks until interrupted"), ("env", "print SDK env exports")):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("--host", default="127.0.0.1", help="address to bind / advertise")
        cmd.add_argument("--tensorlake-port", type=int, default=TENSORLAKE_PORT)
        cmd.add_argument("--opensandbox-port", type=int, default=OPENSANDBOX_PORT)
        cmd.add_argument("--api-key", default=DEFAULT_API_KEY, help="API key the mocks accept")
        if name == "serve":
            cmd.add_argument("--state-file", help="keep state in this JSON file across restarts")
            cmd.add_argument("--seed", type=int, default=None, help="make ids deterministic")
            cmd.add_argument("--clock", choices=["wall", "manual", "auto"], default="wall")
            cmd.add_argument("--keep-alive", type=float, default=5.0, help="idle keep-alive seconds")
    sub.add_parser("check", help="run the contract suite against a target", add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sandproof`` command."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "check":
        from harness.cli import main as check_main

        return check_main(args_list[1:])
    args = parser().parse_args(args_list)
    if args.command == "serve":
        return _serve(args)
    return _env(args)


if __name__ == "__main__":
    raise SystemExit(main())
