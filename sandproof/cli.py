"""The ``sandproof`` command: ``serve`` the mocks, print their ``env``, ``check`` a target, ``record`` and ``replay``.

This is the top layer: ``serve`` and ``env`` go to :mod:`mockserver.serve`, ``check`` to :mod:`harness.cli`,
``record`` and ``replay`` to :mod:`harness.recording.cli` (each imported only when asked for, so serving never
loads the test stack).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mockserver.linux.limits import SandboxLimits

__all__ = ["HARNESS_MODULES", "main", "missing_harness", "parser"]

#: What ``sandproof check`` needs beyond the base install (the ``harness`` extra).
HARNESS_MODULES = ("pytest", "hypothesis", "schemathesis")


def missing_harness() -> list[str]:
    """Return the harness extra's modules that are not installed."""
    return [name for name in HARNESS_MODULES if importlib.util.find_spec(name) is None]


def _serve_options(cmd: argparse.ArgumentParser) -> None:
    """Add ``serve``'s own options to ``cmd``; every help text names the default."""
    from mockserver.serve import (
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_KEEP_ALIVE,
        DEFAULT_LINUX_MAX_SANDBOXES,
    )

    cmd.add_argument(
        "--api-key",
        action="append",
        default=[],
        help="accept only this key (repeatable; default: any non-empty key, each its own tenant)",
    )
    cmd.add_argument("--state-file", help="keep state in this SQLite file across restarts (default: in memory)")
    cmd.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="FILE",
        help="start in this scenario (JSON or TOML: keys, faults, DNS, clock, seed sandboxes; repeatable, one file "
        "a provider; GET /_mock/scenario exports one; see docs/scenarios.md) (default: none)",
    )
    cmd.add_argument("--seed", type=int, default=None, help="make ids deterministic (default: random ids)")
    cmd.add_argument(
        "--clock", choices=["wall", "manual", "auto"], default="wall", help="virtual clock mode (default: %(default)s)"
    )
    cmd.add_argument(
        "--keep-alive", type=float, default=DEFAULT_KEEP_ALIVE, help="idle keep-alive seconds (default: %(default)s)"
    )
    cmd.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections per mock; over it the longest-idle are closed (default: what the fd limit allows)",
    )
    cmd.add_argument(
        "--admin-token",
        default=None,
        help="require this token on /_mock (needed off loopback; default: none, /_mock open on loopback)",
    )
    cmd.add_argument(
        "--execd-token",
        default=None,
        help="OpenSandbox execd requires X-EXECD-ACCESS-TOKEN with this value (default: no token required)",
    )
    cmd.add_argument(
        "--runtime",
        choices=["emulator", "linux"],
        default="emulator",
        help="what runs the sandboxes: the command emulator or real programs in Linux namespaces "
        "(needs root, bubblewrap, nftables, iproute2; see docs/runtime.md) (default: %(default)s)",
    )
    cmd.add_argument(
        "--max-sandboxes",
        type=int,
        default=None,
        help="live sandboxes both APIs may hold together; past it a create gets the provider's capacity error "
        f"(TensorLake no_capacity, OpenSandbox 429 POOL_CAPACITY_EXHAUSTED) (default: {DEFAULT_LINUX_MAX_SANDBOXES} "
        "with --runtime linux, no cap with the emulator)",
    )
    cmd.add_argument(
        "--opensandbox-egress-mode",
        choices=["dns", "dns+nft"],
        default="dns",
        help="the OpenSandbox egress sidecar's mode, the real server's [egress] mode: dns (names only) or dns+nft "
        "(also enforced on IP addresses) (default: %(default)s)",
    )
    cmd.add_argument(
        "--opensandbox-config",
        default=None,
        metavar="FILE",
        help="configure the OpenSandbox mock from the real opensandbox-server's own TOML file: runtime, "
        "[server] api_key and max_sandbox_timeout_seconds, [egress] image and mode, [docker] network_mode and "
        "port range, endpoint host, [storage] allowed_host_paths; keys missing from it take the real server's "
        "defaults (see docs/opensandbox-config.md) (default: none, the mock's own settings)",
    )
    cmd.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT,
        help="seconds a connection may take to send a request head before it is closed (default: %(default)s)",
    )
    cmd.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        help="seconds a request body may send nothing before its connection is closed (default: %(default)s)",
    )
    cmd.add_argument(
        "--sandbox-pids",
        type=int,
        default=None,
        help="linux runtime: tasks (processes and threads) per sandbox (default: 1024)",
    )
    cmd.add_argument(
        "--sandbox-memory",
        default=None,
        help="linux runtime: memory limit of a sandbox whose create request names none, e.g. 2G (default: 2G)",
    )
    cmd.add_argument(
        "--sandbox-disk",
        default=None,
        help="linux runtime: writable storage of a sandbox whose create request names none (default: 10G)",
    )


def _sandbox_limits(args: argparse.Namespace) -> SandboxLimits | None:
    """Return the limits the ``--sandbox-*`` options ask for (None: the defaults); ValueError if unreadable."""
    if args.sandbox_memory is None and args.sandbox_pids is None and args.sandbox_disk is None:
        return None
    from mockserver.linux.limits import SandboxLimits, parse_size

    defaults = SandboxLimits()
    return SandboxLimits(
        memory_bytes=parse_size(args.sandbox_memory) if args.sandbox_memory else defaults.memory_bytes,
        pids=args.sandbox_pids if args.sandbox_pids is not None else defaults.pids,
        disk_bytes=parse_size(args.sandbox_disk) if args.sandbox_disk else defaults.disk_bytes,
    )


def parser() -> argparse.ArgumentParser:
    """Return the command-line parser (``check`` parses its own arguments)."""
    from mockserver.core.environment import DEFAULT_API_KEY
    from mockserver.serve import OPENSANDBOX_PORT, TENSORLAKE_PORT

    top = argparse.ArgumentParser(prog="sandproof", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    for name, helptext in (("serve", "run both mocks until interrupted"), ("env", "print SDK env exports")):
        cmd = sub.add_parser(name, help=helptext, description=f"sandproof {name}: {helptext}.")
        cmd.add_argument("--host", default="127.0.0.1", help="address to bind / advertise (default: %(default)s)")
        cmd.add_argument(
            "--tensorlake-port", type=int, default=TENSORLAKE_PORT, help="TensorLake mock port (default: %(default)s)"
        )
        cmd.add_argument(
            "--opensandbox-port",
            type=int,
            default=OPENSANDBOX_PORT,
            help="OpenSandbox mock port (default: %(default)s)",
        )
        if name == "serve":
            _serve_options(cmd)
        else:
            cmd.add_argument("--api-key", default=None, help=f"the key the SDKs send (default: {DEFAULT_API_KEY})")
    sub.add_parser("check", help="run the contract suite against a target (sandproof check --help)", add_help=False)
    sub.add_parser("record", help="record a server's traffic into a cassette (sandproof record --help)", add_help=False)
    sub.add_parser("replay", help="replay cassettes against a target (sandproof replay --help)", add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sandproof`` command; return its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "check":
        missing = missing_harness()
        if missing:
            print(
                f"sandproof check needs the harness extra (missing: {', '.join(missing)}): "
                "pip install 'sandproof[harness]'",
                file=sys.stderr,
            )
            return 2
        from harness.cli import main as check_main

        return check_main(args_list[1:])
    if args_list and args_list[0] in ("record", "replay"):
        from harness.recording import cli as recording_cli

        command = recording_cli.record_main if args_list[0] == "record" else recording_cli.replay_main
        return command(args_list[1:])
    args = parser().parse_args(args_list)
    if args.command == "serve":
        from mockserver.serve import ServeError, ServeOptions, serve

        try:
            limits = _sandbox_limits(args)
        except ValueError as exc:
            print(f"sandproof serve: {exc}", file=sys.stderr)
            return 2
        options = ServeOptions(
            host=args.host,
            tensorlake_port=args.tensorlake_port,
            opensandbox_port=args.opensandbox_port,
            api_keys=tuple(args.api_key),
            state_file=args.state_file,
            seed=args.seed,
            clock=args.clock,
            keep_alive=args.keep_alive,
            max_connections=args.max_connections,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            sandbox_limits=limits,
            admin_token=args.admin_token,
            execd_token=args.execd_token,
            runtime=args.runtime,
            scenarios=tuple(args.scenario),
            max_sandboxes=args.max_sandboxes,
            opensandbox_egress_mode=args.opensandbox_egress_mode,
            opensandbox_config=args.opensandbox_config,
        )
        try:
            return serve(options, out=lambda line: print(line, flush=True))
        except ServeError as exc:
            print(f"sandproof serve: {exc}", file=sys.stderr)
            return 2
    from mockserver.core.environment import DEFAULT_API_KEY
    from mockserver.serve import env_lines

    for line in env_lines(args.host, args.tensorlake_port, args.opensandbox_port, args.api_key or DEFAULT_API_KEY):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
