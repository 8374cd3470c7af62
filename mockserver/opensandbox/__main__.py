"""Serve the OpenSandbox mock standalone on 127.0.0.1:8080 (the SDK's default domain), wall clock."""

from __future__ import annotations

import argparse
import time

from mockserver.core import VirtualClock

from .mock import OpenSandboxMock


def main(argv: list[str] | None = None) -> int:
    """Run the mock until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m mockserver.opensandbox")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--profile", choices=["docker", "kubernetes"], default="docker")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    mock = OpenSandboxMock(
        seed=args.seed, clock=VirtualClock("wall", start=time.time()), api_key=args.api_key, profile=args.profile
    )
    with mock.server(port=args.port, timeout_keep_alive=30.0) as server:
        print(f"OpenSandbox mock on {server.url} (export OPEN_SANDBOX_DOMAIN={server.url[7:]})", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
