"""The concurrency contract's egress probe under the linux runtime: silent on enforced policies, and it finds
the sandboxes whose firewall did not follow a policy change (the mutants of ``tests/mutants``)."""

from __future__ import annotations

import httpx
import pytest

from harness.concurrency.egress_probe import LinuxEgressProbe, denied_destinations
from harness.concurrency.workload import ProbeRequest
from mockserver.opensandbox import OpenSandboxMock
from mockserver.service import HttpMock
from mockserver.tensorlake import TensorLakeMock
from tests.mutants.linux_egress_mocks import OpenFirewallOpenSandbox, OpenFirewallTensorLake

pytestmark = pytest.mark.runtime("linux")
KEY = "sandproof-key"
DENY = {"allow_internet_access": True, "allow_out": [], "deny_out": ["198.51.100.0/24", "blocked.example.com"]}


def tensorlake_probe(mock: TensorLakeMock) -> list[str]:
    """Create a sandbox, run a command in it, PATCH a deny policy, probe; return the findings."""
    with mock.server() as server, httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {KEY}"}) as http:
        ident = http.post("/sandboxes", json={}).json()["sandbox_id"]
        assert mock.linux is not None
        mock.linux.ensure(ident)
        assert http.patch(f"/sandboxes/{ident}", json={"network": DENY}).status_code == 200
        denied, _ = denied_destinations(mock, ident)
        assert "198.51.100.7" in denied and "blocked.example.com" in denied and "192.0.2.10" not in denied
        probe = LinuxEgressProbe({"tensorlake": mock})
        found = list(probe(ProbeRequest("tensorlake", ident, DENY, 0)))
        assert probe.conclusive == 1
        return found


def opensandbox_probe(mock: OpenSandboxMock) -> list[str]:
    """Create a sandbox with a sidecar, merge a deny rule through it, probe; return the findings."""
    body = {
        "image": {"uri": "python:3.11"},
        "entrypoint": ["tail", "-f", "/dev/null"],
        "timeout": 600,
        "resourceLimits": {"cpu": "1", "memory": "2Gi"},
        "networkPolicy": {"defaultAction": "allow", "egress": []},
    }
    with mock.server() as server, httpx.Client(base_url=server.url) as http:
        ident = http.post("/v1/sandboxes", json=body).json()["id"]
        rule = [{"action": "deny", "target": "blocked.example.com"}]
        assert http.patch(f"/direct/{ident}/18080/policy", json=rule).status_code == 200
        probe = LinuxEgressProbe({"opensandbox": mock})
        found = list(probe(ProbeRequest("opensandbox", ident, None, 0)))
        assert probe.conclusive == 1
        return found


@pytest.mark.parametrize(
    ("make", "check"),
    [
        (lambda: TensorLakeMock(runtime="linux"), tensorlake_probe),
        (lambda: OpenSandboxMock(runtime="linux"), opensandbox_probe),
    ],
    ids=["tensorlake", "opensandbox"],
)
def test_the_probe_is_silent_where_the_firewall_follows(make: object, check: object) -> None:
    mock: HttpMock = make()  # type: ignore[operator]
    try:
        assert check(mock) == []  # type: ignore[operator]
    finally:
        mock.close()


@pytest.mark.parametrize(
    ("make", "check"),
    [(OpenFirewallTensorLake, tensorlake_probe), (OpenFirewallOpenSandbox, opensandbox_probe)],
    ids=["tensorlake", "opensandbox"],
)
def test_the_probe_finds_a_firewall_that_does_not_follow(make: object, check: object) -> None:
    mock: HttpMock = make()  # type: ignore[operator]
    try:
        found = check(mock)  # type: ignore[operator]
    finally:
        mock.close()
    assert found and all("after the policy denying it returned" in line for line in found)
    assert any("blocked.example.com" in line for line in found)
