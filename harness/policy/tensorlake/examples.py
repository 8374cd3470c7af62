"""Fixed-example checks for TensorLake egress engines: the networking docs' table and examples, and sandproof's choices.

Each check is tagged with its contract (:func:`harness.strength.tagged`): the table, the docs' examples, the
PATCH tri-state and the rejected forms are ``spec``; the spellings the docs say nothing about (letter case,
trailing dots, IDNA, host bits, unknown keys), the CIDR-covered resolver and the stored form are ``choice``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.behaviour import behaviour_difference
from harness.policy.tensorlake.runner import CheckFailed, CheckResult, raises, run_examples
from harness.policy.tensorlake.strategies import Network, resolve_all, resolve_none
from harness.strength import choice, spec, tagged

__all__ = [
    "check_choice_examples",
    "check_dns_table",
    "check_docs_examples",
    "check_invalid_examples",
    "check_tristate_examples",
]

SUITE = "tensorlake-policy"


class _ExampleFailed(CheckFailed):
    def __init__(self, example: str, message: str) -> None:
        super().__init__(f"{message} [{example}]")
        self.example = example


def _egress(engine: TensorLakeEngine, network: Network | None, host: str | None, ip: str | None, want: bool) -> None:
    got = engine.allows_egress(network, host, ip)
    if got is not want:
        example = f"network={network!r} host={host!r} ip={ip!r}"
        raise _ExampleFailed(example, f"allows_egress returned {got}, expected {want}")


def _dns(engine: TensorLakeEngine, network: Network | None, resolver: str, want: bool) -> None:
    got = engine.allows_dns(network, resolver)
    if got is not want:
        raise _ExampleFailed(
            f"network={network!r} resolver={resolver!r}", f"allows_dns returned {got}, expected {want}"
        )


def _rejects(engine: TensorLakeEngine, network: object) -> None:
    if not raises(lambda: engine.validate(network)):  # type: ignore[arg-type]
        raise _ExampleFailed(f"network={network!r}", "validate accepted an invalid policy")


_WEB = "93.184.215.14"


def _dns_table(e: TensorLakeEngine) -> None:
    rows: Sequence[Network] = (
        {"allow_internet_access": True, "allow_out": [], "deny_out": []},
        {"allow_internet_access": True, "allow_out": ["api.example.com", "10.0.0.0/8"]},
        {"allow_internet_access": False, "allow_out": ["api.example.com", "10.0.0.0/8"]},
        {"allow_internet_access": False, "allow_out": [], "deny_out": []},
    )
    open_row, allow_true, allow_false, closed = rows
    _egress(e, open_row, "example.com", _WEB, True)
    _egress(e, open_row, None, "8.8.8.8", True)
    _dns(e, open_row, "8.8.8.8", True)
    _egress(e, {"deny_out": ["example.com"]}, "example.com", _WEB, False)
    _egress(e, {"deny_out": ["example.com"]}, "example.org", _WEB, True)
    for row in (allow_true, allow_false):
        _egress(e, row, "api.example.com", _WEB, True)
        _egress(e, row, None, "10.1.2.3", True)
        _egress(e, row, "other.org", _WEB, False)
        _egress(e, row, None, "8.8.8.8", False)
        _egress(e, row, "example.com", _WEB, False)
    _dns(e, allow_true, "8.8.8.8", True)
    _dns(e, allow_false, "8.8.8.8", False)
    listed = {"allow_internet_access": False, "allow_out": ["api.example.com", "8.8.8.8"]}
    _dns(e, listed, "8.8.8.8", True)
    _dns(e, listed, "1.1.1.1", False)
    for row in (closed, {"allow_internet_access": False}, {"allow_internet_access": False, "deny_out": ["x.org"]}):
        _egress(e, row, "example.com", _WEB, False)
        _egress(e, row, None, "10.1.2.3", False)
        _dns(e, row, "8.8.8.8", False)
        _dns(e, row, "10.0.0.2", False)


@tagged(
    SUITE,
    "dns_table",
    spec(
        "tl.dns.row-1",
        "tl.dns.row-2",
        "tl.dns.row-3",
        "tl.dns.row-4",
        "tl.table.allow-internet-access",
        "tl.egress.false-empty",
        "tl.egress.false-nonempty",
        "tl.egress.verified-no-internet",
    ),
)
def check_dns_table(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """The docs' four-row allow_internet_access x allow_out table, DNS column included, on fixed examples."""
    return run_examples("dns_table", engine, _dns_table)


def _docs_examples(e: TensorLakeEngine) -> None:
    wild = {"allow_out": ["*.example.com"]}
    _egress(e, wild, "api.example.com", None, True)
    _egress(e, wild, "v1.api.example.com", None, True)
    _egress(e, wild, "example.com", None, False)
    _egress(e, {"allow_out": ["*.example.com", "example.com"]}, "example.com", None, True)
    docs = {"allow_internet_access": True, "allow_out": ["example.com", "*.example.com", "203.0.113.10", "10.0.0.0/8"]}
    _egress(e, docs, "example.com", _WEB, True)
    _egress(e, docs, "api.example.com", _WEB, True)
    _egress(e, docs, None, "203.0.113.10", True)
    _egress(e, docs, None, "203.0.113.11", False)
    _egress(e, docs, None, "10.255.255.255", True)
    _egress(e, docs, None, "11.0.0.0", False)
    _egress(e, docs, None, "9.255.255.255", False)
    _egress(e, docs, "example.org", _WEB, False)
    _dns(e, docs, "8.8.8.8", True)
    deny = {"deny_out": ["example.com"]}
    _egress(e, deny, "example.com", _WEB, False)
    _egress(e, deny, "api.openai.com", "162.159.140.245", True)
    _egress(e, {"allow_out": ["example.com"], "deny_out": ["example.com"]}, "example.com", _WEB, False)
    _egress(e, None, "example.com", _WEB, True)
    _dns(e, None, "8.8.8.8", True)
    for internet in (True, False):
        resolver_denied = {"allow_internet_access": internet, "allow_out": ["10.0.0.2"], "deny_out": ["10.0.0.2"]}
        _dns(e, resolver_denied, "10.0.0.2", False)
    _dns(e, {"deny_out": ["10.0.0.0/24"]}, "10.0.0.2", False)


@tagged(
    SUITE,
    "docs_examples",
    spec(
        "tl.allow.wildcard-apex",
        "tl.allow.add-apex",
        "tl.allow.example",
        "tl.allow.kinds",
        "tl.deny.verified",
        "tl.allow.deny-precedence",
        "tl.egress.default-on",
        "tl-sdk.resolver-deny",
    ),
)
def check_docs_examples(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """The docs' examples: wildcard and apex, the allow_out example, deny over allow, no policy, a denied resolver."""
    return run_examples("docs_examples", engine, _docs_examples)


_CURRENT = {"allow_internet_access": True, "allow_out": ["api.example.com"], "deny_out": []}
_FULL = {"allow_internet_access": True, "allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}
_NO_NAMES = {"allow_internet_access": True, "allow_out": ["*.example.com", "10.0.0.0/8"], "deny_out": []}
#: (current policy, PATCH body, resolver, the policy the reference stores)
_PATCHES: Sequence[tuple[Network | None, Network, Callable[[str], list[str]], Network | None]] = (
    (_CURRENT, {"name": "renamed"}, resolve_all, _CURRENT),
    (_CURRENT, {"exposed_ports": [8080]}, resolve_all, _CURRENT),
    (_CURRENT, {"network": None}, resolve_all, None),
    ({**_FULL, "allow_internet_access": False}, {"network": {}}, resolve_all, {**_NO_NAMES, "allow_out": []}),
    (
        None,
        {"network": {"allow_internet_access": False}},
        resolve_all,
        {**_NO_NAMES, "allow_internet_access": False, "allow_out": []},
    ),
    (_CURRENT, {"network": {"allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}}, resolve_all, _FULL),
)


def _tristate_examples(e: TensorLakeEngine) -> None:
    for before, body, resolve, after in _PATCHES:
        got = e.apply_update(before, body, resolve)
        problem = behaviour_difference(e, got, after)
        if problem is not None:
            raise _ExampleFailed(f"current={before!r} body={body!r}", f"apply_update returned {got!r}: {problem}")
    if not raises(lambda: e.apply_update(_CURRENT, {"network": {"allow_out": ["nx.invalid"]}}, resolve_none)):
        raise _ExampleFailed("allow_out=['nx.invalid'] with a failing resolver", "the update was not rejected")


@tagged(
    SUITE,
    "tristate_examples",
    spec("tl.update.omit", "tl.update.replace", "tl.update.clear", "tl.table.allow-out", "tl.update.unresolvable"),
)
def check_tristate_examples(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """The PATCH tri-state on fixed examples, judged by what the stored policy decides; an unresolvable name rejects."""
    return run_examples("tristate_examples", engine, _tristate_examples)


_INVALID = (
    {"allow_out": ["2001:db8::1"]},
    {"allow_out": ["10.0.0.0/33"]},
    {"allow_out": ["999.1.1.1"]},
    {"allow_out": ["api.*.example.com"]},
    {"allow_out": ["*"]},
    {"allow_out": [7]},
    {"deny_out": ["*.example.com"]},
    {"allow_out": "example.com"},
    {"allow_internet_access": "false"},
)


def _invalid_examples(e: TensorLakeEngine) -> None:
    for bad in _INVALID:
        _rejects(e, bad)


@tagged(
    SUITE,
    "invalid_examples",
    spec("tl.allow.kinds", "tl.allow.wildcards-allow-only", "tl.table.allow-internet-access", "tl.table.allow-out"),
)
def check_invalid_examples(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Policies outside the documented forms are rejected: IPv6, bad IPv4/CIDR, inner wildcards, deny wildcards, types."""
    return run_examples("invalid_examples", engine, _invalid_examples)


def _choice_examples(e: TensorLakeEngine) -> None:
    for bad in ({"allow_out": ["10.0.0.1/8"]}, {"allow_out": [""]}, {"allow_out": ["example.com"], "deny": []}):
        _rejects(e, bad)
    _egress(e, {"allow_out": ["Example.COM."]}, "EXAMPLE.com", None, True)
    _egress(e, {"allow_out": ["*.Example.com"]}, "Api.EXAMPLE.com", None, True)
    _egress(e, {"allow_out": ["bücher.example"]}, "xn--bcher-kva.example", None, True)
    _egress(e, {"allow_out": ["xn--bcher-kva.example"]}, "BÜCHER.example", None, True)
    _dns(e, {"allow_internet_access": False, "allow_out": ["10.0.0.0/8"]}, "10.0.0.2", True)
    _dns(e, {"allow_internet_access": False, "allow_out": ["10.0.0.0/8"], "deny_out": ["10.0.0.2"]}, "10.0.0.3", True)
    for before, body, resolve, after in _PATCHES:
        got = e.apply_update(before, body, resolve)
        if got != after:
            raise _ExampleFailed(f"current={before!r} body={body!r}", f"stored {got!r}, sandproof stores {after!r}")
    wildcards = {"network": {"allow_out": ["*.example.com", "10.0.0.0/8"]}}
    got = e.apply_update(None, wildcards, resolve_none)
    if got != _NO_NAMES:
        raise _ExampleFailed("wildcards only, a resolver that resolves nothing", f"stored {got!r}")


@tagged(
    SUITE,
    "choice_examples",
    choice(
        "the docs are silent on host bits, empty entries, unknown keys, letter case, trailing dots, IDNA, "
        "CIDR-covered resolvers, the stored form and resolving wildcards; these examples pin sandproof's answers"
    ),
)
def check_choice_examples(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """sandproof's answers where the docs are silent, on fixed examples: spellings, stored form, wildcard resolving."""
    return run_examples("choice_examples", engine, _choice_examples)
