"""Acceptance: an engine that decides like the reference but stores policies as given passes by default.

``tests.mutants.representation_engines`` keeps, beside the mutants, engines whose every decision is the
reference's while their stored form is not (duplicates kept, names not IDNA-converted). The default run must
pass them; a strict run must fail the TensorLake one on ``choice`` checks only. Both through the Python API
and through ``sandproof check --target policy:MODULE:ATTR``. The same holds for the API machines: a served mock
whose proxy forwards the project key (a choice mutant) passes the ports-ingress contract through the plugin by
default, with that one check differing, and fails it with ``--sandproof-strict``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.policy.opensandbox import run_checks as opensandbox_checks
from harness.policy.sandbox_network import run_checks as restrict_checks
from harness.policy.tensorlake.checks import run_checks as tensorlake_checks
from tests.mutants.representation_engines import opensandbox_as_given, tensorlake_as_given

ROOT = Path(__file__).resolve().parents[3]
TARGET = "policy:tests.mutants.representation_engines:tensorlake_as_given"


def test_the_tensorlake_engine_stores_as_given() -> None:
    body = {"network": {"deny_out": ["a.com", "a.com"], "allow_out": ["bücher.com"]}}
    stored = tensorlake_as_given.apply_update(None, body, lambda name: ["192.0.2.1"])
    assert stored == {"allow_internet_access": True, "allow_out": ["bücher.com"], "deny_out": ["a.com", "a.com"]}


def test_python_api_default_passes_and_strict_fails_only_choices() -> None:
    results = tensorlake_checks(tensorlake_as_given) + restrict_checks(tensorlake_as_given)
    assert [r.name for r in results if r.fails_run(strict=False)] == []
    failing = [r for r in results if r.fails_run(strict=True)]
    assert failing and {r.strength for r in failing} == {"choice"}, [(r.name, r.strength) for r in failing]
    assert "stored_form" in {r.name for r in failing}
    assert all(r.status() == "differs" for r in failing)


def test_python_api_the_opensandbox_engine_passes_even_strict() -> None:
    results = opensandbox_checks(opensandbox_as_given) + restrict_checks(opensandbox_as_given)
    assert [r.name for r in results if r.fails_run(strict=True)] == []


def _check(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    report = tmp_path / "report"
    args = [sys.executable, "-m", "sandproof.cli", "check", "--target", TARGET, "--profile", "dev", "-q"]
    args += ["--report", str(report), "-k", "policy", *extra]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return done, json.loads((report / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_sandproof_check_default_passes_and_strict_fails_only_choices(tmp_path: Path, strict: bool) -> None:
    done, data = _check(tmp_path, *(["--strict"] if strict else []))
    output = done.stdout + done.stderr
    checks = [c for test in data["tests"] for c in test["checks"]]
    assert checks and data["strict"] is strict
    bad = [c for c in checks if c["status"] != "passed"]
    assert bad and {c["strength"] for c in bad} == {"choice"}, bad
    assert "tensorlake-policy:stored_form" in {c["contract"] for c in bad}
    if strict:
        assert done.returncode == 1, output
        assert {c["status"] for c in bad} == {"failed"} and data["choice_differences"] == []
        assert "sandproof check FAILED" in output and "(strict: choices fail the run)" in output
    else:
        assert done.returncode == 0, output
        assert {c["status"] for c in bad} == {"differs"}
        assert {d["contract"] for d in data["choice_differences"]} == {c["contract"] for c in bad}
        assert "sandproof check PASSED" in output
        assert "differs from sandproof's choice: tensorlake-policy:stored_form" in output
        assert "## Checks that differ from sandproof's choice" in (tmp_path / "report" / "fidelity.md").read_text()
    line = next(line for line in done.stdout.splitlines() if line.startswith("sandproof check: spec "))
    assert re.search(r"spec \d+ passed(, \d+ skipped)? · observed \d+ passed", line) and " · choice " in line


# --- the API machines: a mock that differs from sandproof only where the sources are silent -------------------


def _served_contract(tmp_path: Path, url: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the TensorLake ports-ingress contract through the plugin against ``url`` with a fixed seed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    env["PYTHONPATH"] = str(ROOT)
    env["TENSORLAKE_API_KEY"] = "sandproof-key"  # the preflight stops a run without the key the server wants
    report = tmp_path / "report"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    args += ["harness/contracts/test_tensorlake_api.py", "-k", "ports-ingress", f"--sandproof-target=tensorlake:{url}"]
    args += ["--hypothesis-seed=4", "--hypothesis-profile=ci", f"--sandproof-report={report}", *extra]
    args.append("--sandproof-allow-reset")  # the test started the server: exact comparisons with the admin API
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    return done, json.loads((report / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_an_api_mock_differing_only_by_choice_passes_by_default(tmp_path: Path, strict: bool) -> None:
    """A proxy that forwards the project key (sandproof strips it; the docs are silent) passes unless strict."""
    from mockserver.asgi.server import MockServer
    from tests.mutants.tensorlake_mocks import ProjectKeyForwarded

    with MockServer(ProjectKeyForwarded().app) as server:
        done, data = _served_contract(tmp_path, server.url, *(["--sandproof-strict"] if strict else []))
    output = done.stdout + done.stderr
    checks = [c for test in data["tests"] for c in test["checks"]]
    assert {c["strength"] for c in checks} == {"spec", "observed", "choice"}, output
    bad = [c for c in checks if c["status"] != "passed"]
    assert [c["contract"] for c in bad] == ["tensorlake-api:project_key_stripped"], output
    assert "Authorization" in (bad[0]["message"] or "")
    if strict:
        assert done.returncode == 1 and bad[0]["status"] == "failed", output
    else:
        assert done.returncode == 0 and bad[0]["status"] == "differs", output
        assert [d["contract"] for d in data["choice_differences"]] == ["tensorlake-api:project_key_stripped"]
