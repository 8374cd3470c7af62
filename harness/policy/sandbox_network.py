"""Checks of NeMo Gym's ``restrict_sandbox_network``, with a provider's policy engine judging the policies it builds.

The subject is a function with the seed's signature (``restrict_sandbox_network(spec, network_access, provider,
model_base_url, tool_urls=(), required_tool_urls=())``; by default the reference in
``contracts.sandbox_network``) and a provider's policy engine (TensorLake or OpenSandbox, speaking the JSON
protocol). The providers are the reference's: a TensorLake provider with and without pinned resolvers, the
OpenSandbox provider, and a plain provider without network policies.

The ``spec`` checks follow the NeMo Gym page: ``inherit`` leaves the spec alone; ``model_only`` and
``model_and_tools`` limit egress to the model server (and the tool servers), every port of each, which the
engine must confirm host by host; the four rejections raise ``AgentSeedRejectedError``, a ``ValueError``.
Which endpoints count as unreachable was measured on NeMo Gym 0.7.0 (``observed``); rejecting an unknown mode
and a required tool that is not granted are sandproof's choices. ``boundary_hosts`` enumerates, on every run, the
neighbours of a granted host (:mod:`harness.policy.boundaries`) and expects the reference function's policy,
judged by the reference engine, to be matched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hypothesis import strategies as st

from contracts import sandbox_network as reference
from contracts.opensandbox_adapter import reference_engine as opensandbox_reference
from contracts.sandbox_network import (
    OpenSandboxNetworkProvider,
    PlainSandboxProvider,
    SandboxSpec,
    TensorLakeNetworkProvider,
)
from contracts.tensorlake_adapter import reference_engine as tensorlake_reference
from harness.policy.boundaries import Probe, address_probes, name_probes
from harness.policy.tensorlake.runner import (
    CheckFailed,
    CheckResult,
    expect,
    run_examples,
    run_named,
    run_property,
)
from harness.strength import Contract, choice, observed, spec, tagged
from harness.strength.observations import published

__all__ = ["CHECKS", "CONTRACTS", "SUITE", "Restrict", "Subject", "run_checks"]

SUITE = "nemo-gym-network"
Restrict = Callable[..., SandboxSpec]
GYM_NOTES = "reference/nemo-gym.md §6.2 (restricted_network_policy of NeMo Gym 0.7.0, run on Python 3.13)"

HOSTS = ("model.example", "tools.example", "mcp.internal.io", "search.svc.io", "10.1.2.3", "192.168.1.5")
UNRELATED = ("unrelated.example.org", "203.0.113.99")
RESOLVER = "10.0.0.2"
SPEC = SandboxSpec(image="python:3.11", env={"A": "1"}, metadata={"run": "r1"}, provider_options={"platform": "x"})
UNREACHABLE = (
    "http://localhost:8000",
    "http://LOCALHOST.:8000/v1",
    "http://127.0.0.1:9000",
    "http://127.0.0.2",
    "http://[::1]:8000",
    "http://0.0.0.0:8000",
    "http://[::]",
    "http://[::ffff:127.0.0.1]:8000",
    "model.example:8000",
    "",
)
REACHABLE = (
    "http://10.1.2.3:9000",
    "http://192.168.1.5",
    "http://169.254.169.254/latest",
    "http://foo.localhost:8000",
    "https://Model.Example:443/v1?x=1#f",
    "http://user:pw@model.example:8000",
    "//model.example:8000",
    "http://model.example:99999",
)


@dataclass(frozen=True)
class Subject:
    """What the checks run: the restrict function under test and the engine judging its policies."""

    restrict: Restrict
    engine: Any

    def providers(self) -> list[Any]:
        """Return the reference providers whose policies this engine can judge."""
        if self.engine.kind == "tensorlake":
            return [TensorLakeNetworkProvider(), TensorLakeNetworkProvider(resolver_ips=(RESOLVER,))]
        return [OpenSandboxNetworkProvider()]

    def judges(self, hosts: Iterable[str]) -> bool:
        """Tell whether the engine's answer for every host is fixed by the documents.

        OpenSandbox documents FQDN and wildcard targets only ("IP/CIDR not yet supported"): whether an IP
        target is accepted is a choice, so the OpenSandbox engine judges host names only.
        """
        return self.engine.kind == "tensorlake" or not any(_is_ip(h) for h in hosts)

    def reaches(self, provider: Any, restricted: SandboxSpec, host: str) -> bool:
        """Tell whether the policy in ``restricted`` lets the sandbox reach ``host``, by the engine's judgment."""
        policy = restricted.provider_options.get(provider.network_policy_option)
        if self.engine.kind != "tensorlake":
            return bool(self.engine.allows_egress(policy, host))
        to_json = getattr(policy, "to_json", None)
        network = to_json() if callable(to_json) else policy
        is_ip = _is_ip(host)
        allowed = bool(self.engine.allows_egress(network, None if is_ip else host, host if is_ip else None))
        if allowed and not is_ip:  # a name is reachable only if DNS to the sandbox's resolver works
            allowed = bool(self.engine.allows_dns(network, RESOLVER))
        return allowed


def _url(host: str, port: int | None, path: str, https: bool) -> str:
    return f"{'https' if https else 'http'}://{host}{'' if port is None else f':{port}'}{path}"


_urls = st.builds(
    _url,
    st.sampled_from(HOSTS),
    st.sampled_from((None, 80, 443, 8000, 9000)),
    st.sampled_from(("", "/v1", "/mcp/sse")),
    st.booleans(),
)
Case = tuple[str, list[str]]
_cases: st.SearchStrategy[Case] = st.tuples(_urls, st.lists(_urls, max_size=3))


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def _is_ip(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def _rejection_problem(call: Callable[[], object]) -> str | None:
    """Return what is wrong unless ``call`` raises an ``AgentSeedRejectedError`` (a ``ValueError``, HTTP 422)."""
    try:
        call()
    except ValueError as exc:
        if type(exc).__name__ != "AgentSeedRejectedError":
            return f"raised {type(exc).__name__} ({exc}), not AgentSeedRejectedError"
        if getattr(exc, "status_code", 422) != 422:
            return f"AgentSeedRejectedError with status {exc.status_code}, not 422"  # type: ignore[attr-defined]
        return None
    except Exception as exc:
        return f"raised {type(exc).__name__} ({exc}), which is not a ValueError"
    return "the configuration was accepted"


def _limits(subject: Subject, case: Case, mode: str) -> None:
    model, tools = case
    if not subject.judges(_host(u) for u in (model, *tools)):
        return
    for provider in subject.providers():
        restricted = subject.restrict(SPEC, mode, provider, model, tools)
        granted = {_host(model)} | ({_host(t) for t in tools} if mode == "model_and_tools" else set())
        for host in sorted(granted):
            expect(subject.reaches(provider, restricted, host), f"{mode} via {provider.name}: {host} is unreachable")
        for host in sorted({*HOSTS, *UNRELATED} - granted):
            if subject.judges([host]):
                expect(not subject.reaches(provider, restricted, host), f"{mode} via {provider.name}: {host} got out")
        kept = dataclasses.replace(restricted, provider_options=SPEC.provider_options)
        expect(kept == SPEC, f"{mode} changed more of the spec than its network policy: {restricted!r}")
        others = {k: v for k, v in restricted.provider_options.items() if k != provider.network_policy_option}
        expect(others == dict(SPEC.provider_options), f"{mode} changed other provider options: {others!r}")


@tagged(SUITE, "model_only_limits_egress", spec("ng.limits-egress", "ng.every-port", "ng.model-only-refuses"))
def check_model_only(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """model_only: the model host is reachable (any port and path), no tool host or other host is, the rest of the spec stays."""
    body: Callable[[Subject, Case], None] = lambda s, c: _limits(s, c, "model_only")  # noqa: E731
    return run_property("model_only_limits_egress", _cases, body, subject, max_examples, derandomize, shrink)


@tagged(SUITE, "model_and_tools_limits_egress", spec("ng.limits-egress", "ng.every-port"))
def check_model_and_tools(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """model_and_tools: the model and every tool host are reachable, no other host is, the rest of the spec stays."""
    body: Callable[[Subject, Case], None] = lambda s, c: _limits(s, c, "model_and_tools")  # noqa: E731
    return run_property("model_and_tools_limits_egress", _cases, body, subject, max_examples, derandomize, shrink)


def _inherit(subject: Subject, case: Case) -> None:
    model, tools = case
    explicit = dataclasses.replace(SPEC, provider_options={**SPEC.provider_options, "network_policy": {"x": 1}})
    for provider in [*subject.providers(), PlainSandboxProvider()]:
        for spec_in in (SPEC, explicit):
            out = subject.restrict(spec_in, "inherit", provider, model, tools, tools[:1])
            expect(out == spec_in, f"inherit via {provider.name} changed the spec to {out!r}")


@tagged(SUITE, "inherit_unchanged", spec("ng.inherit", "ng.modes"))
def check_inherit(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """inherit returns the spec unchanged, for any provider, even one without network policies."""
    return run_property("inherit_unchanged", _cases, _inherit, subject, max_examples, derandomize, shrink)


def _rejections(subject: Subject, case: Case) -> None:
    model, tools = case
    for provider in subject.providers():
        option = provider.network_policy_option
        explicit = dataclasses.replace(SPEC, provider_options={**SPEC.provider_options, option: {"set": "by user"}})
        for mode in ("model_only", "model_and_tools"):
            problem = _rejection_problem(lambda: subject.restrict(explicit, mode, provider, model, tools))  # noqa: B023
            expect(problem is None, f"{mode} with an explicit {option} via {provider.name}: {problem}")
            plain = PlainSandboxProvider()
            problem = _rejection_problem(lambda: subject.restrict(SPEC, mode, plain, model, tools))  # noqa: B023
            expect(problem is None, f"{mode} via a provider without network policies: {problem}")
        required = tools[:1] or [model]
        problem = _rejection_problem(lambda: subject.restrict(SPEC, "model_only", provider, model, tools, required))  # noqa: B023
        expect(problem is None, f"model_only with required tool {required} via {provider.name}: {problem}")


@tagged(
    SUITE,
    "enforcement_rejections",
    spec(
        "ng.reject.explicit-policy",
        "ng.reject.no-policy-provider",
        "ng.reject.required-model-only",
        "ng.model-only-refuses",
        "ng.reject.error",
    ),
)
def check_rejections(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """An explicit provider policy, a provider without policies, a required tool under model_only: AgentSeedRejectedError."""
    return run_property("enforcement_rejections", _cases, _rejections, subject, max_examples, derandomize, shrink)


def _endpoints(subject: Subject, case: tuple[str, str, str]) -> None:
    bad, good, mode = case
    for provider in subject.providers():
        for model, tools in ((bad, []), (good, [bad])):
            if mode == "model_only" and model == good:
                continue  # model_only ignores the tool URLs
            problem = _rejection_problem(lambda: subject.restrict(SPEC, mode, provider, model, tools))  # noqa: B023
            expect(problem is None, f"{mode} via {provider.name} with endpoint {bad!r}: {problem}")


@tagged(
    SUITE,
    "unreachable_endpoints_rejected",
    observed(
        published(
            "nemo-gym==0.7.0",
            "nemo_gym/sandbox/agent_tools.py",
            'or target.lower().rstrip(".") == "localhost" or (address and (address.is_loopback or address.is_unspecified))',
        ),
        "no host, exactly localhost (any case, trailing dot), loopback and unspecified addresses, IPv4-mapped "
        "loopback included, raise; they name no host the sandbox can reach",
        note=GYM_NOTES,
        sentences=("ng.reject.unreachable", "ng.reject.error"),
    ),
)
def check_unreachable(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """An endpoint the sandbox cannot reach (localhost, loopback, unspecified, no host) raises AgentSeedRejectedError."""
    cases = st.tuples(
        st.sampled_from(UNREACHABLE), st.sampled_from(("http://model.example:8000",)), st.sampled_from(_MODES)
    )
    return run_property("unreachable_endpoints_rejected", cases, _endpoints, subject, max_examples, derandomize, shrink)


_MODES = ("model_only", "model_and_tools")


def _reachable(subject: Subject, case: tuple[str, str]) -> None:
    url, mode = case
    host = _host(url).lower()
    for provider in subject.providers():
        try:
            restricted = subject.restrict(SPEC, mode, provider, url)
        except ValueError as exc:
            raise CheckFailed(f"{mode} via {provider.name}: the reachable endpoint {url!r} was refused: {exc}") from exc
        if subject.judges([host]):
            reached = subject.reaches(provider, restricted, host)
            expect(reached, f"{mode} via {provider.name}: {url} gives no way to {host}")


@tagged(
    SUITE,
    "reachable_endpoints_accepted",
    observed(
        published("nemo-gym==0.7.0", "nemo_gym/sandbox/agent_tools.py", "targets.add(_reachable_host(url))"),
        "private and link-local addresses, *.localhost names, userinfo, any port (never validated) and "
        "scheme-relative //host URLs are accepted; the host is lowercased, the port and path dropped",
        note=GYM_NOTES,
        sentences=("ng.reject.unreachable", "ng.every-port"),
    ),
)
def check_reachable(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Private and link-local addresses, *.localhost names and any port are sandbox-reachable and get through."""
    cases = st.tuples(st.sampled_from(REACHABLE), st.sampled_from(_MODES))
    return run_property("reachable_endpoints_accepted", cases, _reachable, subject, max_examples, derandomize, shrink)


def _choices(subject: Subject, case: Case) -> None:
    model, tools = case
    for provider in subject.providers():
        problem = _rejection_problem(lambda: subject.restrict(SPEC, "everything", provider, model, tools))  # noqa: B023
        expect(problem is None, f"network_access='everything' via {provider.name}: {problem}")
        stranger = "http://not-granted.example:7000"
        call = lambda: subject.restrict(SPEC, "model_and_tools", provider, model, tools, [stranger])  # noqa: B023, E731
        problem = _rejection_problem(call)
        expect(problem is None, f"a required tool that is not granted, via {provider.name}: {problem}")


@tagged(
    SUITE,
    "unknown_settings_rejected",
    choice(
        "the page types network_access as a Literal and calls required tools a subset of the grants; sandproof "
        "rejects another mode, and a required tool that is not granted, with AgentSeedRejectedError",
        sentences=("ng.modes",),
    ),
)
def check_unknown_settings(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """An unknown network_access mode and a required tool missing from the grants raise AgentSeedRejectedError."""
    return run_property("unknown_settings_rejected", _cases, _choices, subject, max_examples, derandomize, shrink)


#: Model URLs whose host's neighbours the boundary check probes: a name with a port, in capitals, with a trailing
#: dot, a name one label below another, and an address.
BOUNDARY_URLS = (
    "http://model.example.com:8000/v1",
    "https://API.Model.Example.com/v1",
    "http://model.example.com.:8000",
    "http://api.model.example.com",
    "http://10.1.2.3:9000",
)


def _reference_subject(subject: Subject) -> Subject:
    """Return the reference function judged by the reference engine of the subject's provider."""
    kind = subject.engine.kind
    return Subject(
        reference.restrict_sandbox_network, tensorlake_reference if kind == "tensorlake" else opensandbox_reference
    )


def _host_probes(host: str) -> list[Probe]:
    """Return the documented neighbours of a granted host (its parent domain too for a name)."""
    if _is_ip(host):
        return address_probes(host)
    base = host.rstrip(".")
    parent = base.split(".", 1)[1] if base.count(".") > 1 else None
    return name_probes(base) + ([Probe("parent domain", parent)] if parent else [])


def _boundary_hosts(subject: Subject) -> None:
    expected = _reference_subject(subject)
    for url in BOUNDARY_URLS:
        host = _host(url)
        for provider in subject.providers():
            want = reference.restrict_sandbox_network(SPEC, "model_only", provider, url)
            got = subject.restrict(SPEC, "model_only", provider, url)
            for probe in _host_probes(host):
                where = probe.destination
                if not subject.judges([where]):
                    continue
                mine, theirs = subject.reaches(provider, got, where), expected.reaches(provider, want, where)
                if mine != theirs:
                    state = "reachable" if mine else "blocked"
                    raise CheckFailed(
                        f"{probe.neighbour}: model_only for {url} via {provider.name}: {where} is {state}, the "
                        f"reference {'reachable' if theirs else 'blocked'} [{got.provider_options!r}]"
                    )


@tagged(SUITE, "boundary_hosts", spec("ng.limits-egress", "ng.every-port"))
def check_boundary_hosts(
    subject: Subject, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """The granted model host's neighbours (apex, deeper names, the suffix without the dot, ±1 addresses) decide as the reference's policy does."""
    return run_examples("boundary_hosts", subject, _boundary_hosts)


_ORDERED = (
    check_inherit,
    check_model_only,
    check_model_and_tools,
    check_rejections,
    check_unreachable,
    check_reachable,
    check_unknown_settings,
    check_boundary_hosts,
)
CHECKS: dict[str, Callable[..., CheckResult]] = {getattr(c, "contract").name: c for c in _ORDERED}  # noqa: B009
CONTRACTS: dict[str, Contract] = {name: getattr(c, "contract") for name, c in CHECKS.items()}  # noqa: B009


def run_checks(
    engine: Any,
    *,
    restrict: Restrict = reference.restrict_sandbox_network,
    max_examples: int = 60,
    derandomize: bool = True,
    only: Iterable[str] | None = None,
    fail_fast: bool = False,
    strict: bool = False,
    shrink: bool = True,
) -> list[CheckResult]:
    """Run the checks (all, or ``only``) on ``restrict`` with ``engine`` judging its policies; one result each."""
    subject = Subject(restrict, engine)
    return run_named(
        CHECKS, subject, only, fail_fast=fail_fast, strict=strict,
        max_examples=max_examples, derandomize=derandomize, shrink=shrink,
    )  # fmt: skip
