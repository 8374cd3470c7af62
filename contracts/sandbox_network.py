"""Egress restriction for a sandbox an agent creates for its own session: ``restrict_sandbox_network``.

Follows NeMo Gym's documented ``nemo_gym.agents.utils.sandbox_network`` (``harness/specs/seeds/nemo-gym-sandbox-network.md``),
without importing NeMo Gym. Decision table, checked in this order (codes are ``AgentSeedRejectedError.reason``):

1. ``inherit``: ``spec`` is returned unchanged (the same object); nothing else is looked at.
2. An unknown mode: rejected, ``unknown_network_access``.
3. A provider without network policies: rejected, ``provider_without_network_policy``.
4. The spec already carries the provider's policy option (any value but None): rejected,
   ``explicit_provider_policy``; an explicit policy is never overwritten.
5. ``model_only`` with required tool grants: rejected, ``required_tool_under_model_only``.
6. The model URL, or under ``model_and_tools`` a tool or required tool URL, is unreachable from the sandbox:
   rejected, ``unreachable_endpoint`` (see ``sandbox_reachable_host``).
7. ``model_and_tools`` with a required tool whose host is not granted: rejected, ``required_tool_not_granted``.
8. A host the provider cannot express (e.g. IPv6 on TensorLake): rejected, ``unenforceable_host``.
9. Otherwise ``model_only`` allows the model host alone and ``model_and_tools`` the model host and every
   tool host (*chosen:* with no tool URLs that is the model host alone, not an error).

Each allowed host is opened on every port and path. Hosts come from ``urlsplit(url).hostname``: lowercased,
brackets, userinfo, port, path, query and fragment dropped, a trailing dot kept, no DNS lookup. Tool URLs are
ignored under ``model_only`` (tools are blocked there), so they are not checked for reachability either.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable
from urllib.parse import urlsplit

from contracts.opensandbox import NetworkPolicy
from contracts.tensorlake import NetworkConfig

SandboxNetworkAccess = Literal["inherit", "model_only", "model_and_tools"]
NETWORK_ACCESS_MODES: tuple[str, ...] = get_args(SandboxNetworkAccess)

UNKNOWN_NETWORK_ACCESS = "unknown_network_access"
PROVIDER_WITHOUT_NETWORK_POLICY = "provider_without_network_policy"
EXPLICIT_PROVIDER_POLICY = "explicit_provider_policy"
REQUIRED_TOOL_UNDER_MODEL_ONLY = "required_tool_under_model_only"
UNREACHABLE_ENDPOINT = "unreachable_endpoint"
REQUIRED_TOOL_NOT_GRANTED = "required_tool_not_granted"
UNENFORCEABLE_HOST = "unenforceable_host"

__all__ = [
    "NETWORK_ACCESS_MODES",
    "AgentSeedRejectedError",
    "OpenSandboxNetworkProvider",
    "PlainSandboxProvider",
    "SandboxNetworkAccess",
    "SandboxProvider",
    "SandboxSpec",
    "SupportsNetworkPolicy",
    "TensorLakeNetworkProvider",
    "restrict_sandbox_network",
    "sandbox_reachable_host",
]


class AgentSeedRejectedError(ValueError):
    """A seed whose sandbox configuration cannot be enforced: fail once with HTTP 422, never retry."""

    status_code = 422

    def __init__(self, reason: str, message: str) -> None:
        """Store the stable reason code and the message."""
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SandboxSpec:
    """The provider-neutral sandbox request; network restriction travels in ``provider_options``."""

    image: str | None = None
    ttl_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    ports: tuple[int, ...] = ()


class SandboxProvider(Protocol):
    """Any sandbox provider: only its name matters here."""

    name: str


@runtime_checkable
class SupportsNetworkPolicy(Protocol):
    """A provider that can enforce an egress allow-list fixed at sandbox creation."""

    name: str
    network_policy_option: str

    def network_policy(self, hosts: Sequence[str]) -> object:
        """Return the provider policy allowing exactly ``hosts``; raise ValueError if it cannot."""
        ...


class PlainSandboxProvider:
    """A provider without network policies (e.g. plain Docker)."""

    def __init__(self, name: str = "docker") -> None:
        """Name the provider."""
        self.name = name


class OpenSandboxNetworkProvider:
    """OpenSandbox: the policy is ``provider_options["network_policy"]``, sent as ``networkPolicy``."""

    name = "opensandbox"
    network_policy_option = "network_policy"

    def network_policy(self, hosts: Sequence[str]) -> dict[str, Any]:
        """Return a deny-by-default policy allowing each host, deduplicated and sorted."""
        targets = sorted(set(hosts))
        policy = {"defaultAction": "deny", "egress": [{"action": "allow", "target": t} for t in targets]}
        NetworkPolicy.from_json(policy)
        return policy


class TensorLakeNetworkProvider:
    """TensorLake: the policy is a ``NetworkConfig`` in ``provider_options["network"]``.

    ``allow_out`` holds the hosts (trailing dots dropped), ``deny_out`` is empty. DNS stays allowed:

    * ``resolver_ips=None`` (default): ``allow_internet_access=True``. With a non-empty ``allow_out`` that is
      default-deny plus DNS to the sandbox's own resolvers (row 2 of TensorLake's table). This is narrower
      than listing a resolver in ``allow_out``, which would open every port of that address.
    * ``resolver_ips=("10.0.0.2", ...)``: ``allow_internet_access=False`` and the resolvers appended to
      ``allow_out`` (row 3), pinning DNS to those addresses.
    * ``resolver_ips=()``: ``allow_internet_access=False`` with no resolver, so DNS is blocked; only IPv4
      hosts can then be reached, and a host name is rejected as unenforceable.

    ``allow_out`` takes IPv4 only, so an IPv6 host is rejected as unenforceable.
    """

    name = "tensorlake"
    network_policy_option = "network"

    def __init__(self, resolver_ips: Sequence[str] | None = None) -> None:
        """Choose how DNS stays reachable; resolver addresses must be IPv4."""
        if resolver_ips is not None:
            for address in resolver_ips:
                if not isinstance(ipaddress.ip_address(address), ipaddress.IPv4Address):
                    raise ValueError(f"resolver {address!r} is not an IPv4 address")
        self.resolver_ips = None if resolver_ips is None else tuple(resolver_ips)

    def network_policy(self, hosts: Sequence[str]) -> NetworkConfig:
        """Return a default-deny ``NetworkConfig`` allowing each host and DNS as configured."""
        names = sorted({host[:-1] if host.endswith(".") else host for host in hosts})
        if not names:
            raise ValueError("an empty allow_out would leave egress open")
        if self.resolver_ips is None:
            return NetworkConfig(allow_internet_access=True, allow_out=tuple(names))
        if not self.resolver_ips:
            unresolvable = [name for name in names if not _is_ip(name)]
            if unresolvable:
                raise ValueError(f"DNS is blocked (no resolver), so {unresolvable} cannot be resolved")
        allow_out = tuple(dict.fromkeys((*names, *self.resolver_ips)))
        return NetworkConfig(allow_internet_access=False, allow_out=allow_out)


def _is_ip(text: str) -> bool:
    """Tell whether ``text`` is an IP literal."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def sandbox_reachable_host(url: str) -> str:
    """Return the host of ``url``, or raise AgentSeedRejectedError when the sandbox cannot reach it.

    Rejected: no host (``model.example:8000``, ``""``), exactly ``localhost`` (any case, trailing dot),
    loopback and unspecified addresses, including IPv4-mapped IPv6 forms (``::ffff:127.0.0.1``). Accepted:
    private and link-local addresses, ``*.localhost`` names, scheme-relative ``//host`` URLs and any port.
    """
    if not isinstance(url, str):
        raise AgentSeedRejectedError(UNREACHABLE_ENDPOINT, f"endpoint URL must be a string, got {url!r}")
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:
        raise AgentSeedRejectedError(UNREACHABLE_ENDPOINT, f"endpoint {url!r} is not a valid URL: {exc}") from None
    if not host:
        raise AgentSeedRejectedError(
            UNREACHABLE_ENDPOINT, f"endpoint {url!r} has no host; give a scheme and a sandbox-reachable host"
        )
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if host.rstrip(".") == "localhost" or (address is not None and (address.is_loopback or address.is_unspecified)):
        raise AgentSeedRejectedError(
            UNREACHABLE_ENDPOINT,
            f"endpoint {url!r} is local to the host and unreachable from the sandbox; advertise a "
            "sandbox-reachable address (e.g. use_absolute_ip=true)",
        )
    return host


def restrict_sandbox_network(
    spec: SandboxSpec,
    network_access: SandboxNetworkAccess,
    provider: SandboxProvider,
    model_base_url: str,
    tool_urls: Sequence[str] = (),
    required_tool_urls: Sequence[str] = (),
) -> SandboxSpec:
    """Return ``spec`` with egress limited to the model server and, for ``model_and_tools``, the tools."""
    if network_access not in NETWORK_ACCESS_MODES:
        raise AgentSeedRejectedError(
            UNKNOWN_NETWORK_ACCESS, f"network_access {network_access!r} is not one of {NETWORK_ACCESS_MODES}"
        )
    if network_access == "inherit":
        return spec
    if not isinstance(provider, SupportsNetworkPolicy):
        raise AgentSeedRejectedError(
            PROVIDER_WITHOUT_NETWORK_POLICY,
            f"network_access={network_access!r} needs a provider with network policies; {provider.name!r} has none",
        )
    option = provider.network_policy_option
    if spec.provider_options.get(option) is not None:
        raise AgentSeedRejectedError(
            EXPLICIT_PROVIDER_POLICY,
            f"the spec already sets provider_options[{option!r}]; it cannot be combined with "
            f"network_access={network_access!r}",
        )
    if network_access == "model_only" and required_tool_urls:
        raise AgentSeedRejectedError(
            REQUIRED_TOOL_UNDER_MODEL_ONLY,
            f"model_only blocks every tool host, but the episode requires {list(required_tool_urls)}",
        )
    hosts = [sandbox_reachable_host(model_base_url)]
    if network_access == "model_and_tools":
        hosts += [sandbox_reachable_host(url) for url in tool_urls]
        for url in required_tool_urls:
            if sandbox_reachable_host(url) not in hosts:
                raise AgentSeedRejectedError(
                    REQUIRED_TOOL_NOT_GRANTED, f"required tool {url!r} is not among the granted tool hosts"
                )
    try:
        policy = provider.network_policy(hosts)
    except ValueError as exc:
        raise AgentSeedRejectedError(
            UNENFORCEABLE_HOST, f"provider {provider.name!r} cannot enforce egress to {hosts}: {exc}"
        ) from exc
    return dataclasses.replace(spec, provider_options={**spec.provider_options, option: policy})
