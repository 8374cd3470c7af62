"""Egress seen from inside a sandbox: ``getent`` and ``curl`` probes run through the SDK's ``run``.

The expectations are the networking seed's four-row ``allow_internet_access`` x ``allow_out`` table,
wildcard and deny precedence rules, and live policy updates. Every case runs on both runtimes: the
emulator's probes, and real ``getent`` and ``curl`` in Linux namespaces with the policy compiled to nftables.
"""

from __future__ import annotations

from typing import Any

import pytest
from tensorlake.sandbox import NetworkConfig, RemoteAPIError, Sandbox

from mockserver.core.dns import SANDBOX_RESOLVER
from mockserver.tensorlake import TensorLakeMock

from .conftest import RUNTIMES

OK, NO_DNS, REFUSED = 0, 6, 7
ALLOWED_HOST, ALLOWED_IP = "api.example.com", "203.0.113.10"
OTHER_HOST, OTHER_IP = "other.example.org", "198.51.100.7"


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """Probe egress on the emulator and on the linux runtime."""
    return str(request.param)


def getent(sandbox: Sandbox, name: str) -> int:
    """Return the exit code of ``getent hosts name`` inside the sandbox."""
    return int(sandbox.run("getent", ["hosts", name]).exit_code)


def curl(sandbox: Sandbox, target: str) -> int:
    """Return the exit code of ``curl http://target/`` inside the sandbox, checking its output agrees."""
    result = sandbox.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", f"http://{target}/"])
    assert result.stdout == ("200" if result.exit_code == OK else "000"), result
    return int(result.exit_code)


ROWS = [
    pytest.param(
        True,
        [],
        {"dns": OK, ALLOWED_HOST: OK, OTHER_HOST: OK, ALLOWED_IP: OK, OTHER_IP: OK},
        id="internet-on, allow_out empty: all open",
    ),
    pytest.param(
        True,
        [ALLOWED_HOST, ALLOWED_IP],
        {"dns": OK, ALLOWED_HOST: OK, OTHER_HOST: REFUSED, ALLOWED_IP: OK, OTHER_IP: REFUSED},
        id="internet-on, allow_out set: default-deny, DNS allowed",
    ),
    pytest.param(
        False,
        [ALLOWED_HOST, ALLOWED_IP],
        {"dns": 2, ALLOWED_HOST: NO_DNS, OTHER_HOST: NO_DNS, ALLOWED_IP: OK, OTHER_IP: REFUSED},
        id="internet-off, allow_out set: default-deny, DNS blocked",
    ),
    pytest.param(
        False,
        [],
        {"dns": 2, ALLOWED_HOST: NO_DNS, OTHER_HOST: NO_DNS, ALLOWED_IP: REFUSED, OTHER_IP: REFUSED},
        id="internet-off, allow_out empty: everything blocked",
    ),
]


@pytest.mark.parametrize(("internet", "allow_out", "expected"), ROWS)
def test_four_row_table(tl: dict[str, Any], internet: bool, allow_out: list[str], expected: dict[str, int]) -> None:
    sandbox = Sandbox.create(**tl, allow_internet_access=internet, allow_out=allow_out)
    observed = {"dns": getent(sandbox, ALLOWED_HOST)}
    observed |= {target: curl(sandbox, target) for target in (ALLOWED_HOST, OTHER_HOST, ALLOWED_IP, OTHER_IP)}
    assert observed == expected


def test_dns_works_without_internet_when_the_resolver_is_listed(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl, allow_internet_access=False, allow_out=[ALLOWED_HOST, SANDBOX_RESOLVER])
    assert sandbox.run("cat", ["/etc/resolv.conf"]).stdout.splitlines()[0] == f"nameserver {SANDBOX_RESOLVER}"
    assert getent(sandbox, ALLOWED_HOST) == OK
    assert (curl(sandbox, ALLOWED_HOST), curl(sandbox, OTHER_HOST)) == (OK, REFUSED)


def test_denying_a_private_range_keeps_the_resolver(tl: dict[str, Any]) -> None:
    """One resolver on both runtimes: denying 10.0.0.0/8 leaves DNS, so an allowed name is reached on each."""
    sandbox = Sandbox.create(**tl, allow_out=["pypi.org"], deny_out=["10.0.0.0/8"])
    observed = {target: curl(sandbox, target) for target in ("pypi.org", OTHER_HOST, "10.1.2.3")}
    assert observed == {"pypi.org": OK, OTHER_HOST: REFUSED, "10.1.2.3": REFUSED}


def test_wildcard_reaches_subdomains_not_the_apex(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl, allow_out=["*.example.com"])
    assert curl(sandbox, "api.example.com") == OK
    assert curl(sandbox, "v1.api.example.com") == OK
    assert curl(sandbox, "example.com") == REFUSED


def test_deny_out_wins_over_allow_out(mock: TensorLakeMock, tl: dict[str, Any]) -> None:
    mock.dns.update({"cdn.example.net": ["203.0.113.77"]})
    sandbox = Sandbox.create(
        **tl, allow_out=[ALLOWED_HOST, "cdn.example.net", "*.example.com"], deny_out=[ALLOWED_HOST, "203.0.113.0/24"]
    )
    assert curl(sandbox, ALLOWED_HOST) == REFUSED
    assert curl(sandbox, "cdn.example.net") == REFUSED
    assert curl(sandbox, "www.example.com") == OK
    open_box = Sandbox.create(**tl, deny_out=[OTHER_HOST])
    assert (curl(open_box, OTHER_HOST), curl(open_box, ALLOWED_HOST)) == (REFUSED, OK)


def test_live_update_changes_what_the_sandbox_reaches(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    assert curl(sandbox, OTHER_HOST) == OK
    sandbox.update(network=NetworkConfig(allow_out=[ALLOWED_HOST]))
    assert (curl(sandbox, ALLOWED_HOST), curl(sandbox, OTHER_HOST)) == (OK, REFUSED)
    sandbox.update(network=NetworkConfig(allow_internet_access=False))
    assert (getent(sandbox, ALLOWED_HOST), curl(sandbox, ALLOWED_IP)) == (2, REFUSED)


def test_unresolvable_host_rejects_the_update_and_keeps_the_old_policy(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl, allow_out=[ALLOWED_HOST])
    with pytest.raises(RemoteAPIError) as exc:
        sandbox.update(network=NetworkConfig(allow_out=["gone.invalid"]))
    assert exc.value.status_code == 400 and exc.value.code == "unresolvable_host"
    info = sandbox.info()
    assert info.network_policy is not None and info.network_policy.allow_out == [ALLOWED_HOST]
    assert (curl(sandbox, ALLOWED_HOST), curl(sandbox, OTHER_HOST)) == (OK, REFUSED)
