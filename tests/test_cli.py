import shlex

import pytest

from mockserver.cli import env_lines, main, parser


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


def test_unknown_command_is_an_error() -> None:
    with pytest.raises(SystemExit):
        main(["explode"])
