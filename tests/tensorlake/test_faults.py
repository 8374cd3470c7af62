"""Faults through the real SDK: what it retries, what it reports, and lifecycle failure payloads."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tensorlake.sandbox import (
    NetworkConfig,
    RemoteAPIError,
    Sandbox,
    SandboxError,
    SandboxPending,
)

from mockserver.tensorlake import TensorLakeMock

from .conftest import journal


def test_a_503_on_a_mutation_is_retried_then_succeeds(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    sandbox = Sandbox.create(**tl)
    mock.fail_next("PATCH", "/sandboxes/*", 503, sandbox_id=sandbox.sandbox_id)
    info = sandbox.update(network=NetworkConfig(allow_internet_access=False))
    assert info.network_policy is not None and info.network_policy.allow_internet_access is False
    patches = journal(mock, 2, method="PATCH")
    assert [e.status for e in patches] == [503, 200] and patches[0].fault == "respond:503"
    assert http.get(f"/sandboxes/{sandbox.sandbox_id}").json()["network_policy"]["allow_internet_access"] is False


def test_a_500_is_reported_not_retried(mock: TensorLakeMock, tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    mock.fail_next("GET", "/sandboxes/*", 500, code="internal_error")
    with pytest.raises(RemoteAPIError) as exc:
        Sandbox.connect(sandbox.sandbox_id, **tl)
    assert exc.value.status_code == 500 and exc.value.code == "internal_error"
    assert len(journal(mock, 1, method="GET")) == 1


def test_a_failed_create_reports_the_reason(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    mock.fail_next_create("ConfigurationError", error_details={"message": "image not found"})
    with pytest.raises(SandboxError) as exc:
        Sandbox.create(**tl, image="no/such-image")
    assert exc.value.reason == "ConfigurationError" and exc.value.sandbox_id
    info = http.get(f"/sandboxes/{exc.value.sandbox_id}").json()
    assert info["status"] == "failed" and info["termination_reason"] == "ConfigurationError"


def test_a_timed_out_create_leaves_a_pending_sandbox(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    mock.time_out_next_create()
    with pytest.raises(SandboxPending) as exc:
        Sandbox.create(**tl, name="queued", request_timeout=0.5)
    sid = exc.value.sandbox_id
    assert sid and http.get("/sandboxes/queued").json()["status"] == "pending"
    assert journal(mock, 1, method="POST", path="/sandboxes")[0].status == 504
    mock.release(sid)
    assert Sandbox.connect("queued", **tl).run("echo", ["finally"]).stdout == "finally"


def test_a_cut_run_stream_is_reported(mock: TensorLakeMock, tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    mock.faults.add(method="POST", path="/api/v1/processes/run", action="cut_stream", after_chunks=1)
    with pytest.raises(SandboxError, match="EventSource error"):
        sandbox.run("echo", ["lost"])
    assert sandbox.run("echo", ["fine"]).stdout == "fine"
