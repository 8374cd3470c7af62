"""The egress gate of a TensorLake mock sandbox, backed by the reference policy in ``contracts.tensorlake``.

The gate reads the sandbox's policy at every call, so a PATCH takes effect for the next probe of a
running command (already "established" connections are not modelled). DNS goes to the resolver named
in the sandbox's ``/etc/resolv.conf`` and is judged by :func:`decide_dns`; connections are judged by
:func:`decide_egress` with the name the client asked for and the address it connects to.
"""

from __future__ import annotations

from contracts.tensorlake import Decision, NetworkConfig, decide_dns, decide_egress
from mockserver.core.dns import SANDBOX_RESOLVER, DnsTable
from mockserver.sandbox.filesystem import FsError
from mockserver.sandbox.network import Resolution

from .records import Sandbox

__all__ = ["DEFAULT_RESOLVER", "TensorLakeGate", "connect_decision", "dns_decision", "resolver_from"]

#: The resolver of a sandbox without a usable ``/etc/resolv.conf``: the one every sandbox's file names.
DEFAULT_RESOLVER = SANDBOX_RESOLVER


def resolver_from(resolv_conf: str | None) -> str:
    """Return the first ``nameserver`` of an ``/etc/resolv.conf`` text (None: no file), else the default."""
    for line in (resolv_conf or "").splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            return fields[1]
    return DEFAULT_RESOLVER


def dns_decision(policy: NetworkConfig | None, resolver: str) -> Decision:
    """Return whether a sandbox with ``policy`` may query ``resolver``."""
    return decide_dns(policy, resolver)


def connect_decision(policy: NetworkConfig | None, host: str | None, ip: str | None) -> Decision:
    """Return the policy's decision on connecting to ``ip`` after asking for ``host``; unusable ones are denied."""
    try:
        return decide_egress(policy, host=host, ip=ip)
    except ValueError as exc:
        return Decision(False, f"unusable destination: {exc}")


class TensorLakeGate:
    """Decide DNS lookups and connections of one sandbox from its current ``network`` policy."""

    def __init__(self, sandbox: Sandbox, dns: DnsTable) -> None:
        self.sandbox = sandbox
        self.dns = dns

    def resolver(self) -> str:
        """Return the first ``nameserver`` of the sandbox's ``/etc/resolv.conf``."""
        try:
            text = self.sandbox.fs.read("/etc/resolv.conf").decode(errors="replace")
        except FsError:
            return DEFAULT_RESOLVER
        return resolver_from(text)

    def dns_decision(self) -> Decision:
        """Return whether the sandbox may query its resolver now."""
        return dns_decision(self.sandbox.network, self.resolver())

    def resolve(self, name: str) -> Resolution:
        """Resolve ``name`` through the mock's DNS table if the policy lets DNS through."""
        if not self.dns_decision().allowed:
            return Resolution((), "dns_blocked")
        addresses = self.dns.resolve(name)
        return Resolution(tuple(addresses)) if addresses else Resolution((), "nxdomain")

    def decide(self, host: str | None, ip: str) -> Decision:
        """Return the policy's decision on connecting to ``ip`` after asking for ``host``."""
        return connect_decision(self.sandbox.network, host, ip)

    def connect(self, host: str | None, ip: str, port: int) -> bool:
        """Return whether a connection to ``ip:port`` (for ``host``) is allowed."""
        return self.decide(host, ip).allowed
