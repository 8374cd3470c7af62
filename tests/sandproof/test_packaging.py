"""The installs: the wheel, in fresh venvs, with and without the ``harness`` extra.

``pip install sandproof`` serves both mocks (and the dashboard's files), has ``record`` and ``replay``, and
``sandproof check`` then says in one line what to install; pytest alone does not break on the plugin; ``sandproof[harness]`` lists the
contracts. Venvs are made without pip (the outer pip installs into them) and pip's cache is shared, so a
run after the first downloads nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(900)


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _pip(venv: Path, *args: str) -> None:
    done = _run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile", *args],
        venv.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build sandproof's wheel (no dependencies) from the working tree."""
    out = tmp_path_factory.mktemp("wheel")
    done = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)], out)
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("sandproof-*.whl")
    return built


def _venv(root: Path, name: str) -> Path:
    venv = root / name
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    assert done.returncode == 0, done.stderr
    return venv


@pytest.fixture(scope="module")
def base(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with ``pip install sandproof`` only."""
    venv = _venv(tmp_path_factory.mktemp("base"), "venv")
    _pip(venv, str(wheel))
    return venv


def test_the_wheel_ships_the_dashboard_and_the_specs(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"mockserver/admin/ui/{n}" for n in ("index.html", "app.js", "app.css")} <= names
    assert "harness/specs/opensandbox/lifecycle-1.1.1.yaml" in names and "mockserver/py.typed" in names
    assert not any(n.startswith("tests/") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "Provides-Extra: harness" in metadata and "Provides-Extra: dev" in metadata
    assert 'Requires-Dist: hypothesis>=6.100; extra == "harness"' in metadata


@pytest.fixture
def serving(base: Path) -> Iterator[dict[str, str]]:
    """Run ``sandproof serve`` from the base venv on free ports; yield both URLs."""
    proc = subprocess.Popen(
        [str(base / "bin" / "sandproof"), "serve", "--tensorlake-port", "0", "--opensandbox-port", "0"],
        cwd=base.parent,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        stdout=subprocess.PIPE,
        text=True,
    )
    urls: dict[str, str] = {}
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while len(urls) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "sandproof serve exited"
            name, _, rest = line.partition(" ")
            if name in ("tensorlake", "opensandbox"):
                urls[name] = rest.split()[0]
        yield urls
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)


def test_the_base_install_serves_both_mocks_and_the_dashboard(serving: dict[str, str]) -> None:
    for url in serving.values():
        assert httpx.get(f"{url}/_mock/clock", trust_env=False).status_code == 200
        page = httpx.get(f"{url}/_mock/ui", trust_env=False)
        assert page.status_code == 200 and "app.js" in page.text
    assert httpx.get(f"{serving['opensandbox']}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "k"}).status_code == 200


def test_the_base_install_says_what_check_needs_and_pytest_alone_still_runs(base: Path, tmp_path: Path) -> None:
    check = _run([str(base / "bin" / "sandproof"), "check", "--list"], tmp_path)
    assert check.returncode == 2 and check.stdout == ""
    assert check.stderr.strip().splitlines() == [
        "sandproof check needs the harness extra (missing: pytest, hypothesis, schemathesis): "
        "pip install 'sandproof[harness]'"
    ]
    env = _run([str(base / "bin" / "sandproof"), "env"], tmp_path)
    assert env.returncode == 0 and "OPEN_SANDBOX_DOMAIN" in env.stdout
    for command in ("record", "replay"):  # record and replay need nothing beyond the base install
        usage = _run([str(base / "bin" / "sandproof"), command, "--help"], tmp_path)
        assert usage.returncode == 0 and f"usage: sandproof {command}" in usage.stdout, usage.stderr
    _pip(base, "pytest")
    check = _run([str(base / "bin" / "sandproof"), "check", "--list"], tmp_path)
    assert check.returncode == 2 and "missing: hypothesis, schemathesis" in check.stderr
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    plain = _run(
        [str(base / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"], tmp_path
    )
    assert plain.returncode == 0 and "1 passed" in plain.stdout, plain.stdout + plain.stderr
    options = _run([str(base / "bin" / "python"), "-m", "pytest", "--help"], tmp_path)
    assert "--sandproof-target" in options.stdout  # the plugin loaded, without Hypothesis


def test_the_harness_extra_runs_check(wheel: Path, tmp_path: Path) -> None:
    venv = _venv(tmp_path, "venv")
    _pip(venv, f"{wheel}[harness]")
    listing = _run([str(venv / "bin" / "sandproof"), "check", "--list"], tmp_path)
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr[-2000:]
    count, _, target = listing.stdout.strip().splitlines()[-1].partition(" contract tests; target ")
    assert int(count) > 100 and target.startswith("mock: tensorlake:")
    assert "opensandbox" in listing.stdout and "tensorlake" in listing.stdout and "[runs]" in listing.stdout
