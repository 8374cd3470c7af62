"""Hypothesis properties of how TensorLake entries and hosts may be spelled: letter case and IDNA, both choices.

The networking docs never say whether ``Example.COM`` and ``example.com`` are the same entry, or whether
``bücher.example`` matches ``xn--bcher-kva.example``. sandproof folds case and IDNA-encodes, like DNS does;
an implementation that decides otherwise differs from sandproof's choice, and fails only a strict run.
"""

from __future__ import annotations

import idna
from hypothesis import strategies as st

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.runner import CheckResult, expect, run_property
from harness.policy.tensorlake.strategies import (
    LABELS,
    TLDS,
    UNICODE_LABELS,
    Network,
    ascii_labels,
    canonical,
    decorate,
    domains,
    egress_cases,
    is_address,
    pick,
    recase,
    small_ints,
)
from harness.strength import choice, tagged

__all__ = ["check_case_insensitive", "check_idna"]

SUITE = "tensorlake-policy"


@st.composite
def _case_cases(draw: st.DrawFn) -> tuple[Network, str, str | None, int]:
    network, host, ip = draw(egress_cases())
    allow, deny = canonical(network)
    wild = [e[2:] for e in allow if e.startswith("*.")]
    exact = [e for e in allow + deny if not e.startswith("*.") and not is_address(e)]
    how = draw(small_ints) % 4
    if how < 3 and exact and (how < 2 or not wild):
        host = pick(draw, exact)
    elif how < 3 and wild:
        host = f"{draw(ascii_labels)}.{pick(draw, wild)}"
    if host is None:
        host = draw(domains())
    return network, host.lower(), ip, draw(st.integers(1, 2**60))


def _case_insensitive(engine: TensorLakeEngine, case: tuple[Network, str, str | None, int]) -> None:
    network, host, ip, mask = case
    base = engine.allows_egress(network, host, ip)
    shouted = recase(host, mask)
    expect(engine.allows_egress(network, shouted, ip) == base, f"{shouted!r} and {host!r} were judged differently")
    loud = {k: [decorate(e, "upper") for e in v] if isinstance(v, list) else v for k, v in network.items()}
    expect(engine.allows_egress(loud, host, ip) == base, "upper-casing the policy's domains changed the decision")


@tagged(
    SUITE,
    "case_insensitive",
    choice("the docs do not say entries and hosts compare without letter case; sandproof folds case, as DNS does"),
)
def check_case_insensitive(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Letter case in hosts and in domain entries never changes a decision."""
    return run_property("case_insensitive", _case_cases(), _case_insensitive, engine, max_examples, derandomize, shrink)


_unicode_domains = st.builds(
    lambda labels, tld: ".".join([*labels, tld]),
    st.lists(st.sampled_from(LABELS + UNICODE_LABELS), min_size=1, max_size=2).filter(
        lambda labels: any(not label.isascii() for label in labels)
    ),
    st.sampled_from(TLDS),
)


def _idna(engine: TensorLakeEngine, case: tuple[str, str, bool]) -> None:
    name, p, upper = case
    puny = idna.encode(name, uts46=True).decode("ascii")
    written = name.upper() if upper else name
    expect(engine.allows_egress({"allow_out": [written]}, puny, None), f"{written!r} did not match {puny!r}")
    expect(engine.allows_egress({"allow_out": [puny]}, written, None), f"{puny!r} did not match {written!r}")
    expect(
        engine.allows_egress({"allow_out": ["*." + written]}, f"{p}.{puny}", None),
        f"*.{written} did not match {p}.{puny}",
    )
    expect(not engine.allows_egress({"deny_out": [written]}, puny, None), f"deny_out {written!r} missed {puny!r}")


@tagged(
    SUITE,
    "idna",
    choice("the docs say nothing of non-ASCII names; sandproof matches a Unicode name and its punycode both ways"),
)
def check_idna(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Non-ASCII names match their punycode spelling both ways, in allow_out, wildcards and deny_out."""
    cases = st.tuples(_unicode_domains, ascii_labels, st.booleans())
    return run_property("idna", cases, _idna, engine, max_examples, derandomize, shrink)
