"""The real-cloud guard: a test using sandproof's fixtures cannot reach beyond loopback unless it opts in."""

from __future__ import annotations

import os

import httpx
import pytest

from harness.plugin.guard import Tripwire, guarded_env, message

pytest_plugins = ["pytester"]

ESCAPING_TEST = """
import httpx
import pytest

def _call():
    try:
        httpx.get("http://cloud.example.invalid/sandboxes", timeout=5)
    except httpx.HTTPError:
        pass

def test_escapes(tensorlake_mock):
    _call()

@pytest.mark.sandproof_cloud
def test_allowed(tensorlake_mock):
    _call()

def test_no_fixture():
    _call()

def test_loopback_is_fine(tensorlake_mock):
    assert httpx.get(tensorlake_mock.url + "/_mock/clock").status_code == 200
"""


def test_an_escaping_call_fails_only_the_guarded_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_escape=ESCAPING_TEST)
    result = pytester.runpytest_subprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1, errors=0)
    result.stdout.fnmatch_lines(["*test_escapes*", "*sandproof: this test tried to reach cloud.example.invalid*"])


def test_the_tripwire_traps_and_the_environment_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    tripwire = Tripwire()
    try:
        with guarded_env(tripwire, ["http://10.9.8.7:8080"]) as trapped:
            assert "10.9.8.7" in os.environ["NO_PROXY"].split(",")
            with pytest.raises(httpx.HTTPError):
                httpx.get("https://sandbox.tensorlake.ai/sandboxes", timeout=5)
        assert "HTTPS_PROXY" not in os.environ
        lines = trapped.new()
        assert trapped.new() == []
    finally:
        tripwire.close()
    assert lines and lines[0].startswith("CONNECT sandbox.tensorlake.ai:443")
    assert "sandbox.tensorlake.ai:443" in message(lines)
