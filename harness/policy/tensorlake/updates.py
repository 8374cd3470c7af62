"""Hypothesis properties of TensorLake policy updates and validation: the PATCH tri-state, storage, rejections.

The docs say what a stored policy decides, not how it is written, so the ``spec`` properties compare stored
policies by behaviour (:func:`harness.policy.tensorlake.behaviour.behaviour_difference`): the tri-state, a
stored policy deciding like the given one, the ``:port`` suffix, the documented forms accepted and the others
rejected, an unresolvable hostname rejecting the update. sandproof's stored form (lowercase, punycode,
duplicates dropped, ``None`` after a clear), its full validation and its not resolving wildcards are choices.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from contracts.tensorlake_adapter import TensorLakeEngine
from harness.policy.tensorlake.behaviour import behaviour_difference
from harness.policy.tensorlake.runner import CheckResult, expect, raises, run_property
from harness.policy.tensorlake.strategies import (
    KEYS,
    REFERENCE,
    RESOLVED,
    Network,
    canonical,
    decorated_networks,
    domains,
    is_address,
    networks,
    raw_networks,
    resolve_all,
    small_ints,
    with_entry,
)
from harness.strength import choice, spec, tagged

__all__ = [
    "check_documented_forms",
    "check_patch_tristate",
    "check_port_suffix",
    "check_stored_form",
    "check_stored_policy_decides_alike",
    "check_unresolvable_rejected",
    "check_validation_agrees",
    "check_wildcards_not_resolved",
]

SUITE = "tensorlake-policy"


@st.composite
def _currents(draw: st.DrawFn, unicode: bool = False) -> Network | None:
    """A current policy in normalised form with a non-empty allow_out, or (one time in four) None."""
    if draw(small_ints) % 4 == 0:
        return None
    network = {**draw(networks(min_allow=1, unicode=unicode)), "allow_internet_access": draw(st.booleans())}
    return REFERENCE.apply_update(None, {"network": network}, resolve_all)


@st.composite
def _patch_cases(draw: st.DrawFn, unicode: bool = False) -> tuple[Network | None, dict[str, Any], str]:
    current = draw(_currents(unicode))
    kind = draw(st.sampled_from(("absent", "null", "object")))
    body: dict[str, Any] = {}
    if draw(st.booleans()):
        body["name"] = "renamed"
    if draw(st.booleans()):
        body["exposed_ports"] = [8080]
    if kind == "null":
        body["network"] = None
    elif kind == "object":
        network = draw(networks(unicode=unicode))
        drop = draw(st.sets(st.sampled_from(KEYS)))
        body["network"] = {key: value for key, value in network.items() if key not in drop}
    return current, body, kind


def _patch(engine: TensorLakeEngine, case: tuple[Network | None, dict[str, Any], str]) -> None:
    current, body, kind = case
    want = REFERENCE.apply_update(current, body, resolve_all)
    got = engine.apply_update(current, body, resolve_all)
    problem = behaviour_difference(engine, got, want)
    labels = {"absent": "no network key", "null": "network null", "object": "a network object"}
    expect(problem is None, f"after {labels[kind]} the stored policy {got!r} decides differently: {problem}")


@tagged(
    SUITE,
    "patch_tristate",
    spec("tl.update.omit", "tl.update.replace", "tl.update.clear", "tl.table.allow-internet-access"),
)
def check_patch_tristate(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """PATCH tri-state by behaviour: absent keeps the policy, null clears it, an object replaces it with defaults."""
    return run_property("patch_tristate", _patch_cases(), _patch, engine, max_examples, derandomize, shrink)


def _stored_alike(engine: TensorLakeEngine, network: Network) -> None:
    stored = engine.apply_update(None, {"network": network}, resolve_all)
    want = REFERENCE.apply_update(None, {"network": network}, resolve_all)
    problem = behaviour_difference(engine, stored, want)
    expect(problem is None, f"the stored policy {stored!r} decides differently: {problem}")
    again = engine.apply_update(None, {"network": stored}, resolve_all)
    problem = behaviour_difference(engine, again, want)
    expect(problem is None, f"storing the stored policy again gave {again!r}, which decides differently: {problem}")


@tagged(SUITE, "stored_policy_decides_alike", spec("tl.update.replace", "tl.allow.kinds", "tl.table.allow-out"))
def check_stored_policy_decides_alike(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """A stored policy, and the same policy stored again, decide every destination and resolver like the given one."""
    cases = networks(unicode=False)
    return run_property("stored_policy_decides_alike", cases, _stored_alike, engine, max_examples, derandomize, shrink)


def _stored_form(engine: TensorLakeEngine, case: tuple[Network, tuple[Network | None, dict[str, Any], str]]) -> None:
    network, (current, body, _) = case
    want = REFERENCE.apply_update(None, {"network": network}, resolve_all)
    got = engine.apply_update(None, {"network": network}, resolve_all)
    expect(got == want, f"stored {got!r}; sandproof stores {want!r}")
    again = engine.apply_update(None, {"network": got}, resolve_all)
    expect(again == got, f"storing {got!r} again gave {again!r}")
    got = engine.apply_update(current, body, resolve_all)
    want = REFERENCE.apply_update(current, body, resolve_all)
    expect(got == want, f"after PATCH {body!r} the engine stores {got!r}; sandproof stores {want!r}")


@tagged(
    SUITE,
    "stored_form",
    choice(
        "the docs do not say how a policy is stored; sandproof lowercases, IDNA-encodes, drops trailing dots, "
        "spaces, ports and duplicates, writes a.b.c.d/32 bare, and stores no policy (null) after a clear"
    ),
)
def check_stored_form(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """The stored policy equals sandproof's canonical form (case, dots, spaces, ports, duplicates, IDNA) and is stable."""
    cases = st.tuples(decorated_networks(), _patch_cases(unicode=True))
    return run_property("stored_form", cases, _stored_form, engine, max_examples, derandomize, shrink)


@st.composite
def _port_cases(draw: st.DrawFn) -> tuple[Network, Network]:
    network = draw(networks(unicode=False))
    port = draw(st.sampled_from((":80", ":443", ":8080", ":65535")))

    def suffixed(entries: list[str]) -> list[str]:
        return [e + port if not is_address(e) and not e.startswith("*.") else e for e in entries]

    with_ports = {k: suffixed(v) if isinstance(v, list) else v for k, v in network.items()}
    return network, with_ports


def _port_suffix(engine: TensorLakeEngine, case: tuple[Network, Network]) -> None:
    network, with_ports = case
    expect(not raises(lambda: engine.validate(with_ports)), f"{with_ports!r} was rejected")
    problem = behaviour_difference(engine, with_ports, network)
    expect(problem is None, f"{with_ports!r} decides differently from {network!r}: {problem}")


@tagged(SUITE, "port_suffix", spec("tl-sdk.port-suffix"))
def check_port_suffix(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """A hostname entry with a :port suffix is accepted and decides like the bare hostname (not port-specific)."""
    return run_property("port_suffix", _port_cases(), _port_suffix, engine, max_examples, derandomize, shrink)


_FLAWS = (
    ("deny_out", "*.example.com"),
    ("deny_out", "*.a.org"),
    ("allow_out", "2001:db8::1"),
    ("deny_out", "::1"),
    ("allow_out", "256.0.0.1"),
    ("allow_out", "10.0.0.0/33"),
    ("allow_out", "a.*.com"),
    ("allow_out", "*"),
    ("allow_out", 7),
    ("deny_out", None),
)
_BAD_TYPES: tuple[tuple[str, object], ...] = (
    ("allow_internet_access", "false"),
    ("allow_internet_access", 1),
    ("allow_out", "example.com"),
    ("deny_out", "10.0.0.0/8"),
)


@st.composite
def _form_cases(draw: st.DrawFn) -> tuple[Network, object]:
    network = draw(networks(unicode=False))
    flawed: dict[str, Any] = dict(network)
    if draw(st.booleans()):
        key, entry = draw(st.sampled_from(_FLAWS))
        entries = list(flawed.get(key, []))
        entries.insert(draw(small_ints) % (len(entries) + 1), entry)
        flawed[key] = entries
    else:
        key, value = draw(st.sampled_from(_BAD_TYPES))
        flawed[key] = value
    return network, flawed


def _documented_forms(engine: TensorLakeEngine, case: tuple[Network, object]) -> None:
    network, flawed = case
    expect(not raises(lambda: engine.validate(network)), f"the documented policy {network!r} was rejected")
    expect(raises(lambda: engine.validate(flawed)), f"{flawed!r} was accepted")  # type: ignore[arg-type]
    rejected = raises(lambda: engine.apply_update(None, {"network": flawed}, resolve_all))
    expect(rejected, f"an update to {flawed!r} was accepted")


@tagged(
    SUITE,
    "documented_forms",
    spec(
        "tl.allow.kinds",
        "tl.allow.wildcards-allow-only",
        "tl.table.allow-internet-access",
        "tl.table.allow-out",
        "tl.table.deny-out",
    ),
)
def check_documented_forms(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """Policies of the documented forms are accepted; a wildcard in deny_out, IPv6, a bad IPv4/CIDR or type is not."""
    return run_property("documented_forms", _form_cases(), _documented_forms, engine, max_examples, derandomize, shrink)


def _validation(engine: TensorLakeEngine, raw: object) -> None:
    want = raises(lambda: REFERENCE.validate(raw))  # type: ignore[arg-type]
    got = raises(lambda: engine.validate(raw))  # type: ignore[arg-type]
    verdict = {True: "rejected", False: "accepted"}
    expect(got == want, f"the engine {verdict[got]} it, sandproof {verdict[want]} it")


@tagged(
    SUITE,
    "validation_agrees",
    choice(
        "the docs list the entry forms but not the edge cases; sandproof rejects host bits, empty entries, "
        "unknown keys and bad ports, and accepts spaces, trailing dots and Unicode names"
    ),
)
def check_validation_agrees(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """The engine rejects exactly the policies sandproof rejects, edge cases included."""
    return run_property("validation_agrees", raw_networks(), _validation, engine, max_examples, derandomize, shrink)


@st.composite
def _unresolvable_cases(draw: st.DrawFn) -> tuple[Network | None, Network, str]:
    network = draw(networks(unicode=False))
    name = draw(domains(unicode=False))
    network = with_entry(network, draw(st.sampled_from(("allow_out", "deny_out"))), name)
    return draw(_currents()), network, name


def _unresolvable(engine: TensorLakeEngine, case: tuple[Network | None, Network, str]) -> None:
    current, network, name = case
    snapshot = repr(current)

    def resolve(host: str) -> list[str]:
        return [] if host == name else list(RESOLVED)

    rejected = raises(lambda: engine.apply_update(current, {"network": network}, resolve))
    expect(rejected, f"{name!r} does not resolve but the update was accepted")
    expect(repr(current) == snapshot, "a rejected update modified the current policy")


@tagged(SUITE, "unresolvable_rejected", spec("tl.update.unresolvable"))
def check_unresolvable_rejected(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """An update naming a hostname that does not resolve is rejected and leaves the current policy as it was."""
    return run_property(
        "unresolvable_rejected", _unresolvable_cases(), _unresolvable, engine, max_examples, derandomize, shrink
    )


def _wildcards(engine: TensorLakeEngine, case: tuple[Network | None, Network]) -> None:
    current, network = case
    allow, deny = canonical(network)
    no_names = {
        "allow_internet_access": network.get("allow_internet_access", True),
        "allow_out": [e for e in allow if e.startswith("*.") or is_address(e)],
        "deny_out": [e for e in deny if is_address(e)],
    }
    asked: list[str] = []

    def resolve(host: str) -> list[str]:
        asked.append(host)
        return []

    rejected = raises(lambda: engine.apply_update(current, {"network": no_names}, resolve))
    expect(not rejected, f"a policy whose only names are wildcards was rejected: {no_names!r}")
    expect(not any(a.startswith("*") for a in asked), f"wildcards were sent to the resolver: {asked}")


@tagged(
    SUITE,
    "wildcards_not_resolved",
    choice(
        "the docs reject an update whose hostname cannot be resolved but do not say whether a wildcard is "
        "resolved; sandproof does not resolve wildcards (a wildcard names no single host)",
        sentences=("tl.update.unresolvable",),
    ),
)
def check_wildcards_not_resolved(
    engine: TensorLakeEngine, *, max_examples: int = 60, derandomize: bool = True, shrink: bool = True
) -> CheckResult:
    """A policy whose only names are wildcards is applied with a resolver that resolves nothing; wildcards are never looked up."""
    cases = st.tuples(_currents(), networks(unicode=False).map(lambda n: with_entry(n, "allow_out", "*.wild.io")))
    return run_property("wildcards_not_resolved", cases, _wildcards, engine, max_examples, derandomize, shrink)
