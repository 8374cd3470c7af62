"""The plugin's fixtures and the run-wide SDK environment export, in-process and through ``pytester``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.plugin.fixtures import export_sdk_env
from harness.plugin.state import SandproofState
from harness.reporting.report import ContractReport
from harness.targets import parse_target

pytest_plugins = ["pytester"]


def _mock_state(runtime_problem: str | None = None) -> SandproofState:
    """Return the state of a run on the in-process mock target (the fake mocks, see conftest)."""
    target = parse_target("mock")
    target.configure(container=False)
    return SandproofState(target=target, report=ContractReport("mock"), runtime_problem=runtime_problem)


def test_export_sets_both_mocks_env_until_the_run_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORLAKE_API_URL", "http://outer.example")
    monkeypatch.delenv("OPEN_SANDBOX_API_KEY", raising=False)
    state = _mock_state()
    try:
        export_sdk_env(state)
        served = state.mocks().started()
        assert sorted(served) == ["opensandbox", "tensorlake"]
        assert os.environ["TENSORLAKE_API_URL"] == served["tensorlake"].url
        assert os.environ["OPEN_SANDBOX_API_KEY"] == "fake-osb-key"
    finally:
        state.close()
    assert os.environ["TENSORLAKE_API_URL"] == "http://outer.example"
    assert "OPEN_SANDBOX_API_KEY" not in os.environ


def test_export_starts_nothing_when_the_runtime_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORLAKE_API_URL", "http://outer.example")
    state = _mock_state(runtime_problem="linux runtime unavailable: missing bubblewrap (bwrap)")
    try:
        export_sdk_env(state)
        assert state.mocks().started() == {}
        assert os.environ["TENSORLAKE_API_URL"] == "http://outer.example"
    finally:
        state.close()


def test_mock_fixtures_set_and_restore_env_and_reset_between_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TENSORLAKE_API_URL", "http://outer.example")
    monkeypatch.delenv("OPEN_SANDBOX_API_KEY", raising=False)
    pytester.makepyfile(
        """
        import asyncio, os
        import httpx

        def test_first(tensorlake_mock, opensandbox_mock):
            assert os.environ["TENSORLAKE_API_URL"] == tensorlake_mock.url
            assert os.environ["TENSORLAKE_SANDBOX_API_URL"] == tensorlake_mock.url
            assert os.environ["OPEN_SANDBOX_API_KEY"] == "fake-osb-key"
            assert os.environ["OPEN_SANDBOX_DOMAIN"] == opensandbox_mock.url.split("://")[1]
            tensorlake_mock.mock.faults.add(tensorlake_mock.mock.faults.rules and None or __import__(
                "mockserver.core", fromlist=["FaultRule"]).FaultRule(path="/nothing"))
            r = httpx.post(tensorlake_mock.url + "/echo", json={"name": "a", "colour": "red"})
            assert r.status_code == 200

        def test_outside_the_fixture_env_is_back():
            assert os.environ["TENSORLAKE_API_URL"] == "http://outer.example"
            assert "OPEN_SANDBOX_API_KEY" not in os.environ

        def test_second_sees_a_fresh_mock_on_the_same_url(tensorlake_mock):
            assert tensorlake_mock.mock.faults.rules() == []
            assert tensorlake_mock.mock.journal.entries() == []

        def test_asgi_transport_reaches_the_same_mock(opensandbox_asgi, opensandbox_mock):
            async def call():
                async with httpx.AsyncClient(transport=opensandbox_asgi, base_url="http://osb") as client:
                    return (await client.post("/echo", json={"size": 1})).status_code
            assert asyncio.run(call()) == 200
            assert [e.path for e in opensandbox_mock.mock.journal.entries()] == ["/echo"]
        """
    )
    report_dir = tmp_path / "rep"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--sandproof-report={report_dir}")
    result.assert_outcomes(passed=4)
    assert os.environ["TENSORLAKE_API_URL"] == "http://outer.example"
    assert "OPEN_SANDBOX_API_KEY" not in os.environ
    data = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    assert data["unknown_fields"] == {
        "tensorlake": {"POST /echo": ["colour"]},
        "opensandbox": {"POST /echo": ["size"]},
    }


EARLY_ENV = """
import os

SEEN_AT_IMPORT = {name: os.environ.get(name) for name in ("TENSORLAKE_API_URL", "OPEN_SANDBOX_DOMAIN")}

def test_the_environment_was_set_before_this_module_was_imported(tensorlake_mock, opensandbox_mock):
    assert SEEN_AT_IMPORT["TENSORLAKE_API_URL"] == tensorlake_mock.url
    assert SEEN_AT_IMPORT["OPEN_SANDBOX_DOMAIN"] == opensandbox_mock.url.split("://", 1)[1]
"""


@pytest.mark.parametrize("how", [("--sandproof-sdk-env",), ("-o", "sandproof_sdk_env=always")])
def test_sdk_env_is_exported_before_test_modules_are_imported(pytester: pytest.Pytester, how: tuple[str, ...]) -> None:
    pytester.makepyfile(EARLY_ENV)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *how)
    result.assert_outcomes(passed=1)
    assert "TENSORLAKE_API_URL" not in os.environ or not os.environ["TENSORLAKE_API_URL"].startswith("http://127.0.0.1")


def test_by_default_a_module_that_imports_an_sdk_at_its_top_gets_the_environment_first(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a_plain="def test_plain():\n    pass\n", test_b_sdk="import tensorlake\n" + EARLY_ENV)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("how", [(), ("--no-sandproof-sdk-env",)], ids=["no-sdk-import", "never"])
def test_a_module_level_read_sees_no_mock_without_an_sdk_import_or_with_never(
    pytester: pytest.Pytester, how: tuple[str, ...]
) -> None:
    pytester.makepyfile(("import tensorlake\n" if how else "") + EARLY_ENV)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *how)
    result.assert_outcomes(failed=1)


def test_the_real_sdk_imported_at_module_top_reaches_the_mock(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from tensorlake.sandbox import Sandbox

        def test_create(tensorlake_mock):
            sandbox = Sandbox.create(name="early-env")
            assert tensorlake_mock.mock.model.find_any("early-env") is not None
            sandbox.terminate()

        def test_explicit_args(tensorlake_sdk_args, tensorlake_mock):
            sandbox = Sandbox.create(name="explicit", **tensorlake_sdk_args)
            assert tensorlake_mock.mock.model.find_any("explicit") is not None
            sandbox.terminate()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # the default (auto) is enough
    result.assert_outcomes(passed=2)
