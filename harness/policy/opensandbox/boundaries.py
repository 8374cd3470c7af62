"""OpenSandbox boundary checks: every egress target form against its documented neighbours, on every run.

Each target (an FQDN, a ``*.`` wildcard, an IP address, CIDRs, a ``:port`` suffix, other spellings) is the one
rule of a policy, as an ``allow`` rule under ``defaultAction: deny`` and as a ``deny`` rule under ``allow``; the
engine must decide every neighbour of :mod:`harness.policy.boundaries` (or reject the policy or the host) as the
reference engine does. The checks draw nothing: Hypothesis runs each once.

``spec``: what the egress document fixes ("FQDN or wildcard domain"): an FQDN target matches that name alone, a
wildcard matches a name one label below and never a name that only shares the suffix without the dot. The rest
is ``choice``, where the documents are silent: the wildcard's apex and depth, letter case, trailing dots and
IDNA, IP targets ("IP/CIDR not yet supported in the egress MVP"; sandproof accepts addresses, NeMo Gym sends
them) and a ``:port`` suffix.
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import strategies as st

from contracts.opensandbox_adapter import reference_engine
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
from harness.policy.opensandbox.checks import check
from harness.policy.opensandbox.strategies import Json, OpenSandboxEngine
from harness.strength import choice, spec

__all__ = ["BOUNDARIES", "SHOWN"]

#: Shown of the differences found, at most.
SHOWN = 5
#: The wildcard neighbours the documents do not fix.
_WILDCARD_CHOICES = ("apex", "many labels deeper")


def _placements(target: str) -> Iterator[tuple[str, Json]]:
    for action, default in (("allow", "deny"), ("deny", "allow")):
        yield target, {"defaultAction": default, "egress": [{"action": action, "target": target}]}


def _judge(engine: OpenSandboxEngine, targets: list[str], probes: list[Probe]) -> None:
    cases = [(t, policy, probe) for target in targets for t, policy in _placements(target) for probe in probes]
    lines = compare(
        cases,
        lambda policy, probe: engine.allows_egress(policy, probe.destination),  # type: ignore[arg-type]
        lambda policy, probe: reference_engine.allows_egress(policy, probe.destination),  # type: ignore[arg-type]
    )
    more = f" (and {len(lines) - SHOWN} more)" if len(lines) > SHOWN else ""
    assert not lines, "; ".join(lines[:SHOWN]) + more


def _fixed(probes: list[Probe]) -> list[Probe]:
    return [p for p in probes if p.neighbour not in _WILDCARD_CHOICES]


@check("boundary_names", spec("os.rule.target", "os.policy.in-order", "os.policy.default-action"))
def _names(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """FQDN targets match their name alone; a wildcard matches one label below, never the suffix without the dot."""
    for base in (NAME, "api." + NAME):
        _judge(engine, [base], name_probes(base))
        _judge(engine, ["*." + base], _fixed(name_probes(base)))


@check(
    "boundary_wildcard_depth",
    choice("the documents name '*.example.com' without saying whether it matches the apex or many labels deeper"),
)
def _wildcard_depth(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """A wildcard target against its apex and a name many labels deeper (sandproof: never the apex, any depth)."""
    for base in (NAME, "api." + NAME):
        _judge(engine, ["*." + base], [p for p in name_probes(base) if p.neighbour in _WILDCARD_CHOICES])


@check(
    "boundary_spelling",
    choice("the documents do not say whether letter case, a trailing dot or a Unicode spelling change a target"),
)
def _spelling(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Targets and hosts in other letter case, with a trailing dot, in Unicode or punycode decide like sandproof."""
    spelled = [NAME.upper(), NAME + ".", "*." + NAME.title(), "*." + NAME + "."]
    _judge(engine, [NAME, "*." + NAME, *spelled], spelled_probes(NAME) + name_probes(NAME)[:2])
    unicode, puny = IDN
    _judge(engine, [puny, "*." + puny, unicode, "*." + unicode], idn_probes())


@check(
    "boundary_addresses",
    choice("IP targets are sandproof's choice (the egress MVP supports neither IP nor CIDR); CIDRs are refused"),
)
def _addresses(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Address and CIDR targets against their first and last address and one below and above."""
    for target in ADDRESS_ENTRIES:
        _judge(engine, [target], address_probes(target))


@check("boundary_port", choice("the documents do not say whether a target or a host may carry a :port suffix"))
def _port(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """A target or a host with a :port suffix is decided (or refused) like sandproof does."""
    _judge(engine, [with_port(NAME), with_port("*." + NAME)], for_port(name_probes(NAME)[:2]))
    _judge(engine, [NAME, "*." + NAME], for_port(name_probes(NAME)[:2], where="host"))


#: The boundary checks, by name.
BOUNDARIES = ("boundary_names", "boundary_wildcard_depth", "boundary_spelling", "boundary_addresses", "boundary_port")
