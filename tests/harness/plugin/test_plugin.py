"""The pytest plugin, run in-process through ``pytester``: skips, fixtures, profiles, reports, summary."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import settings

# Imported once here so the in-process runs below do not import the check modules again each time.
import harness.policy.opensandbox
import harness.policy.tensorlake.checks  # noqa: F401
from mockserver.asgi.server import MockServer

pytest_plugins = ["pytester"]

CONTRACTS = """
import pytest

@pytest.mark.contract("tensorlake", "create")
def test_tl_api(sandproof_target):
    assert sandproof_target.url("tensorlake").startswith("http")

@pytest.mark.contract("opensandbox", "list")
def test_osb_api(sandproof_target):
    assert sandproof_target.url("opensandbox").startswith("http")

@pytest.mark.contract("opensandbox", "faults", requires=("api", "admin"))
def test_osb_admin(sandproof_target):
    client = sandproof_target.admin_client("opensandbox")
    client.close()

@pytest.mark.contract("opensandbox", "network-policy", requires="engine")
def test_osb_engine(sandproof_target):
    assert sandproof_target.engine("opensandbox").allows_egress(None, "a.com")
"""


def _skips(pytester: pytest.Pytester, *args: str) -> dict[str, str]:
    """Run in-process and map each skipped test name to its skip reason."""
    recorder = pytester.inline_run("-p", "no:cacheprovider", *args)
    found = {}
    for rep in recorder.getreports("pytest_runtest_logreport"):
        if rep.skipped and isinstance(rep.longrepr, tuple):
            found[rep.nodeid.split("::")[-1]] = str(rep.longrepr[2]).removeprefix("Skipped: ")
    return found


def test_a_plain_run_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "sandproof contracts" not in result.stdout.str()
    assert "sandproof target" not in result.stdout.str()


def test_mock_target_runs_every_contract_and_prints_the_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CONTRACTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*= sandproof contracts =*",
            "target mock*",
            "provider*operation*passed*failed*skipped*notes",
            "tensorlake*create*1*0*0",
            "opensandbox*list*1*0*0",
            "opensandbox*faults*1*0*0",
            "opensandbox*network-policy*1*0*0",
            "4 passed, 0 failed, 0 skipped in *",
        ]
    )


def test_policy_target_skips_api_contracts_and_other_providers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CONTRACTS)
    spec = "policy:contracts.opensandbox_adapter:reference_engine"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", f"--sandproof-target={spec}")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(
        [f"sandproof target: {spec}", "SKIPPED [[]1[]] test_policy_target_skips*.py:3: *does not cover tensorlake*"]
    )
    skips = _skips(pytester, f"--sandproof-target={spec}")
    assert skips == {
        "test_tl_api": f"target '{spec}' does not cover tensorlake (it covers opensandbox)",
        "test_osb_api": f"target '{spec}' is a opensandbox policy engine, not an API server",
        "test_osb_admin": f"target '{spec}' is a opensandbox policy engine, not an API server",
    }


def test_url_target_without_admin_skips_fault_contracts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CONTRACTS)
    with MockServer(_no_admin) as server:
        skips = _skips(pytester, f"--sandproof-target=opensandbox:{server.url}")
    assert set(skips) == {"test_tl_api", "test_osb_admin", "test_osb_engine"}
    assert "has no /_mock admin API for opensandbox" in skips["test_osb_admin"]
    assert "offers no opensandbox policy engine" in skips["test_osb_engine"]
    assert "does not cover tensorlake" in skips["test_tl_api"]


async def _no_admin(scope: dict[str, object], receive: object, send: object) -> None:
    """Answer an empty sandbox list (the preflight's request) and 404 to everything else."""
    assert callable(send)
    found = scope.get("path") == "/v1/sandboxes"
    await send({"type": "http.response.start", "status": 200 if found else 404, "headers": []})
    await send({"type": "http.response.body", "body": b'{"items": []}' if found else b""})


def test_a_served_mock_the_run_did_not_start_is_only_read(pytester: pytest.Pytester) -> None:
    """Without --sandproof-allow-reset the fault contract skips, and the admin client refuses a reset."""
    from mockserver.opensandbox import OpenSandboxMock

    pytester.makepyfile(
        CONTRACTS
        + """
@pytest.mark.contract("opensandbox", "journal")
def test_osb_reads(sandproof_target):
    from harness.targets import TargetError

    client = sandproof_target.admin_client("opensandbox")
    assert client.now() > 0 and client.faults() == []
    with pytest.raises(TargetError, match="refusing to reset"):
        client.reset()
    client.close()
"""
    )
    with OpenSandboxMock(api_key="k").server() as server:
        args = (f"--sandproof-target=opensandbox:{server.url}", "-k", "osb_admin or osb_reads")
        skips = _skips(pytester, *args)
        assert list(skips) == ["test_osb_admin"] and "--sandproof-allow-reset" in skips["test_osb_admin"]
        assert _skips(pytester, *args, "--sandproof-allow-reset") == {}


def test_a_url_the_preflight_refuses_ends_the_run_with_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mockserver.opensandbox import OpenSandboxMock

    monkeypatch.delenv("OPEN_SANDBOX_API_KEY", raising=False)
    pytester.makepyfile(CONTRACTS)
    with OpenSandboxMock(api_key="k").server() as server:
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--sandproof-target=opensandbox:{server.url}")
    assert result.ret == 2
    result.stdout.fnmatch_lines(
        ["*sandproof: target * wants an API key (401 MISSING_API_KEY): set OPEN_SANDBOX_API_KEY*"]
    )
    assert "passed" not in result.stdout.str().splitlines()[-1]


def test_cloud_target_without_key_skips_with_the_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TENSORLAKE_API_KEY", raising=False)
    pytester.makepyfile(CONTRACTS)
    skips = _skips(pytester, "--sandproof-target=tensorlake-cloud")
    assert len(skips) == 4 and "TENSORLAKE_API_KEY is not set" in skips["test_tl_api"]
    assert "does not cover opensandbox" in skips["test_osb_api"]


def test_bad_target_is_a_usage_error_naming_the_forms(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("--sandproof-target=tensorlake:nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sandproof-target: target 'tensorlake:nope'*", "*policy:MODULE:ATTR*"])


def test_malformed_markers_fail_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.contract("e2b", "create")
        def test_unknown_provider():
            pass

        @pytest.mark.contract("tensorlake", "create", requires=("network",))
        def test_unknown_capability():
            pass

        @pytest.mark.sdk("opensandbox")
        def test_sdk_default_operation():
            pass
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*provider must be one of tensorlake, opensandbox, got 'e2b'*"])
    result.stdout.fnmatch_lines(["*requires must be drawn from api, admin, engine*"])
    result.stdout.fnmatch_lines(["opensandbox*sdk_default_operation*1*0*0"])


def test_provider_option_deselects_other_providers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CONTRACTS + "\ndef test_unmarked():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--sandproof-provider=tensorlake")
    result.assert_outcomes(passed=2, deselected=3)


def test_report_files_and_example_counts(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        from hypothesis import given, settings, strategies as st
        from harness.reporting.report import register_deviation

        register_deviation("tensorlake", "create", "ids are shorter", "fine for tests")

        @pytest.mark.contract("tensorlake", "create", requires="engine")
        @settings(max_examples=25, database=None)
        @given(st.integers())
        def test_counted(n):
            assert isinstance(n, int)

        @pytest.mark.contract("opensandbox", "delete", requires="engine")
        def test_broken():
            assert 1 == 2, "delete kept the rule"

        @pytest.mark.contract("opensandbox", "pause", requires="engine")
        def test_skipped():
            pytest.skip("pause is not modelled yet")
        """
    )
    report_dir = tmp_path / "out"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--sandproof-report={report_dir}")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"report: {report_dir / 'fidelity.md'}, {report_dir / 'results.json'}, *junit.xml"])
    cases = ElementTree.parse(report_dir / "junit.xml").getroot().iter("testcase")
    assert sorted(c.get("name") for c in cases) == ["test_broken", "test_counted", "test_skipped"]
    matrix = (report_dir / "fidelity.md").read_text(encoding="utf-8")
    assert "| create | ✅ 1 passed ⚠ | — |" in matrix
    assert "| delete | — | ❌ 0/1 passed |" in matrix
    assert "| pause | — | ⏭ skipped |" in matrix
    assert "delete kept the rule" in matrix and "pause is not modelled yet" in matrix
    assert "| tensorlake | create | ids are shorter | fine for tests |" in matrix
    data = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    counted = next(t for t in data["tests"] if t["operation"] == "create")
    assert counted["examples"] >= 25 and data["examples"] == counted["examples"]
    assert data["examples_per_second"] > 0 and data["exit_status"] == 1


TAGGED = """
import pytest
from harness.strength import Contract, breach, choice, record, spec

SPEC = Contract("demo", "kept", spec("tl.dns.row-4"))
CHOICE = Contract("demo", "stored", choice("the docs are silent on the stored form"))

@pytest.mark.contract("tensorlake", "network-policy", requires="engine")
def test_tagged():
    record(SPEC, True)
    breach(CHOICE, "stored as given", "{'deny_out': ['a.com', 'a.com']}")
"""


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_tagged_checks_reach_the_summary_the_report_and_junit(
    pytester: pytest.Pytester, tmp_path: Path, strict: bool
) -> None:
    pytester.makepyfile(TAGGED)
    report_dir = tmp_path / "out"
    args = ["-p", "no:cacheprovider", f"--sandproof-report={report_dir}", *(["--sandproof-strict"] if strict else [])]
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(**({"failed": 1} if strict else {"passed": 1}))
    if strict:
        result.stdout.fnmatch_lines(["*checks by strength: spec 1 passed* · observed * · choice 1 failed* (strict*"])
    else:
        result.stdout.fnmatch_lines(
            [
                "*checks by strength: spec 1 passed* · observed * · choice *1 differ*",
                "*differs from sandproof's choice: demo:stored (*test_tagged): stored as given (input: {'deny_out': *})",
            ]
        )
    data = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    [test] = data["tests"]
    assert [(c["contract"], c["status"]) for c in test["checks"]] == [
        ("demo:kept", "passed"),
        ("demo:stored", "failed" if strict else "differs"),
    ]
    assert len(data["choice_differences"]) == (0 if strict else 1)
    [case] = ElementTree.parse(report_dir / "junit.xml").getroot().iter("testcase")
    [prop] = [p for p in case.iter("property") if p.get("name") == "sandproof_checks"]
    assert [c["contract"] for c in json.loads(prop.get("value") or "[]")] == ["demo:kept", "demo:stored"]


def test_user_junitxml_is_copied_into_the_report_dir(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.contract('tensorlake', 'x', requires='engine')\ndef test_a():\n    pass\n"
    )
    mine = tmp_path / "mine.xml"
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--junitxml={mine}", f"--sandproof-report={tmp_path / 'r'}"
    )
    result.assert_outcomes(passed=1)
    assert mine.read_bytes() == (tmp_path / "r" / "junit.xml").read_bytes()


def test_hypothesis_profiles_are_registered_and_the_env_profile_is_restored(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = settings.get_current_profile_name()
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "thorough")
    pytester.makepyfile(
        """
        from hypothesis import settings

        def test_profiles():
            assert settings.get_current_profile_name() == "thorough"
            assert settings().max_examples == 2000
            assert settings.get_profile("ci").max_examples == 60
            assert settings.get_profile("dev").max_examples == 20
        """
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert settings.get_current_profile_name() == before
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "no-such-profile")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*HYPOTHESIS_PROFILE='no-such-profile'*"])


def test_policy_contract_fails_a_wrong_engine_listing_the_checks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.register_profile("sandproof-tests-tiny", max_examples=5, deadline=None)
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "sandproof-tests-tiny")
    contract = Path(__file__).resolve().parents[3] / "harness" / "contracts" / "test_policy.py"
    wrong = pytester.runpytest_inprocess(
        str(contract), "-p", "no:cacheprovider", "--sandproof-target=policy:tests.harness.fakes:allow_everything"
    )
    wrong.assert_outcomes(failed=2, skipped=2)
    wrong.stdout.fnmatch_lines(
        ["*opensandbox policy checks failed: *decision_agrees*", "*- decision_agrees (spec): *"], consecutive=False
    )
    wrong.stdout.fnmatch_lines(["*opensandbox restrict_sandbox_network checks failed: *model_only_limits_egress*"])
    right = pytester.runpytest_inprocess(
        str(contract),
        "-p",
        "no:cacheprovider",
        "-k",
        "opensandbox",
        "--sandproof-target=policy:contracts.opensandbox_adapter:reference_engine",
    )
    right.assert_outcomes(passed=2, deselected=2)


def test_report_collects_unknown_fields_from_mocks_held_by_fixtures(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        """
        import asyncio
        import httpx
        import pytest
        from tests.harness.fakes import FakeOpenSandbox

        @pytest.fixture
        def own_mock():
            return FakeOpenSandbox()

        def test_posts(own_mock):
            async def call():
                async with httpx.AsyncClient(transport=own_mock.transport(), base_url="http://m") as client:
                    return (await client.post("/echo", json={"name": "n", "gpu": True})).status_code
            assert asyncio.run(call()) == 200
        """
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--sandproof-report={tmp_path}").assert_outcomes(passed=1)
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["unknown_fields"] == {"opensandbox": {"POST /echo": ["gpu"]}}
    sources = data["unknown_field_sources"]["opensandbox"]["POST /echo"]["gpu"]
    assert [s.rsplit("::", 1)[-1] for s in sources] == ["test_posts"]
    assert "| opensandbox | `POST /echo` | gpu | `test_posts` |" in (tmp_path / "fidelity.md").read_text(
        encoding="utf-8"
    )


RUNTIME_TESTS = """
import pytest

@pytest.mark.contract("tensorlake", "create")
def test_contract(sandproof_target):
    assert sandproof_target.url("tensorlake")

def test_fixture(tensorlake_mock, sandproof_runtime):
    assert (tensorlake_mock.mock.runtime, sandproof_runtime) == ("linux", "linux")

@pytest.mark.runtime("linux")
def test_marked():
    pass

def test_plain():
    pass
"""


def test_runtime_linux_where_it_cannot_run_skips_what_needs_it_with_the_message(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.plugin

    message = "linux runtime unavailable: missing bubblewrap (bwrap)"
    monkeypatch.setattr(harness.plugin, "linux_problem", lambda: message)
    pytester.makepyfile(RUNTIME_TESTS)
    skipped = _skips(pytester, "--sandproof-runtime=linux")
    assert skipped == {"test_contract": message, "test_fixture": message, "test_marked": message}
    assert _skips(pytester) == {"test_marked": message}  # the marker skips whatever the run's runtime


def test_runtime_linux_builds_the_mocks_on_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.plugin

    monkeypatch.setattr(harness.plugin, "linux_problem", lambda: None)
    pytester.makepyfile(RUNTIME_TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--sandproof-runtime=linux")
    result.assert_outcomes(passed=4)
    bad = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--sandproof-runtime=docker")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
