"""Deliberately wrong ``restrict_sandbox_network`` functions: each must fail a check of ``harness.policy.sandbox_network``.

Every mutant wraps the reference in ``contracts.sandbox_network`` and bends one behaviour, several of them the
way NeMo Gym 0.7.0's ``restricted_network_policy`` actually behaved (an explicit policy overwritten, a plain
``ValueError``). ``caught_by`` names the check aimed at it; ``choice`` (when set) says why only a choice check
can catch it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Sequence
from typing import ClassVar
from urllib.parse import urlsplit

from contracts import sandbox_network as sn
from contracts.sandbox_network import AgentSeedRejectedError, SandboxProvider, SandboxSpec


class Mutant:
    """``restrict_sandbox_network`` with one deliberate defect, described by ``defect``."""

    defect: ClassVar[str] = ""
    caught_by: ClassVar[str] = ""
    choice: ClassVar[str] = ""
    #: The boundary neighbour (of :mod:`harness.policy.boundaries`) the mutant gets wrong, if it is one.
    neighbour: ClassVar[str] = ""

    def __call__(
        self,
        spec: SandboxSpec,
        network_access: str,
        provider: SandboxProvider,
        model_base_url: str,
        tool_urls: Sequence[str] = (),
        required_tool_urls: Sequence[str] = (),
    ) -> SandboxSpec:
        """Behave like the reference."""
        return sn.restrict_sandbox_network(
            spec,
            network_access,  # type: ignore[arg-type]
            provider,
            model_base_url,
            tool_urls,
            required_tool_urls,
        )


class InheritRestricts(Mutant):
    """``inherit`` is treated as ``model_only``."""

    defect = "inherit restricts egress"
    caught_by = "inherit_unchanged"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Restrict even under inherit."""
        mode = "model_only" if network_access == "inherit" else network_access
        return super().__call__(spec, mode, provider, model_base_url, tool_urls, ())


class ModelOnlyGrantsTools(Mutant):
    """``model_only`` opens the tool hosts too."""

    defect = "model_only grants the tool hosts"
    caught_by = "model_only_limits_egress"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Treat model_only like model_and_tools."""
        if network_access == "model_only" and not required_tool_urls:
            network_access = "model_and_tools"
        return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)


class ToolsDropped(Mutant):
    """``model_and_tools`` forgets the tool hosts."""

    defect = "model_and_tools drops the tool hosts"
    caught_by = "model_and_tools_limits_egress"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Grant the model host only."""
        if network_access == "model_and_tools":
            return super().__call__(spec, "model_only", provider, model_base_url, (), ())
        return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)


class SpecFieldsDropped(Mutant):
    """The restricted spec keeps the policy but loses the rest (image, env, other provider options)."""

    defect = "the rest of the spec is dropped"
    caught_by = "model_only_limits_egress"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Return a fresh spec holding the policy only."""
        out = super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)
        if out is spec:
            return out
        option = getattr(provider, "network_policy_option", "network")
        return SandboxSpec(provider_options={option: out.provider_options[option]})


class ExplicitPolicyOverwritten(Mutant):
    """An explicit provider policy is silently replaced, as NeMo Gym 0.7.0 did."""

    defect = "an explicit provider policy is overwritten"
    caught_by = "enforcement_rejections"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Drop the explicit policy before restricting."""
        option = getattr(provider, "network_policy_option", None)
        if network_access != "inherit" and option in spec.provider_options:
            options = {k: v for k, v in spec.provider_options.items() if k != option}
            spec = dataclasses.replace(spec, provider_options=options)
        return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)


class PlainValueError(Mutant):
    """Refusals raise a plain ``ValueError``, as NeMo Gym 0.7.0 did, so the seed is retried instead of failing once."""

    defect = "refusals are plain ValueErrors"
    caught_by = "enforcement_rejections"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Re-raise every refusal as ValueError."""
        try:
            return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)
        except AgentSeedRejectedError as exc:
            raise ValueError(str(exc)) from None


class RequiredToolIgnored(Mutant):
    """``model_only`` ignores the required tools instead of refusing them."""

    defect = "a required tool under model_only is not refused"
    caught_by = "enforcement_rejections"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Drop the required tools under model_only."""
        if network_access == "model_only":
            required_tool_urls = ()
        return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)


class UnreachableFailsOpen(Mutant):
    """An endpoint the sandbox cannot reach leaves the spec unrestricted instead of refusing it."""

    defect = "an unreachable endpoint fails open"
    caught_by = "unreachable_endpoints_rejected"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Swallow the unreachable-endpoint refusal."""
        try:
            return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)
        except AgentSeedRejectedError as exc:
            if exc.reason == sn.UNREACHABLE_ENDPOINT:
                return spec
            raise


class PrivateAddressRejected(Mutant):
    """Private and link-local addresses are refused as unreachable."""

    defect = "private addresses refused"
    caught_by = "reachable_endpoints_accepted"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Refuse private and link-local hosts."""
        for url in (model_base_url, *tool_urls):
            try:
                address = ipaddress.ip_address(urlsplit(url).hostname or "")
            except ValueError:
                continue
            if address.is_private or address.is_link_local:
                raise AgentSeedRejectedError(sn.UNREACHABLE_ENDPOINT, f"{url} is private")
        return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)


class UnknownModeInherits(Mutant):
    """An unknown ``network_access`` value is treated as ``inherit``."""

    defect = "an unknown mode inherits"
    caught_by = "unknown_settings_rejected"
    choice = "the page types network_access as a Literal; what another value does is left to the implementation"

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Return the spec for any unknown mode."""
        if network_access not in sn.NETWORK_ACCESS_MODES:
            return spec
        return super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)


def _granted(network_access: str, model_base_url: str, tool_urls: Sequence[str]) -> list[str]:
    hosts = [urlsplit(model_base_url).hostname or ""]
    if network_access == "model_and_tools":
        hosts += [urlsplit(url).hostname or "" for url in tool_urls]
    return hosts


class _Widened(Mutant):
    """Restrict like the reference, then build the provider's policy for the granted hosts plus ``extra``."""

    def extra(self, host: str) -> list[str]:
        """Return the entries granted beside ``host``."""
        return []

    def __call__(self, spec, network_access, provider, model_base_url, tool_urls=(), required_tool_urls=()):  # type: ignore[no-untyped-def]
        """Grant the hosts and what :meth:`extra` adds for each name."""
        out = super().__call__(spec, network_access, provider, model_base_url, tool_urls, required_tool_urls)
        option = getattr(provider, "network_policy_option", None)
        if out is spec or option is None:
            return out
        hosts = _granted(network_access, model_base_url, tool_urls)
        names = [h.rstrip(".") for h in hosts if not _is_address(h)]
        widened = provider.network_policy([*hosts, *(e for n in names for e in self.extra(n))])  # type: ignore[attr-defined]
        return dataclasses.replace(out, provider_options={**out.provider_options, option: widened})


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class GrantsSubdomains(_Widened):
    """Each granted name is opened with every name below it (``*.model.example.com`` too)."""

    defect = "a granted host opens its subdomains"
    caught_by = "boundary_hosts"
    neighbour = "one label deeper"

    def extra(self, host: str) -> list[str]:
        """Add the wildcard below the host."""
        return ["*." + host]


class GrantsParentDomain(_Widened):
    """Each granted name opens its parent domain too (``example.com`` beside ``model.example.com``)."""

    defect = "a granted host opens its parent domain"
    caught_by = "boundary_hosts"
    neighbour = "parent domain"

    def extra(self, host: str) -> list[str]:
        """Add the parent domain."""
        return [host.split(".", 1)[1]] if host.count(".") > 1 else []


MUTANTS: tuple[Mutant, ...] = (
    InheritRestricts(),
    ModelOnlyGrantsTools(),
    ToolsDropped(),
    SpecFieldsDropped(),
    ExplicitPolicyOverwritten(),
    PlainValueError(),
    RequiredToolIgnored(),
    UnreachableFailsOpen(),
    PrivateAddressRejected(),
    UnknownModeInherits(),
    GrantsSubdomains(),
    GrantsParentDomain(),
)
