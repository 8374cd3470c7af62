"""The test guard itself: an SDK call that would go to the real cloud is trapped on loopback."""

from __future__ import annotations

from typing import Any

import pytest
from tensorlake.sandbox import Sandbox, SandboxError

from mockserver.tensorlake import sdk_env


def test_cloud_bound_sdk_traffic_lands_on_the_tripwire(tripwire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TENSORLAKE_SANDBOX_API_URL")
    before = len(tripwire.hits())
    with pytest.raises(SandboxError):
        Sandbox.list(api_url="http://mock.test:9", api_key="k", request_timeout=5)
    caught = tripwire.drain(before)
    assert caught and all("sandbox.tensorlake.ai" in line for line in caught), caught


def test_sdk_env_sets_both_urls_and_no_proxy() -> None:
    env = sdk_env("http://127.0.0.1:8911/", "key")
    assert env["TENSORLAKE_API_URL"] == env["TENSORLAKE_SANDBOX_API_URL"] == "http://127.0.0.1:8911"
    assert env["TENSORLAKE_API_KEY"] == "key"
    assert "127.0.0.1" in env["NO_PROXY"].split(",")
    with pytest.raises(ValueError):
        sdk_env("127.0.0.1:8911")
