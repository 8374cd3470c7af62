"""Egress probes of the TensorLake API machine: destinations, what the reference policy predicts, SSE output.

:func:`destinations` picks hosts around a policy entry; :func:`expect_probe` decides ``getent``/``curl`` with
the egress gate's decisions; :func:`parse_sse` reads what ``/api/v1/processes/run`` streamed; the resolvers
are the DNS the oracle assumes the target's sandboxes see.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts.tensorlake import NetworkConfig
from mockserver.core import DnsTable
from mockserver.tensorlake.model.egress import connect_decision, dns_decision

__all__ = [
    "DNS_ENTRIES",
    "ProbeExpectation",
    "Resolve",
    "RunResult",
    "default_resolve",
    "destinations",
    "expect_probe",
    "is_ipv4",
    "parse_sse",
    "system_resolve",
]

Resolve = Callable[[str], Sequence[str]]

#: The DNS table a strict run installs on the target and gives the oracle (unknown names resolve synthetically).
#: ``www.example.com`` sits inside ``10.0.0.0/8`` and ``example.org`` is ``203.0.113.10``, so hostname and
#: address rules meet on the same destination.
DNS_ENTRIES: dict[str, list[str]] = {
    "example.com": ["93.184.215.14"],
    "www.example.com": ["10.20.30.40"],
    "example.org": ["203.0.113.10"],
    "pypi.org": ["151.101.0.223"],
    "files.pythonhosted.org": ["198.51.100.7"],
    "github.com": ["140.82.112.3"],
}
UNRELATED = ("github.com", "www.example.net", "192.0.2.1", "8.8.8.8")
VARIANTS = ("as-is", "sub", "apex", "outside")


@dataclass(frozen=True)
class RunResult:
    """What ``/api/v1/processes/run`` streamed: output lines per stream and the exit event."""

    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    exit_code: int | None
    signal: int | None


def parse_sse(text: str) -> RunResult:
    """Parse a ``text/event-stream`` body of ``data:`` frames (started, output lines, exit)."""
    stdout: list[str] = []
    stderr: list[str] = []
    exit_code: int | None = None
    signal: int | None = None
    for block in text.split("\n\n"):
        payload = "".join(line[5:].strip() for line in block.splitlines() if line.startswith("data:"))
        if not payload:
            continue
        try:
            event = json.loads(payload)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if "line" in event:
            (stderr if event.get("stream") == "stderr" else stdout).append(str(event["line"]))
        elif "exit_code" in event or "signal" in event:
            exit_code = event.get("exit_code") if isinstance(event.get("exit_code"), int) else None
            signal = event.get("signal") if isinstance(event.get("signal"), int) else None
    return RunResult(tuple(stdout), tuple(stderr), exit_code, signal)


# --- egress probes ----------------------------------------------------------------------------------------


def is_ipv4(text: str) -> bool:
    """Tell whether ``text`` is an IPv4 address."""
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _derive(entry: str, variant: str) -> str:
    """Return a destination near a canonical policy entry: itself, a subdomain, its apex, or just outside it."""
    if entry.startswith("*."):
        base = entry[2:]
        return {"as-is": "a." + base, "sub": "a.b." + base, "apex": base}.get(variant, "x" + base)
    if "/" in entry:
        network = ipaddress.IPv4Network(entry)
        last = int(network.broadcast_address)
        offsets = {"as-is": int(network.network_address) + 1, "sub": last, "apex": int(network.network_address)}
        return str(ipaddress.IPv4Address(offsets.get(variant, min(last + 1, 2**32 - 1))))
    if is_ipv4(entry):
        address = int(ipaddress.IPv4Address(entry))
        return str(ipaddress.IPv4Address(min(address + 1, 2**32 - 1))) if variant == "outside" else entry
    labels = entry.split(".")
    picks = {
        "as-is": entry,
        "sub": ("api." if entry.startswith("www.") else "www.") + entry,
        "apex": ".".join(labels[1:]) if len(labels) > 2 else entry,
    }
    return picks.get(variant, "x" + entry)


def destinations(policy: NetworkConfig | None, source: str, index: int) -> list[str]:
    """Return probe destinations: around one of the policy's entries (``source="entry"``) or an unrelated host."""
    entries = [] if policy is None else [*policy.allow_out, *policy.deny_out]
    if source != "entry" or not entries:
        return [UNRELATED[index % len(UNRELATED)]]
    entry = entries[index % len(entries)]
    return list(dict.fromkeys(_derive(entry, variant) for variant in VARIANTS))


@dataclass(frozen=True)
class ProbeExpectation:
    """What the reference policy says of one probe.

    ``exit_code`` is the exact exit code when DNS answers are known (None otherwise); ``blocked`` means the
    policy certainly stops it (it must fail anywhere); ``addresses`` are the lines ``getent`` must print.
    """

    exit_code: int | None
    blocked: bool
    addresses: tuple[str, ...] | None = None


def expect_probe(
    policy: NetworkConfig | None, tool: str, host: str, resolver: str, resolve: Resolve | None
) -> ProbeExpectation:
    """Decide ``getent hosts HOST`` or ``curl -s http://HOST/`` with the mock's egress gate decisions.

    DNS goes to ``resolver`` (:func:`~mockserver.tensorlake.model.egress.dns_decision`); curl connects to the
    first address of the name (or the literal) and
    :func:`~mockserver.tensorlake.model.egress.connect_decision` judges the name asked for and that address.
    ``resolve`` is the DNS the sandbox sees; None when unknown (only certain blocks are then predicted).
    """
    dns_ok = dns_decision(policy, resolver).allowed
    literal = is_ipv4(host)
    if tool == "getent" and not literal:
        if not dns_ok:
            return ProbeExpectation(2, True, ())
        if resolve is None:
            return ProbeExpectation(None, False)
        found = tuple(resolve(host))
        return ProbeExpectation(0 if found else 2, False, found)
    if literal:
        allowed = connect_decision(policy, None, host).allowed
        return ProbeExpectation(0 if allowed else 7, not allowed)
    if not dns_ok:
        return ProbeExpectation(6, True)
    if resolve is None:
        verdict = connect_decision(policy, host, None)
        return ProbeExpectation(None, not verdict.allowed and verdict.reason.startswith("deny_out"))
    found = tuple(resolve(host))
    if not found:
        return ProbeExpectation(6, False)
    allowed = connect_decision(policy, host, found[0]).allowed
    return ProbeExpectation(0 if allowed else 7, not allowed)


def system_resolve(name: str) -> list[str]:
    """Return the IPv4 addresses of ``name`` from the system resolver ([] when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})


def default_resolve() -> Resolve:
    """Return the resolver a target without the admin API is assumed to share with this host.

    The system resolver when it answers for ``example.com``; otherwise (no DNS here) a synthetic table in
    which every name but ``*.invalid`` resolves, which is what a public resolver says of the names drawn.
    """
    return system_resolve if system_resolve("example.com") else DnsTable().resolve
