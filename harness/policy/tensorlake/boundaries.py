"""TensorLake boundary checks: every entry form against its documented neighbours, deterministically, each run.

Each entry (an exact name, a ``*.`` wildcard, an IPv4 address, CIDRs, each with a ``:port`` suffix, and spellings
in other letter case, with a trailing dot, in Unicode or punycode) is put alone in ``allow_out`` (with
``allow_internet_access=false``) and alone in ``deny_out`` (with ``allow_internet_access=true``); the engine must
decide every neighbour of :mod:`harness.policy.boundaries` (or reject the policy) as the reference engine does.

The name and address neighbours and the port suffix are ``spec`` (the networking docs' wildcard sentence and
entry kinds, the SDK's port-suffix sentence); spellings are ``choice``, as the docs say nothing of letter case,
trailing dots or IDNA.
"""

from __future__ import annotations

from collections.abc import Iterator

from contracts.tensorlake_adapter import TensorLakeEngine, TensorLakeReferenceEngine
from harness.policy.boundaries import (
    ADDRESS_ENTRIES,
    IDN,
    NAME,
    Probe,
    address_probes,
    compare,
    for_port,
    idn_probes,
    name_probes,
    spelled_probes,
    with_port,
)
from harness.policy.tensorlake.runner import CheckFailed, CheckResult, run_examples
from harness.policy.tensorlake.strategies import Network
from harness.strength import choice, spec, tagged

__all__ = [
    "BOUNDARY_CHECKS",
    "check_boundary_addresses",
    "check_boundary_names",
    "check_boundary_port",
    "check_boundary_spelling",
]

SUITE = "tensorlake-policy"
_REFERENCE = TensorLakeReferenceEngine()
#: Shown of the differences found, at most.
SHOWN = 5


class _BoundaryFailed(CheckFailed):
    def __init__(self, lines: list[str]) -> None:
        more = f" (and {len(lines) - SHOWN} more)" if len(lines) > SHOWN else ""
        super().__init__("; ".join(lines[:SHOWN]) + more)
        self.example = lines[0]


def _placements(entry: str) -> Iterator[tuple[str, Network]]:
    yield entry, {"allow_internet_access": False, "allow_out": [entry], "deny_out": []}
    yield entry, {"allow_internet_access": True, "allow_out": [], "deny_out": [entry]}


def _decide(engine: TensorLakeEngine, network: object, probe: Probe) -> bool:
    return engine.allows_egress(network, probe.host, probe.ip)  # type: ignore[arg-type]


def _judge(engine: TensorLakeEngine, entries: list[str], probes: list[Probe]) -> None:
    cases = [(entry, network, probe) for e in entries for entry, network in _placements(e) for probe in probes]
    lines = compare(cases, lambda n, p: _decide(engine, n, p), lambda n, p: _decide(_REFERENCE, n, p))
    if lines:
        raise _BoundaryFailed(lines)


def _names(engine: TensorLakeEngine) -> None:
    _judge(engine, [NAME, "*." + NAME, "api." + NAME, "*.api." + NAME], name_probes(NAME) + name_probes("api." + NAME))


@tagged(SUITE, "boundary_names", spec("tl.allow.wildcard-apex", "tl.allow.add-apex", "tl.allow.kinds"))
def check_boundary_names(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Exact and wildcard entries against the apex, one and many labels deeper, the suffix without the dot."""
    return run_examples("boundary_names", engine, _names)


def _addresses(engine: TensorLakeEngine) -> None:
    for entry in ADDRESS_ENTRIES:
        _judge(engine, [entry], address_probes(entry))


@tagged(SUITE, "boundary_addresses", spec("tl.allow.kinds", "tl.table.allow-out", "tl.table.deny-out"))
def check_boundary_addresses(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Address and CIDR entries against their first and last address and one below and above, allowed and denied."""
    return run_examples("boundary_addresses", engine, _addresses)


def _port(engine: TensorLakeEngine) -> None:
    probes = for_port(name_probes(NAME) + name_probes("api." + NAME))
    _judge(engine, [with_port(NAME), with_port("*." + NAME), with_port("api." + NAME)], probes)


@tagged(SUITE, "boundary_port", spec("tl-sdk.port-suffix"))
def check_boundary_port(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Hostname entries with a :port suffix decide every name neighbour like the bare hostname."""
    return run_examples("boundary_port", engine, _port)


def _spelling(engine: TensorLakeEngine) -> None:
    canonical = [NAME, "*." + NAME]
    spelled = [NAME.upper(), NAME + ".", "*." + NAME.title(), "*." + NAME + "."]
    _judge(engine, canonical + spelled, spelled_probes(NAME) + name_probes(NAME)[:2])
    unicode, puny = IDN
    _judge(engine, [unicode, puny, "*." + unicode, "*." + puny], idn_probes())


@tagged(
    SUITE,
    "boundary_spelling",
    choice("the networking docs never say whether letter case, a trailing dot or IDNA change what an entry matches"),
)
def check_boundary_spelling(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Entries and hosts in other letter case, with a trailing dot, in Unicode or punycode decide alike."""
    return run_examples("boundary_spelling", engine, _spelling)


#: The boundary checks, in run order.
BOUNDARY_CHECKS = (check_boundary_names, check_boundary_addresses, check_boundary_port, check_boundary_spelling)
