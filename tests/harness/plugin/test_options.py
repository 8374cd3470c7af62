"""The plugin's options, markers and run configuration."""

from __future__ import annotations

import argparse

import pytest

from harness.plugin.options import DEFAULT_CONCURRENCY, _clients, add_markers, build_state

pytest_plugins = ["pytester"]

POLICY = "policy:contracts.opensandbox_adapter:reference_engine"


@pytest.mark.parametrize(("given", "clients"), [("0", 0), ("12", 12)])
def test_clients_are_whole_numbers_from_zero(given: str, clients: int) -> None:
    assert _clients(given) == clients


@pytest.mark.parametrize(
    ("given", "message"),
    [("-1", "cannot be negative, got -1"), ("many", "expected a whole number of clients, got 'many'")],
)
def test_clients_reject_negatives_and_words(given: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        _clients(given)


def test_the_options_default_to_the_in_process_mocks(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    assert config.getoption("sandproof_target") == "mock"
    assert config.getoption("sandproof_runtime") == "emulator"
    assert config.getoption("sandproof_concurrency") == DEFAULT_CONCURRENCY
    assert config.getoption("sandproof_progress") == 15.0
    assert config.getini("sandproof_sdk_env") == "auto"


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    names = lambda: {line.split("(")[0] for line in config.getini("markers")}  # noqa: E731
    assert not {"contract", "sdk", "runtime"} & names()
    add_markers(config)
    assert {"contract", "sdk", "runtime"} <= names()


def test_build_state_takes_the_options_and_asks_about_linux_only_for_it(pytester: pytest.Pytester) -> None:
    asked: list[str] = []

    def check_linux() -> str:
        asked.append("linux")
        return "missing bubblewrap"

    args = (f"--sandproof-target={POLICY}", "--sandproof-provider=opensandbox", "--sandproof-strict")
    state = build_state(pytester.parseconfig(*args), check_linux)
    try:
        assert (state.target.kind, state.providers, state.strict) == ("policy", frozenset({"opensandbox"}), True)
        assert (state.runtime, state.runtime_problem, asked) == ("emulator", None, [])
    finally:
        state.close()
    state = build_state(pytester.parseconfig(f"--sandproof-target={POLICY}", "--sandproof-runtime=linux"), check_linux)
    try:
        assert (state.runtime, state.runtime_problem, asked) == ("linux", "missing bubblewrap", ["linux"])
    finally:
        state.close()


def test_build_state_turns_a_bad_target_into_a_usage_error(pytester: pytest.Pytester) -> None:
    with pytest.raises(pytest.UsageError, match="--sandproof-target: "):
        build_state(pytester.parseconfig("--sandproof-target=nowhere"), lambda: None)


def test_concurrency_option_counts_clients_and_rejects_negatives(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "def test_n(request):\n    print('clients', request.config.getoption('sandproof_concurrency'))\n"
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-s").stdout.fnmatch_lines(["*clients 4*"])
    chosen = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-s", "--sandproof-concurrency=12")
    chosen.stdout.fnmatch_lines(["*clients 12*"])
    for bad in ("-1", "many"):
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--sandproof-concurrency={bad}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sandproof-concurrency*expected a whole number of clients, got 'many'*"])
