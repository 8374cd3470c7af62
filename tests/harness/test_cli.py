"""``sandproof check``: argument handling, the pytest command line, listing, and a failing run end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli

ROOT = Path(__file__).resolve().parents[2]


def test_provider_and_the_suite_s_own_config_reach_pytest(tmp_path: Path) -> None:
    argv = cli.pytest_args(cli.build_parser().parse_args(["--provider", "tensorlake"]), tmp_path)
    assert "--sandproof-provider=tensorlake" in argv
    assert argv[argv.index("-c") + 1] == str(tmp_path / cli.CONFIG_FILE)
    assert (cli.CONTRACTS_DIR / cli.CONFIG_FILE).is_file()


@pytest.mark.parametrize("command", ["record", "replay"])
def test_record_and_replay_help_is_prose(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from sandproof.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert ":mod:" not in out and "``" not in out and "cassette" in out


def test_pytest_args_carry_every_option(tmp_path: Path) -> None:
    args = cli.build_parser().parse_args(
        ["--target", "opensandbox:http://127.0.0.1:1", "--profile", "thorough", "--report", "out", "-k", "list"]
    )
    argv = cli.pytest_args(args, tmp_path)
    assert argv[0] == str(tmp_path) and ["--rootdir", str(tmp_path)] == argv[argv.index("--rootdir") :][:2]
    assert "--sandproof-target=opensandbox:http://127.0.0.1:1" in argv
    assert "--hypothesis-profile=thorough" in argv and "--sandproof-report=out" in argv
    assert argv[argv.index("-k") + 1] == "list" and "-v" in argv and "--collect-only" not in argv
    assert "--assert=plain" in argv  # the contract modules' asserts carry their messages
    listing = cli.pytest_args(cli.build_parser().parse_args(["--list", "--container"]), tmp_path)
    assert "--collect-only" in listing and "--sandproof-container" in listing and "-qq" in listing
    assert "--sandproof-strict" not in argv and "--sandproof-strict" not in listing
    assert "--sandproof-strict" in cli.pytest_args(cli.build_parser().parse_args(["--strict"]), tmp_path)


def test_concurrency_reaches_the_plugin_only_when_given(tmp_path: Path) -> None:
    chosen = cli.pytest_args(cli.build_parser().parse_args(["--concurrency", "8"]), tmp_path)
    assert "--sandproof-concurrency=8" in chosen
    assert "--sandproof-concurrency=0" in cli.pytest_args(
        cli.build_parser().parse_args(["--concurrency", "0"]), tmp_path
    )
    default = cli.pytest_args(cli.build_parser().parse_args([]), tmp_path)
    assert not any(arg.startswith("--sandproof-concurrency") for arg in default)


def test_plugin_is_named_only_when_it_does_not_autoload(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    args = cli.build_parser().parse_args([])
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    assert "harness.plugin" not in cli.pytest_args(args, tmp_path)  # the pytest11 entry point loads it
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    argv = cli.pytest_args(args, tmp_path)
    assert argv[argv.index("harness.plugin") - 1] == "-p"


def test_bad_target_exits_2_with_the_accepted_forms(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--target", "tensorlake:ftp://x"]) == 2
    err = capsys.readouterr().err
    assert "sandproof check: target 'tensorlake:ftp://x'" in err and "policy:MODULE:ATTR" in err
    assert cli.main(["--target", "policy:harness.targets:nothing"]) == 2
    with pytest.raises(SystemExit):
        cli.main(["--profile", "forever"])


def test_container_flag_only_with_the_mock_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--target", "opensandbox:http://127.0.0.1:1", "--container"]) == 2
    assert "only applies to the mock target" in capsys.readouterr().err


def test_list_shows_each_contract_and_whether_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--list", "--target", "policy:contracts.tensorlake_adapter:reference_engine"]) == 0
    lines = capsys.readouterr().out.splitlines()
    tl = next(line for line in lines if line.startswith("tensorlake ") and "network-policy" in line)
    osb = next(line for line in lines if line.startswith("opensandbox "))
    assert "test_policy.py::test_policy_engine_passes_checks[tensorlake]" in tl
    assert tl.endswith("[runs]") and "[skip: target 'policy:" in osb and "does not cover opensandbox" in osb
    total = re.match(r"(\d+) contract tests; target policy:contracts.tensorlake_adapter:reference_engine", lines[-1])
    assert total is not None and int(total.group(1)) == sum(1 for line in lines[:-1] if line.endswith("]"))


def test_check_fails_a_wrong_engine_and_writes_the_report(tmp_path: Path) -> None:
    report = tmp_path / "report"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "--target",
            "policy:tests.harness.fakes:allow_everything",
            "--profile",
            "dev",
            "--report",
            str(report),
            "-q",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("sandproof check: target policy:tests.harness.fakes:allow_everything: opensandbox:")
    assert re.search(
        r"sandproof check FAILED: 0 passed, 2 failed, \d+ skipped against policy:tests.harness.fakes", done.stdout
    )
    line = r"^sandproof check: spec \d+ passed, \d+ failed(, \d+ skipped)? · observed \d+ passed"
    assert re.search(line, done.stdout, re.MULTILINE)
    assert re.search(r"^opensandbox +network-policy +0 +1 +0 ", done.stdout, re.MULTILINE)
    # A target of one provider checks that provider only: the other's contracts are not listed as skips.
    assert "| network-policy | — | ❌ 0/1 passed |" in (report / "fidelity.md").read_text(encoding="utf-8")
    assert "does not cover" not in done.stdout
    assert json.loads((report / "results.json").read_text(encoding="utf-8"))["profile"] == "dev"
    assert (report / "junit.xml").is_file()


def test_an_unreachable_target_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert cli.main(["--target", f"tensorlake:http://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach the tensorlake server" in err[0]
