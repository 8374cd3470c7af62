"""``sandproof check``: run the contract suite in ``harness/contracts`` against a target and summarise it.

``sandproof check --target T [--profile ci|thorough] [--report DIR] [-k EXPR] [--list] [--container]
[--concurrency N] [--strict] [--runtime emulator|linux] [--allow-reset]``
runs pytest on the shipped contract modules with the sandproof plugin, prints pytest's progress, then the
per provider and operation summary and the checks per strength, and exits non-zero when a contract fails (or
nothing was selected). Only ``spec`` and ``observed`` checks fail a run; a check that differs from one of
sandproof's own choices is reported as such, and fails the run only with ``--strict``.

A ``tensorlake:URL`` or ``opensandbox:URL`` target is a server the run did not start: a preflight checks the
URL, that it answers and that it takes the key (a mistake is one line and exit status 2), the run deletes only
the sandboxes it made, and it never resets the server, moves its clock or arms faults on it unless
``--allow-reset`` says so (:mod:`harness.targets.live`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import harness.contracts
from harness.targets import ACCEPTED_FORMS, PROVIDERS, Target, TargetError, parse_target

__all__ = ["CONTRACTS_DIR", "build_parser", "main", "pytest_args"]

CONTRACTS_DIR = Path(harness.contracts.__file__).resolve().parent
#: The contract suite's own (empty) pytest configuration: no project's settings leak into a check.
CONFIG_FILE = "pytest.ini"
PROFILES = ("ci", "thorough", "dev")


def build_parser() -> argparse.ArgumentParser:
    """Return the ``sandproof check`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="sandproof check",
        description="Run the sandproof contract suite against a target.",
        epilog=ACCEPTED_FORMS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--target", default="mock", help="what to check (default: mock)")
    parser.add_argument(
        "--profile", choices=PROFILES, default="ci", help="Hypothesis profile: ci (fast, default) or thorough"
    )
    parser.add_argument("--report", metavar="DIR", help="write junit.xml, fidelity.md and results.json here")
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="only run contracts matching EXPR")
    parser.add_argument("--list", action="store_true", help="list the contracts and whether the target runs them")
    parser.add_argument("--container", action="store_true", help="run the mock target in a Docker container")
    parser.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="clients of the concurrency contract (default 4; 0 skips it)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="fail on checks that differ from sandproof's own choices too"
    )
    parser.add_argument(
        "--runtime",
        choices=("emulator", "linux"),
        default="emulator",
        help="what the mock target runs sandboxes on (linux: real programs in Linux namespaces; see docs/runtime.md)",
    )
    parser.add_argument(
        "--provider",
        action="append",
        choices=PROVIDERS,
        help="check only this provider (repeatable; default: the providers the target covers)",
    )
    parser.add_argument(
        "--allow-reset",
        action="store_true",
        help="let the contracts reset a tensorlake:URL or opensandbox:URL server, move its clock and arm faults on it "
        "(its state is saved first and put back at the end); without it those contracts skip",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="less pytest output")
    return parser


def _plugin_autoloads() -> bool:
    """Tell whether pytest will load the plugin from its entry point by itself."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.value == "harness.plugin" for ep in importlib.metadata.entry_points(group="pytest11"))


def pytest_args(args: argparse.Namespace, contracts_dir: Path = CONTRACTS_DIR) -> list[str]:
    """Return the pytest command line for parsed ``sandproof check`` arguments."""
    argv = [
        str(contracts_dir),
        "--rootdir",
        str(contracts_dir),
        "-c",
        str(contracts_dir / CONFIG_FILE),
        "-p",
        "no:cacheprovider",
        # Every assert of the contract modules carries its message, so pytest's assertion rewriting adds nothing
        # to a report; off, the run does not parse and recompile each plugin's modules (hypothesis,
        # schemathesis, ...) on import: about 2 s of CPU a run.
        "--assert=plain",
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",  # `sandproof` imported plugin modules (anyio) already
        f"--sandproof-target={args.target}",
        f"--hypothesis-profile={args.profile}",
        "-rfEs",
        "-qq" if args.list else "-q" if args.quiet else "-v",
    ]
    if not _plugin_autoloads():
        argv[1:1] = ["-p", "harness.plugin"]
    if args.report:
        argv.append(f"--sandproof-report={args.report}")
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.container:
        argv.append("--sandproof-container")
    if getattr(args, "concurrency", None) is not None:
        argv.append(f"--sandproof-concurrency={args.concurrency}")
    if getattr(args, "strict", False):
        argv.append("--sandproof-strict")
    if getattr(args, "runtime", "emulator") != "emulator":
        argv.append(f"--sandproof-runtime={args.runtime}")
    for provider in getattr(args, "provider", None) or ():
        argv.append(f"--sandproof-provider={provider}")
    if getattr(args, "allow_reset", False):
        argv.append("--sandproof-allow-reset")
    if args.list:
        argv.append("--collect-only")
    return argv


class _Listing:
    """A pytest plugin that records the collected contract items."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Keep the selected items."""
        self.items = list(session.items)


class _Outcome:
    """A pytest plugin that keeps the run's sandproof report."""

    def __init__(self) -> None:
        self.report: Any = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Grab the report before the plugin state goes away."""
        from harness.plugin import sandproof_state

        self.report = sandproof_state(session.config).report


def _print_listing(items: Sequence[pytest.Item], target: Target) -> None:
    """Print one line per contract: provider, operation, test id, and whether it would run."""
    from harness.plugin import contract_info

    rows = []
    for item in items:
        try:
            info = contract_info(item)
        except ValueError as exc:
            rows.append(("?", "?", item.nodeid, f"invalid marker: {exc}"))
            continue
        if info is None:
            rows.append(("-", "-", item.nodeid, "runs (no contract marker)"))
            continue
        static = [r for r in info.requires if r != "admin"] if target.kind == "url" else list(info.requires)
        reason = target.skip_reason(info.provider, static)
        if reason is None and "admin" in info.requires and target.kind == "url":
            reason = target.reset_reason()
        status = f"skip: {reason}" if reason else "runs"
        if reason is None and "admin" in info.requires and target.kind == "url":
            status = "runs if the server has the /_mock admin API"
        rows.append((info.provider, info.operation, item.nodeid, status))
    if not rows:
        print("no contracts selected")
        return
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    for provider, operation, nodeid, status in rows:
        print(f"{provider:<{widths[0]}}  {operation:<{widths[1]}}  {nodeid}  [{status}]")
    print(f"{len(rows)} contract test{'s' if len(rows) != 1 else ''}; target {target.describe()}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sandproof check``; return the exit status."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.runtime == "linux":
        from mockserver.linux.requirements import check_requirements

        requirements = check_requirements()
        if not requirements.ok:
            print(f"sandproof check: {requirements.message()}", file=sys.stderr)
            return 2
    try:
        target = parse_target(args.target)
        target.configure(container=args.container, allow_reset=args.allow_reset)
        if not args.list:
            target.preflight()
    except TargetError as exc:
        print(f"sandproof check: {exc}", file=sys.stderr)
        return 2
    if args.list:
        listing = _Listing()
        status = pytest.main(pytest_args(args), plugins=[listing])
        _print_listing(listing.items, target)
        return 0 if status in (0, 5) else int(status)
    if not args.provider and target.kind != "mock":
        args.provider = sorted(target.providers)  # the other provider's contracts are not listed as skips
    if target.kind == "url":
        try:
            target.ensure_started()  # learn whether it serves the admin API, so the header says so
        except TargetError as exc:
            print(f"sandproof check: {exc}", file=sys.stderr)
            return 2
    print(f"sandproof check: target {target.describe()}; Hypothesis profile {args.profile}", flush=True)
    outcome = _Outcome()
    status = int(pytest.main(pytest_args(args), plugins=[outcome]))
    report = outcome.report
    if status == 5:
        print("sandproof check: no contract matched the selection", file=sys.stderr)
        return 5
    if report is not None and report.records:
        total = report.totals()
        verdict = "FAILED" if status else "PASSED"
        print(
            f"sandproof check {verdict}: {total.passed} passed, {total.failed} failed, "
            f"{total.skipped} skipped against {target.spec} in {report.pace()}"
        )
        print(f"sandproof check: {report.strength_line()}")
    elif status == 0:
        print("sandproof check PASSED: no contract tests recorded")
    else:
        print(f"sandproof check FAILED: pytest exited with status {status}", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
