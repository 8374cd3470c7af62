"""The seed's egress matrix, enforced by the kernel and measured with real curl, getent and python sockets.

Every expectation comes from the reference model in ``contracts`` (``decide_dns``/``decide_egress`` for
TensorLake, ``decide_egress`` for OpenSandbox), so each probe checks the real network stack against it:

* ``getent hosts NAME`` succeeds iff DNS to the resolver is allowed (TensorLake) or the name is allowed
  (OpenSandbox answers NXDOMAIN for denied names);
* ``curl http://NAME/`` gets the test host's 200 iff the name resolves and a connection for that name is
  allowed;
* a python TCP connection to a raw address (one no policy name resolves to) succeeds iff the address is
  allowed (always, in OpenSandbox's ``dns`` mode).
"""

from __future__ import annotations

import json
import time

import pytest

from contracts import opensandbox as osb
from contracts import tensorlake as tl
from contracts.errors import PolicyError
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.addresses import RESOLVER
from mockserver.opensandbox.linux_egress import opensandbox_apply
from mockserver.tensorlake.linux_egress import tensorlake_apply, tensorlake_update

from .conftest import NAMES, needs_runtime

pytestmark = needs_runtime

RAW = ["192.0.2.5", "192.0.2.66", "192.0.2.200", "198.51.100.99", "203.0.113.99"]
PROBE_NAMES = ["example.com", "api.example.com", "v1.api.example.com", "evil.example.com", "pypi.org", "other.test"]

SCRIPT = r"""
for name in {names}; do
  if getent hosts "$name" >/dev/null; then echo "dns $name ok"; else echo "dns $name fail"; fi
  echo "http $name $(curl -s -m 5 -o /dev/null -w '%{{http_code}}' "http://$name/")"
done
python3 - <<'EOF'
import socket
for address in {raw}:
    try:
        socket.create_connection((address, 7), timeout=5).close()
        print("ip", address, "ok")
    except OSError:
        print("ip", address, "fail")
EOF
"""


def measure(sandbox: LinuxSandbox, names: list[str], raw: list[str]) -> dict[str, bool]:
    """Return each probe's outcome: ``dns NAME``, ``http NAME`` (a 200) and ``ip ADDRESS``."""
    script = SCRIPT.format(names=" ".join(names), raw=json.dumps(raw))
    result = sandbox.run(script, timeout=120)
    assert result.exit_code == 0, result.stderr
    outcome = {}
    for line in result.stdout.decode().splitlines():
        kind, target, value = line.split()
        outcome[f"{kind} {target}"] = value in ("ok", "200")
    return outcome


TENSORLAKE = {
    "open, deny a name, an address and a CIDR": tl.NetworkConfig(
        True, (), ("evil.example.com", "192.0.2.66", "198.51.100.0/24")
    ),
    "allow-list: wildcard, name, CIDR; deny precedence": tl.NetworkConfig(
        True, ("*.example.com", "pypi.org", "192.0.2.0/25"), ("evil.example.com", "192.0.2.66")
    ),
    "no internet, allow-list without the resolver: DNS blocked": tl.NetworkConfig(False, ("pypi.org", "192.0.2.5"), ()),
    "no internet, allow-list with the resolver: DNS allowed": tl.NetworkConfig(False, ("pypi.org", RESOLVER), ()),
    "no internet, empty allow-list: everything blocked": tl.NetworkConfig(False, (), ()),
    "open but the resolver denied": tl.NetworkConfig(True, (), (RESOLVER,)),
}


@pytest.mark.parametrize("config", TENSORLAKE.values(), ids=TENSORLAKE.keys())
def test_tensorlake_matrix(runtime: LinuxRuntime, sandbox: LinuxSandbox, config: tl.NetworkConfig) -> None:
    tensorlake_apply(sandbox.firewall, config, runtime.dns)
    outcome = measure(sandbox, PROBE_NAMES, RAW)
    dns_allowed = tl.decide_dns(config, RESOLVER).allowed
    expected = {}
    for name in PROBE_NAMES:
        expected[f"dns {name}"] = dns_allowed
        expected[f"http {name}"] = dns_allowed and tl.decide_egress(config, host=name, ip=NAMES[name][0]).allowed
    for address in RAW:
        expected[f"ip {address}"] = tl.decide_egress(config, ip=address).allowed
    assert outcome == expected


OPENSANDBOX = {
    "deny by default, allow a name": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
    "wildcard, apex apart, first match wins": {
        "defaultAction": "deny",
        "egress": [
            {"action": "deny", "target": "api.example.com"},
            {"action": "allow", "target": "*.example.com"},
            {"action": "allow", "target": "192.0.2.5"},
        ],
    },
    "allow by default, deny a name and an address": {
        "defaultAction": "allow",
        "egress": [{"action": "deny", "target": "evil.example.com"}, {"action": "deny", "target": "192.0.2.66"}],
    },
}


@pytest.mark.parametrize("mode", ["dns", "dns+nft"])
@pytest.mark.parametrize("body", OPENSANDBOX.values(), ids=OPENSANDBOX.keys())
def test_opensandbox_matrix(runtime: LinuxRuntime, sandbox: LinuxSandbox, body: dict[str, object], mode: str) -> None:
    policy = osb.NetworkPolicy.from_json(body)
    opensandbox_apply(sandbox.firewall, policy, mode, runtime.dns)  # type: ignore[arg-type]
    outcome = measure(sandbox, PROBE_NAMES, RAW)
    expected = {}
    for name in PROBE_NAMES:
        allowed = osb.decide_egress(policy, name).allowed
        expected[f"dns {name}"] = expected[f"http {name}"] = allowed
    for address in RAW:
        expected[f"ip {address}"] = mode == "dns" or osb.decide_egress(policy, address).allowed
    assert outcome == expected


def test_no_policy_is_unrestricted(sandbox: LinuxSandbox) -> None:
    assert all(measure(sandbox, ["example.com"], ["192.0.2.66"]).values())


def test_hostname_rules_follow_dns_changes(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    runtime.dns.update({"cdn-rotate.test": ["192.0.2.140"]})
    tensorlake_apply(sandbox.firewall, tl.NetworkConfig(True, ("cdn-rotate.test",), ()), runtime.dns)
    assert measure(sandbox, ["cdn-rotate.test"], ["192.0.2.141"]) == {
        "dns cdn-rotate.test": True,
        "http cdn-rotate.test": True,
        "ip 192.0.2.141": False,
    }
    runtime.dns.update({"cdn-rotate.test": ["192.0.2.141"]})  # the CDN rotates its address
    assert measure(sandbox, ["cdn-rotate.test"], ["192.0.2.141"]) == {
        "dns cdn-rotate.test": True,
        "http cdn-rotate.test": True,
        "ip 192.0.2.141": True,  # learned from the answer
    }


def test_a_blocked_name_is_not_reachable_through_an_allowed_names_address(
    runtime: LinuxRuntime, sandbox: LinuxSandbox
) -> None:
    # Both names once hashed to one synthetic address: learning the allowed one let the blocked one through.
    tensorlake_apply(sandbox.firewall, tl.NetworkConfig(True, ("*.wild.example",), ()), runtime.dns)
    outcome = measure(sandbox, ["c40423.wild.example", "blocked.example"], [])
    assert outcome == {
        "dns c40423.wild.example": True,
        "http c40423.wild.example": True,
        "dns blocked.example": True,  # TensorLake answers every name; the connection is what is refused
        "http blocked.example": False,
    }
    assert runtime.dns.resolve("c40423.wild.example") != runtime.dns.resolve("blocked.example")


def test_an_unresolvable_host_is_rejected_before_anything_changes(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    current = tl.NetworkConfig(True, (), ("192.0.2.66",))
    tensorlake_apply(sandbox.firewall, current, runtime.dns)
    before, swaps = sandbox.firewall.ruleset(), sandbox.firewall.swaps
    body = {"network": {"allow_internet_access": True, "allow_out": ["pypi.org", "no-such-host.invalid"]}}
    with pytest.raises(PolicyError) as refused:
        tensorlake_update(sandbox.firewall, current, body, runtime.dns)
    assert refused.value.code == tl.UNRESOLVABLE_HOST
    assert sandbox.firewall.ruleset() == before and sandbox.firewall.swaps == swaps
    assert measure(sandbox, [], ["192.0.2.66", "192.0.2.5"]) == {"ip 192.0.2.66": False, "ip 192.0.2.5": True}


def test_patch_tri_state(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    current = tensorlake_update(sandbox.firewall, None, {"network": {"deny_out": ["192.0.2.66"]}}, runtime.dns)
    assert current == tl.NetworkConfig(True, (), ("192.0.2.66",))
    assert tensorlake_update(sandbox.firewall, current, {"name": "x"}, runtime.dns) is current  # absent: kept
    assert measure(sandbox, [], ["192.0.2.66"]) == {"ip 192.0.2.66": False}
    assert tensorlake_update(sandbox.firewall, current, {"network": None}, runtime.dns) is None  # cleared
    assert measure(sandbox, [], ["192.0.2.66"]) == {"ip 192.0.2.66": True}


LOOP = r"""
import socket, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for address in ("192.0.2.66", "192.0.2.67"):
        started = time.monotonic_ns()
        try:
            socket.create_connection((address, 7), timeout=2).close()
            ok = 1
        except OSError:
            ok = 0
        print(started, time.monotonic_ns(), address, ok, flush=True)
"""


def test_a_swap_while_connections_run(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process(["python3", "-c", LOOP, "3"])
    deadline = time.monotonic() + 20
    while proc.output().count(b"\n") < 20 and time.monotonic() < deadline:
        proc.wait(0.01)
    swap_started = time.monotonic_ns()
    tensorlake_update(sandbox.firewall, None, {"network": {"deny_out": ["192.0.2.66"]}}, runtime.dns)
    swap_returned = time.monotonic_ns()
    status = proc.wait(60)
    assert status is not None and status.code == 0, proc.output("stderr")
    attempts = [line.split() for line in proc.output("stdout").decode().splitlines()]
    before = [int(ok) for _, end, a, ok in attempts if a == "192.0.2.66" and int(end) < swap_started]
    after = [int(ok) for start, _, a, ok in attempts if a == "192.0.2.66" and int(start) > swap_returned]
    control = [int(ok) for _, _, a, ok in attempts if a == "192.0.2.67"]
    assert before and all(before), "the denied host was reachable before the swap"
    assert after and not any(after), "a connection to the newly denied host succeeded after the swap returned"
    assert control and all(control), "the swap disturbed an address it does not deny"
