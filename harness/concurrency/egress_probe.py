"""The egress probe of the concurrency contract under the linux runtime: after a policy change returned, no
connection from inside the sandbox to a destination the new policy denies may succeed.

:class:`LinuxEgressProbe` is an :class:`~harness.concurrency.workload.EgressProbe` for an in-process mock
built with ``runtime="linux"``. For each probe it takes the sandbox's policy from the mock's model (the one
now in force), picks from a fixed set of destinations the world serves (TEST-NET addresses, hostnames the
policy names, wildcard-covered names) those the model's own egress rules deny (TensorLake's
``connect_decision`` and ``dns_decision``, OpenSandbox's ``PolicyGate`` in the sidecar's mode), and runs a
small Python program inside the sandbox that connects to each on port 80 and prints the ones that got
through. Every one printed is a finding.

A policy change by another client while the probe runs would make it compare against the wrong policy, so
the probe reads the policy the model holds and the one the sandbox's firewall last applied together (under
the model's lock), and the firewall's swap counter before and after the connections; when the two policies
differ or the counter moved, it reports nothing (the probe is then inconclusive, not passed or failed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.concurrency.workload import ProbeRequest

__all__ = ["CANDIDATE_ADDRESSES", "LinuxEgressProbe", "denied_destinations"]

#: Addresses every linux world serves (TEST-NET-1/2/3): reachable when the policy allows them.
CANDIDATE_ADDRESSES = ("192.0.2.10", "192.0.2.77", "198.51.100.7", "198.51.100.99", "203.0.113.5", "203.0.113.99")
#: A name only the DNS table's synthetic range answers (denied by any default-deny policy).
OTHER_NAME = "probe.sandproof.test"
_CONNECT = """
import json, socket, sys
got = []
for host in json.loads(sys.argv[1]):
    try:
        socket.create_connection((host, 80), timeout=1.0).close()
        got.append(host)
    except OSError:
        pass
print(json.dumps(got))
"""


def _names(entries: Sequence[str]) -> list[str]:
    names: list[str] = []
    for entry in entries:
        if not entry or entry[0].isdigit():
            continue
        names.append("probe." + entry[2:] if entry.startswith("*.") else entry)
    return names


def denied_destinations(mock: Any, sandbox_id: str) -> tuple[list[str], object]:
    """Return the destinations the sandbox's policy now denies (by the mock model's own rules) and that policy."""
    if mock.provider == "tensorlake":
        from mockserver.tensorlake.model.egress import connect_decision, dns_decision

        record = mock.model.sandboxes.get(sandbox_id)
        if record is None:
            return [], None
        policy = record.network
        entries = [] if policy is None else [*policy.allow_out, *policy.deny_out]
        denied = [ip for ip in CANDIDATE_ADDRESSES if not connect_decision(policy, None, ip).allowed]
        from mockserver.linux.addresses import RESOLVER

        if dns_decision(policy, RESOLVER).allowed:
            for name in [*_names(entries), OTHER_NAME]:
                addresses = mock.dns.resolve(name)
                if addresses and not connect_decision(policy, name, addresses[0]).allowed:
                    denied.append(name)
        return denied, policy
    from mockserver.opensandbox.model.egress import PolicyGate, effective_policy

    found = mock.state.sandboxes.get(sandbox_id)
    if found is None:
        return [], None
    gate = PolicyGate(lambda: effective_policy(found), mock.dns, mock.config.enforcement)
    policy = effective_policy(found)
    targets = [] if policy is None else [rule.target for rule in policy.egress]
    denied = [ip for ip in CANDIDATE_ADDRESSES if not gate.connect(None, ip, 80)]
    for name in [*_names(targets), OTHER_NAME]:
        addresses = mock.dns.resolve(name)
        if addresses and not gate.connect(name, addresses[0], 80):
            denied.append(name)
    return denied, policy


class LinuxEgressProbe:
    """Probe the egress of an in-process linux-runtime mock from inside its sandboxes (see the module docstring)."""

    def __init__(self, mocks: dict[str, Any]) -> None:
        self.mocks = mocks
        self.probes = 0
        self.conclusive = 0

    def __call__(self, request: ProbeRequest) -> Sequence[str]:
        """Return one line per connection to a denied destination that succeeded."""
        mock = self.mocks.get(request.provider)
        linux = getattr(mock, "linux", None)
        if mock is None or linux is None:
            return []
        try:
            sandbox = self._sandbox(mock, request.sandbox_id)
        except Exception:
            return []  # gone meanwhile (another client deleted it)
        if sandbox is None:
            return []
        lock = mock.model.lock if mock.provider == "tensorlake" else mock.state.lock
        with lock:
            swaps = sandbox.firewall.swaps
            denied, policy = denied_destinations(mock, request.sandbox_id)
            enforced, applied = linux.applied_policy(request.sandbox_id)
        if not denied:
            return []
        self.probes += 1
        if not enforced or applied is not policy:
            return []
        try:
            result = sandbox.run(["python3", "-c", _CONNECT, json.dumps(denied)], timeout=30)
        except Exception:
            return []
        if sandbox.firewall.swaps != swaps:
            return []
        self.conclusive += 1
        try:
            through = json.loads(result.stdout.decode() or "[]")
        except ValueError:
            return [f"{request.sandbox_id}: the probe program failed: {result.stderr.decode(errors='replace')[:200]}"]
        return [f"{request.sandbox_id}: connected to {host} after the policy denying it returned" for host in through]

    @staticmethod
    def _sandbox(mock: Any, sandbox_id: str) -> Any:
        if mock.provider == "tensorlake":
            record = mock.model.sandboxes.get(sandbox_id)
            return None if record is None else mock.linux.ensure(sandbox_id)
        record = mock.state.lookup(sandbox_id)
        return None if record is None or record.state != "Running" else mock.linux.ensure(record)
