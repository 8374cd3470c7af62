"""``sandproof record`` and ``sandproof replay`` (called by :mod:`sandproof.cli`).

``sandproof record --upstream URL --provider P --port N --out cassette.jsonl`` serves the recording proxy on
127.0.0.1:N until interrupted; point the SDK at ``http://127.0.0.1:N`` (``sandproof env`` style variables).

``sandproof replay cassette.jsonl [more.jsonl | DIR ...] --target URL|mock [--ignore JSONPATH ...]`` replays
each cassette and prints its differences; the exit status is 1 when any difference is neither a known
deviation nor under an ``--ignore`` path (see :mod:`harness.recording.normalise`), 2 on bad input.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from harness.recording.normalise import IgnoreRule
from harness.recording.proxy import is_loopback_url, recording
from harness.recording.replay import Replayer, serve_target
from mockserver.core.cassette import CassetteError, read_cassette
from mockserver.core.environment import DEFAULT_API_KEY, PROVIDERS

__all__ = ["record_main", "record_parser", "replay_main", "replay_parser"]


def record_parser() -> argparse.ArgumentParser:
    """Return the ``sandproof record`` parser."""
    parser = argparse.ArgumentParser(
        prog="sandproof record",
        description="Record a server's traffic into a cassette: serve a recording proxy on 127.0.0.1:PORT until "
        "interrupted, and point the SDK at it (as sandproof env does). Secrets are redacted before they are written.",
    )
    parser.add_argument("--upstream", required=True, help="the server to record, e.g. http://127.0.0.1:8080")
    parser.add_argument("--provider", required=True, choices=PROVIDERS, help="whose API the upstream serves")
    parser.add_argument("--port", type=int, required=True, help="the recorder's port on 127.0.0.1 (0: any free)")
    parser.add_argument("--out", type=Path, required=True, help="the cassette to write (JSON Lines)")
    host = parser.add_mutually_exclusive_group()
    host.add_argument(
        "--preserve-host",
        dest="preserve_host",
        action="store_true",
        default=None,
        help="pass the client's Host header through (default for a loopback upstream)",
    )
    host.add_argument(
        "--upstream-host",
        dest="preserve_host",
        action="store_false",
        help="send the upstream's own Host (default for a remote upstream)",
    )
    return parser


def record_main(argv: Sequence[str], *, stop: threading.Event | None = None) -> int:
    """Record until SIGINT/SIGTERM (or ``stop``); return the exit status."""
    args = record_parser().parse_args(list(argv))
    done = stop or threading.Event()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        done.set()

    if stop is None and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, interrupted)
    keep_host = is_loopback_url(args.upstream) if args.preserve_host is None else args.preserve_host
    try:
        with recording(args.upstream, args.out, provider=args.provider, port=args.port, preserve_host=keep_host) as (
            server,
            writer,
        ):
            print(
                f"sandproof record: {server.url} -> {args.upstream} ({args.provider}, "
                f"{'client Host kept' if keep_host else 'upstream Host'}), writing {args.out}; Ctrl-C stops",
                flush=True,
            )
            done.wait()
    except (OSError, ValueError) as exc:
        print(f"sandproof record: {exc}", file=sys.stderr)
        return 2
    dropped = f", {writer.dropped} unfinished" if writer.dropped else ""
    print(f"sandproof record: {writer.count} exchanges in {args.out}{dropped}", flush=True)
    return 0


def replay_parser() -> argparse.ArgumentParser:
    """Return the ``sandproof replay`` parser."""
    parser = argparse.ArgumentParser(
        prog="sandproof replay",
        description="Replay cassettes against a target and print what answered differently. Ids, times and keys are "
        "rewritten first. Exit status: 0 when only known deviations differ, 1 otherwise, 2 on bad input.",
    )
    parser.add_argument("cassettes", nargs="+", type=Path, help="cassette files, or directories of *.jsonl")
    parser.add_argument("--target", required=True, help="a base URL, or 'mock' for a fresh in-process mock")
    parser.add_argument("--api-key", default=DEFAULT_API_KEY, help=f"the key to send (default {DEFAULT_API_KEY})")
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="JSONPATH",
        help="do not count differences at this path of the compared answer (repeatable), e.g. '$.body..timestamp', "
        "'$.header.vary', '$.body.headers'; the subset: $, .name, ['name'], [N], *, ..",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary lines")
    return parser


def replay_main(argv: Sequence[str]) -> int:
    """Replay cassettes; 0 when only known deviations differ, 1 otherwise, 2 on bad input."""
    args = replay_parser().parse_args(list(argv))
    try:
        ignore = [IgnoreRule.parse(text) for text in args.ignore]
    except ValueError as exc:
        print(f"sandproof replay: {exc}", file=sys.stderr)
        return 2
    files: list[Path] = []
    for item in args.cassettes:
        files += sorted(item.glob("*.jsonl")) if item.is_dir() else [item]
    if not files:
        print("sandproof replay: no cassettes found", file=sys.stderr)
        return 2
    failed = False
    for path in files:
        try:
            cassette = read_cassette(path)
            with serve_target(args.target, cassette.header.provider, args.api_key) as url:
                report = Replayer(url, api_key=args.api_key, ignore=ignore).replay(cassette, path.name)
        except (OSError, CassetteError, ValueError) as exc:
            print(f"sandproof replay: {path}: {exc}", file=sys.stderr)
            return 2
        print(report.render().splitlines()[0] if args.quiet else report.render(), flush=True)
        failed = failed or not report.ok
    return 1 if failed else 0
