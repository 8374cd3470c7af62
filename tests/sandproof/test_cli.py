import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mockserver.core.clock import DEFAULT_EPOCH
from mockserver.serve import build_mocks, env_command, env_lines
from mockserver.service import HttpMock
from sandproof.cli import main, parser


def test_env_lines_point_both_sdks_at_loopback() -> None:
    exports = dict(line.removeprefix("export ").split("=", 1) for line in env_lines("127.0.0.1", 8911, 8080, "k"))
    assert exports["TENSORLAKE_API_URL"] == exports["TENSORLAKE_SANDBOX_API_URL"] == "http://127.0.0.1:8911"
    assert exports["OPEN_SANDBOX_DOMAIN"] == "127.0.0.1:8080"
    assert exports["TENSORLAKE_API_KEY"] == exports["OPEN_SANDBOX_API_KEY"] == "k"
    assert "127.0.0.1" in exports["NO_PROXY"]


def test_env_values_are_shell_quoted() -> None:
    (line,) = [x for x in env_lines("127.0.0.1", 1, 2, "a b'c") if "TENSORLAKE_API_KEY" in x]
    assert shlex.split(line.removeprefix("export ")) == ["TENSORLAKE_API_KEY=a b'c"]


def test_env_command_prints_exports(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--tensorlake-port", "9000"]) == 0
    assert "export TENSORLAKE_API_URL=http://127.0.0.1:9000" in capsys.readouterr().out


def test_serve_defaults() -> None:
    args = parser().parse_args(["serve"])
    assert (args.tensorlake_port, args.opensandbox_port, args.clock) == (8911, 8080, "wall")


@pytest.mark.parametrize("command", ["serve", "env"])
def test_help_names_every_default(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    blocks = [b for b in re.split(r"\n  (?=-)", out.split("options:", 1)[1]) if b.startswith("--")]
    assert len(blocks) >= 3
    for block in blocks:
        assert "default" in block, f"{command}: {block.split()[0]} does not name its default"
    text = " ".join(out.split())
    for value in ("8911", "8080"):
        assert f"(default: {value})" in text
    if command == "serve":
        assert "(default: wall)" in text and "(default: 5.0)" in text and "(default: 10.0)" in text


def test_a_taken_port_is_one_line_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        status = main(["serve", "--tensorlake-port", "0", "--opensandbox-port", str(port)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"port {port}" in err and "--opensandbox-port" in err and "already in use" in err


def test_the_banner_line_carries_a_pinned_key() -> None:
    assert env_command("127.0.0.1", 8911, 8080, "sandproof-key") == "sandproof env"
    assert env_command("127.0.0.1", 8911, 8080, "k 1") == "sandproof env --api-key 'k 1'"


def test_env_exports_the_tensorlake_proxy_fallback() -> None:
    exports = dict(line.removeprefix("export ").split("=", 1) for line in env_lines("127.0.0.1", 9000, 8080, "k"))
    assert exports["TENSORLAKE_SANDBOX_PROXY_URL"] == "http://127.0.0.1:9000"


def test_unknown_command_is_an_error() -> None:
    with pytest.raises(SystemExit):
        main(["explode"])


def _start_serve(state: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandproof.cli",
            "serve",
            "--tensorlake-port",
            "0",
            "--opensandbox-port",
            "0",
            "--state-file",
            str(state),
            "--api-key",
            "k",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    urls: dict[str, str] = {}
    assert proc.stdout is not None
    while len(urls) < 2:
        line = proc.stdout.readline()
        assert line, "serve exited before printing its URLs"
        name, _, rest = line.partition(" ")
        if name in ("tensorlake", "opensandbox"):
            urls[name] = rest.split()[0]
    return proc, urls


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    return out


def test_serve_runs_both_mocks_and_keeps_state_across_restarts(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    proc, urls = _start_serve(state)
    try:
        created = httpx.post(
            f"{urls['tensorlake']}/sandboxes", json={"name": "kept"}, headers={"Authorization": "Bearer k"}
        )
        assert created.status_code == 200, created.text
        refused = httpx.get(f"{urls['opensandbox']}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "wrong"})
        assert refused.status_code == 401
    finally:
        assert "state saved" in _stop(proc)
    proc, urls = _start_serve(state)
    try:
        again = httpx.get(f"{urls['tensorlake']}/sandboxes/kept", headers={"Authorization": "Bearer k"})
        assert again.status_code == 200 and again.json()["id"] == created.json()["sandbox_id"]
    finally:
        _stop(proc)


def test_standalone_wall_clock_starts_at_the_real_time() -> None:
    mocks = build_mocks(seed=None, clock_mode="wall", api_keys=["k"])
    assert all(abs(m.clock.now() - time.time()) < 60 for m in mocks.values())
    manual = build_mocks(seed=None, clock_mode="manual", api_keys=["k"])
    assert all(m.clock.now() == DEFAULT_EPOCH for m in manual.values())


def test_env_command_names_the_ports_it_was_started_with() -> None:
    assert env_command("127.0.0.1", 8911, 8080) == "sandproof env"
    assert env_command("127.0.0.1", 1234, 8080) == "sandproof env --tensorlake-port 1234"
    assert env_command("0.0.0.0", 8911, 99) == "sandproof env --host 0.0.0.0 --opensandbox-port 99"


BODY = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep"], "resourceLimits": {"cpu": "1"}}


def _statuses(mock: HttpMock, keys: list[str | None]) -> list[int]:
    with mock.server() as server, httpx.Client(base_url=server.url) as client:
        return [
            client.get("/v1/sandboxes", headers={} if k is None else {"OPEN-SANDBOX-API-KEY": k}).status_code
            for k in keys
        ]


def test_serve_accepts_any_opensandbox_key_by_default_each_its_own_tenant() -> None:
    mock = build_mocks(seed=None, clock_mode="manual")["opensandbox"]
    assert _statuses(mock, ["ci-key-of-my-own", None]) == [200, 401]
    with mock.server() as server, httpx.Client(base_url=server.url) as client:
        sid = client.post("/v1/sandboxes", json=BODY, headers={"OPEN-SANDBOX-API-KEY": "a"}).json()["id"]
        assert client.get(f"/v1/sandboxes/{sid}", headers={"OPEN-SANDBOX-API-KEY": "a"}).status_code == 200
        assert client.get(f"/v1/sandboxes/{sid}", headers={"OPEN-SANDBOX-API-KEY": "b"}).status_code == 404


def test_serve_pins_the_opensandbox_keys_it_is_given() -> None:
    one = build_mocks(seed=None, clock_mode="manual", api_keys=["k"])["opensandbox"]
    assert _statuses(one, ["k", "other"]) == [200, 401]
    two = build_mocks(seed=None, clock_mode="manual", api_keys=["k1", "k2"])["opensandbox"]
    assert _statuses(two, ["k1", "k2", "k3"]) == [200, 200, 401]


def test_check_without_the_harness_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sandproof.cli

    monkeypatch.setattr(sandproof.cli, "missing_harness", lambda: ["hypothesis", "schemathesis"])
    assert main(["check", "--list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing: hypothesis, schemathesis" in err
    assert "pip install 'sandproof[harness]'" in err
    assert sandproof.cli.HARNESS_MODULES == ("pytest", "hypothesis", "schemathesis")


def test_help_lists_record_and_replay(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "record" in out and "replay" in out


def test_runtime_linux_where_it_cannot_run_exits_at_once_with_the_one_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mockserver.linux import requirements

    missing = requirements.Requirements(("bubblewrap (bwrap)", "nftables (nft / libnftables)"))
    monkeypatch.setattr(requirements, "check_requirements", lambda: missing)
    assert main(["serve", "--runtime", "linux", "--tensorlake-port", "0", "--opensandbox-port", "0"]) == 2
    error = capsys.readouterr().err
    assert error.strip() == f"sandproof serve: {missing.message()}"
    assert "bubblewrap" in error and "apt-get install" in error
    assert main(["check", "--runtime", "linux"]) == 2
    assert capsys.readouterr().err.strip() == f"sandproof check: {missing.message()}"


@pytest.mark.runtime("linux")
def test_serve_on_the_linux_runtime_runs_real_programs() -> None:
    mocks = build_mocks(seed=1, clock_mode="wall", runtime="linux")
    try:
        tensorlake = mocks["tensorlake"]
        with tensorlake.server() as server:
            http = httpx.Client(base_url=server.url, headers={"authorization": "Bearer k"}, timeout=10)
            ident = http.post("/sandboxes", json={}).json()["sandbox_id"]
            run = http.post(
                "/api/v1/processes/run",
                json={"command": "python3", "args": ["-c", "print(6*7)"]},
                headers={"host": f"{ident}.sandbox.localhost"},
            )
            assert '"line": "42"' in run.text
            http.close()
    finally:
        for mock in mocks.values():
            mock.close()


SERVER_TOML = """
[server]
host = "127.0.0.1"
api_key = "from-the-file"
max_sandbox_timeout_seconds = 86400

[runtime]
type = "docker"
execd_image = "opensandbox/execd:v1.1.0"
"""


def test_serve_builds_the_opensandbox_mock_from_the_real_servers_file(tmp_path: Path) -> None:
    """The file's key is pinned (no --api-key), its bound refuses a longer timeout, its host names the endpoints."""
    from mockserver.opensandbox.model.server_file import load_server_file

    path = tmp_path / "server.toml"
    path.write_text(SERVER_TOML)
    mock = build_mocks(seed=None, clock_mode="manual", opensandbox_config=load_server_file(path))["opensandbox"]
    assert _statuses(mock, ["from-the-file", "other"]) == [200, 401]
    headers = {"OPEN-SANDBOX-API-KEY": "from-the-file"}
    with mock.server() as server, httpx.Client(base_url=server.url, headers=headers) as client:
        long = client.post("/v1/sandboxes", json={**BODY, "timeout": 10_000_000_000})
        assert long.status_code == 400
        assert long.json()["message"] == "Sandbox timeout 10000000000s exceeds configured maximum of 86400s."
        sid = client.post("/v1/sandboxes", json={**BODY, "timeout": 3600}).json()["id"]
        assert client.get(f"/v1/sandboxes/{sid}/endpoints/44772").json() == {"endpoint": "127.0.0.1:44772"}


def test_serve_with_a_bad_opensandbox_config_stops_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "server.toml"
    path.write_text(SERVER_TOML.replace("86400", "30"))
    assert main(["serve", "--opensandbox-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: server.max_sandbox_timeout_seconds: must be at least 60, got 30" in err


def test_serve_help_shows_the_opensandbox_config_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--help"])
    assert "--opensandbox-config FILE" in capsys.readouterr().out
