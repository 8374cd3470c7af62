"""Fixed-example checks for TensorLake egress engines: the networking docs' table and examples."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.runner import CheckFailed, CheckResult, raises, run_examples
from harness.policy.tensorlake.strategies import Network, resolve_all, resolve_none

__all__ = ["check_seed_examples", "check_seed_table"]


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


_WEB = "93.184.215.14"


def _seed_table(e: TensorLakeEngine) -> None:
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
    for row in (allow_true, allow_false):
        _egress(e, row, "api.example.com", _WEB, True)
        _egress(e, row, None, "10.1.2.3", True)
        _egress(e, row, "other.org", _WEB, False)
        _egress(e, row, None, "8.8.8.8", False)
        _egress(e, row, "example.com", _WEB, False)
    _dns(e, allow_true, "8.8.8.8", True)
    _dns(e, allow_false, "8.8.8.8", False)
    _dns(e, allow_false, "10.0.0.2", True)
    listed = {"allow_internet_access": False, "allow_out": ["api.example.com", "8.8.8.8"]}
    _dns(e, listed, "8.8.8.8", True)
    _dns(e, listed, "1.1.1.1", False)
    for row in (closed, {"allow_internet_access": False}, {"allow_internet_access": False, "deny_out": ["x.org"]}):
        _egress(e, row, "example.com", _WEB, False)
        _egress(e, row, None, "10.1.2.3", False)
        _dns(e, row, "8.8.8.8", False)
        _dns(e, row, "10.0.0.2", False)


_INVALID = (
    {"allow_out": ["2001:db8::1"]},
    {"allow_out": ["10.0.0.0/33"]},
    {"allow_out": ["10.0.0.1/8"]},
    {"allow_out": ["999.1.1.1"]},
    {"allow_out": ["api.*.example.com"]},
    {"allow_out": ["*"]},
    {"allow_out": [""]},
    {"allow_out": [7]},
    {"deny_out": ["*.example.com"]},
    {"allow_out": ["example.com"], "deny": []},
    {"allow_out": "example.com"},
    {"allow_internet_access": "false"},
)


def _seed_examples(e: TensorLakeEngine) -> None:
    for bad in _INVALID:
        if not raises(lambda bad=bad: e.validate(bad)):  # type: ignore[misc]
            raise _ExampleFailed(f"network={bad!r}", "validate accepted an invalid policy")
    _egress(e, {"allow_out": ["Example.COM."]}, "EXAMPLE.com", None, True)
    _egress(e, {"allow_out": ["*.Example.com"]}, "Api.EXAMPLE.com", None, True)
    _egress(e, {"allow_out": ["bücher.example"]}, "xn--bcher-kva.example", None, True)
    _egress(e, {"allow_out": ["xn--bcher-kva.example"]}, "BÜCHER.example", None, True)
    wild = {"allow_out": ["*.example.com"]}
    _egress(e, wild, "api.example.com", None, True)
    _egress(e, wild, "v1.api.example.com", None, True)
    _egress(e, wild, "example.com", None, False)
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
    resolver_denied = {"allow_internet_access": False, "allow_out": ["10.0.0.0/8"], "deny_out": ["10.0.0.2"]}
    _dns(e, resolver_denied, "10.0.0.2", False)
    _dns(e, resolver_denied, "10.0.0.3", True)
    current = {"allow_internet_access": True, "allow_out": ["api.example.com"], "deny_out": []}
    full = {"allow_internet_access": True, "allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}
    no_names = {"allow_internet_access": True, "allow_out": ["*.example.com", "10.0.0.0/8"], "deny_out": []}
    patches: Sequence[tuple[Network | None, Network, Callable[[str], list[str]], Network | None]] = (
        (current, {"name": "renamed"}, resolve_all, current),
        (current, {"network": None}, resolve_all, None),
        ({**full, "allow_internet_access": False}, {"network": {}}, resolve_all, {**no_names, "allow_out": []}),
        (
            None,
            {"network": {"allow_internet_access": False}},
            resolve_all,
            {**no_names, "allow_internet_access": False, "allow_out": []},
        ),
        (current, {"network": {"allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}}, resolve_all, full),
        (None, {"network": {"allow_out": ["*.example.com", "10.0.0.0/8"]}}, resolve_none, no_names),
    )
    for before, body, resolve, after in patches:
        got = e.apply_update(before, body, resolve)
        if got != after:
            raise _ExampleFailed(
                f"current={before!r} body={body!r}", f"apply_update returned {got!r}, expected {after!r}"
            )
    if not raises(lambda: e.apply_update(current, {"network": {"allow_out": ["nx.invalid"]}}, resolve_none)):
        raise _ExampleFailed("allow_out=['nx.invalid'] with a failing resolver", "the update was not rejected")


def check_seed_table(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check the docs' four-row allow_internet_access x allow_out table, DNS column included."""
    return run_examples("seed_table", engine, _seed_table)


def check_seed_examples(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Check the docs' examples: wildcard and apex, deny over allow, no policy, the PATCH tri-state."""
    return run_examples("seed_examples", engine, _seed_examples)
