"""Hypothesis checks of OpenSandbox network-policy engines, each tagged with its contract strength.

Every check is a function of an engine and Hypothesis ``data``; :func:`check` registers it with its contract
in :data:`CHECKS` and :data:`CONTRACTS`. The ``spec`` checks follow the egress OpenAPI document (rules in
order, the default action, merge and delete semantics, the rule schema) and compare behaviour: what a policy
decides for each host, judged by the engine itself. They draw canonically spelled FQDN and wildcard targets
and hosts whose decision the documents fix. The documents are silent on the wildcard apex and depth, letter
case and trailing dots, IP targets and the exact stored form; those checks are ``choice``. The boundary checks
of :mod:`harness.policy.opensandbox.boundaries` (every target form against its documented neighbours, drawing
nothing) register after these.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

from contracts.opensandbox import NetworkPolicy, NetworkRule, canonical_target
from contracts.opensandbox_adapter import reference_engine
from harness.policy.opensandbox.strategies import (
    ACTIONS,
    ANY_HOSTS,
    CANON_PATCHES,
    EMPTY_POLICIES,
    PATCHES,
    UNKNOWN_TARGETS,
    UNMATCHED_HOST,
    Json,
    OpenSandboxEngine,
    canonical_policy_json,
    canonical_rule_json,
    canonical_target_json,
    domain_name,
    hosts_near,
    invalid_policy_json,
    normal_form,
    policy_json,
    spec_hosts,
    target_host,
    target_json,
)
from harness.strength import Basis, Contract, choice, define, spec

__all__ = ["CHECKS", "CONTRACTS", "SUITE", "Check"]

SUITE = "opensandbox-policy"
Check = Callable[[OpenSandboxEngine, st.DataObject], None]
#: Every check by name, in run order, and its contract.
CHECKS: dict[str, Check] = {}
CONTRACTS: dict[str, Contract] = {}


def check(name: str, basis: Basis) -> Callable[[Check], Check]:
    """Register a check under ``name`` with its contract (the first docstring line is its summary)."""

    def register(body: Check) -> Check:
        CONTRACTS[name] = define(SUITE, name, basis, (body.__doc__ or "").strip().splitlines()[0])
        CHECKS[name] = body
        return body

    return register


def _behaviour(engine: OpenSandboxEngine, got: Json | None, want: Json | None, hosts: list[str]) -> str | None:
    """Return the first host the engine decides differently under ``got`` than under ``want``, or None."""
    for host in hosts:
        mine, theirs = engine.allows_egress(got, host), engine.allows_egress(want, host)
        if mine != theirs:
            return f"{host!r} is {'allowed' if mine else 'denied'} under {got!r}, {'allowed' if theirs else 'denied'} under {want!r}"
    return None


def _verdicts(engine: OpenSandboxEngine, policies: list[object]) -> list[tuple[object, str, str]]:
    """Return (policy, the reference's verdict, the engine's verdict) for each policy."""
    found = []
    for policy in policies:
        verdicts = []
        for judge in (reference_engine, engine):
            try:
                judge.validate(policy)  # type: ignore[arg-type]
                verdicts.append("valid")
            except ValueError:
                verdicts.append("invalid")
        found.append((policy, verdicts[0], verdicts[1]))
    return found


_SCHEMA_FLAWS: tuple[object, ...] = (
    [],
    "policy",
    {"defaultAction": "block"},
    {"defaultAction": "DENY"},
    {"egress": "a.com"},
    {"ingress": []},
    {"egress": [{"action": "allow"}]},
    {"egress": [{"target": "a.com"}]},
    {"egress": [{"action": "reject", "target": "a.com"}]},
    {"egress": [{"action": "Allow", "target": "a.com"}]},
    {"egress": [{"action": "allow", "target": ""}]},
    {"egress": [{"action": "allow", "target": "a.com", "ports": [443]}]},
    {"egress": [{"action": "allow", "target": 5}]},
    {"egress": [{"action": "allow", "target": "10.0.0.0/8"}]},
)


@check(
    "validate_spec",
    spec("os.rule.action", "os.rule.required", "os.rule.target", "os.lifecycle.target-min", "os.policy.default-action"),
)
def _validate_spec(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Documented policies are accepted; schema violations (actions, keys, types, empty or CIDR targets) are not."""
    valid = data.draw(canonical_policy_json(), label="documented policy")
    flawed = data.draw(st.sampled_from(_SCHEMA_FLAWS), label="schema violation")
    for policy, _, got in _verdicts(engine, [valid]):
        assert got == "valid", f"policy={policy!r}: the documented policy was rejected"
    for policy, _, got in _verdicts(engine, [flawed]):
        assert got == "invalid", f"policy={policy!r}: the schema violation was accepted"


@check(
    "validate_agrees",
    choice(
        "the schema leaves target syntax open; sandproof accepts IP targets (NeMo Gym sends them), rejects "
        "surrounding spaces and malformed labels"
    ),
)
def _check_validate(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Engine accepts exactly the policies sandproof accepts, edge cases included."""
    policies: list[object] = [data.draw(policy_json(), label="valid policy")]
    policies += data.draw(st.lists(invalid_policy_json(), min_size=3, max_size=3), label="invalid policies")
    for policy, want, got in _verdicts(engine, policies):
        assert want == got, f"policy={policy!r}: sandproof {want}, engine {got}"


@check("empty_policy_allows_all", spec("os.policy.default-deny", "os.lifecycle.empty-allows"))
def _check_empty_allows(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """A missing or empty policy allows every host."""
    policy = data.draw(EMPTY_POLICIES, label="policy")
    host = data.draw(ANY_HOSTS, label="host")
    assert engine.allows_egress(policy, host), f"policy={policy!r} denies host={host!r}"


@check(
    "decision_agrees",
    spec("os.policy.in-order", "os.policy.default-action", "os.policy.default-deny", "os.rule.target"),
)
def _check_decision(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Decisions equal the reference's on documented policies and the hosts whose fate the documents fix."""
    policy = data.draw(canonical_policy_json(), label="policy")
    hosts = spec_hosts(policy)
    host = data.draw(st.sampled_from(hosts), label="host")
    want = reference_engine.allows_egress(policy, host)
    got = engine.allows_egress(policy, host)
    assert got == want, f"policy={policy!r} host={host!r}: reference {want}, engine {got}"


@check(
    "case_and_trailing_dot_ignored",
    choice("the documents do not say targets and hosts ignore letter case and a trailing dot; sandproof does, as DNS"),
)
def _check_spelling(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Decisions ignore letter case and one trailing dot, in hosts and in targets."""
    policy = data.draw(policy_json(), label="policy")
    rules = (policy or {}).get("egress") or []
    hosts = [data.draw(hosts_near(policy), label="host")]
    hosts += [target_host(canonical_target(rule["target"])) for rule in rules]
    shouted = {**(policy or {}), "egress": [{**r, "target": str(r["target"]).upper()} for r in rules]}
    for host in hosts:
        base = engine.allows_egress(policy, host)
        for variant in (host.upper() + ("" if ":" in host else "."), host.title()):
            got = engine.allows_egress(policy, variant)
            assert got == base, f"policy={policy!r}: {host!r} gives {base}, {variant!r} gives {got}"
        got = engine.allows_egress(shouted, host)
        assert got == base, f"host={host!r}: policy={policy!r} gives {base}, {shouted!r} gives {got}"


@check(
    "wildcard_apex",
    choice(
        "the documents name '*.example.com' without saying it excludes the apex or spans any depth; sandproof: both"
    ),
)
def _check_wildcard_apex(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """``*.d`` matches names below ``d`` at any depth but never ``d`` itself."""
    name = data.draw(domain_name(), label="domain")
    action = data.draw(ACTIONS, label="action")
    other = "deny" if action == "allow" else "allow"
    policy: Json = {"defaultAction": other, "egress": [{"action": action, "target": "*." + name}]}
    assert engine.allows_egress(policy, name) == (other == "allow"), f"policy={policy!r}: apex {name!r}"
    for below in (f"a.{name}", f"b.a.{name}"):
        assert engine.allows_egress(policy, below) == (action == "allow"), f"policy={policy!r}: {below!r}"


@check(
    "merge_agrees",
    spec("os.merge", "os.merge.existing-remain", "os.merge.incoming-priority", "os.merge.first-wins"),
)
def _check_merge(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """A merged policy decides every documented host like the reference's merge."""
    policy = data.draw(canonical_policy_json(), label="policy")
    rules = data.draw(CANON_PATCHES, label="rules")
    got, want = engine.merge(policy, rules), reference_engine.merge(policy, rules)
    problem = _behaviour(engine, got, want, spec_hosts(policy, {"egress": rules}))
    assert problem is None, f"merge({policy!r}, {rules!r}) = {got!r}: {problem}"


@check(
    "merge_incoming_rules_win",
    spec("os.merge.incoming-priority", "os.merge.first-wins"),
)
def _check_merge_incoming_wins(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """After a merge each patched target is decided by the patch's first rule matching it."""
    policy = data.draw(canonical_policy_json(), label="policy")
    rules = data.draw(CANON_PATCHES, label="rules")
    merged = engine.merge(policy, rules)
    parsed = [NetworkRule.from_json(rule) for rule in rules]
    for host in spec_hosts({"egress": rules}):
        first = next((r for r in parsed if r.matches(host)), None)
        if first is None or host not in spec_hosts(policy, {"egress": rules}):
            continue
        got = engine.allows_egress(merged, host)
        assert got == (first.action == "allow"), f"merge({policy!r}, {rules!r}) = {merged!r}: {host!r} -> {got}"


@check("merge_first_wins_within_patch", spec("os.merge.first-wins"))
def _check_merge_first_wins(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Within one patch the first rule for a target wins."""
    policy = data.draw(canonical_policy_json(), label="policy")
    target = data.draw(canonical_target_json(), label="target")
    action = data.draw(ACTIONS, label="action")
    other = "deny" if action == "allow" else "allow"
    rules = [{"action": action, "target": target}, {"action": other, "target": target}]
    merged = engine.merge(policy, rules)
    host = target_host(target)
    got = engine.allows_egress(merged, host)
    assert got == (action == "allow"), f"merge({policy!r}, {rules!r}) = {merged!r}: {host!r} -> {got}"


@check("merge_keeps_default_action", spec("os.merge", "os.policy.default-action"))
def _check_merge_default(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merging rules keeps the effective default action (a PATCH carries rules only)."""
    policy = data.draw(canonical_policy_json(), label="policy")
    rules = data.draw(CANON_PATCHES, label="rules")
    merged = engine.merge(policy, rules)
    before = engine.allows_egress(policy, UNMATCHED_HOST)
    after = engine.allows_egress(merged, UNMATCHED_HOST)
    assert before == after, f"merge({policy!r}, {rules!r}) = {merged!r}: unmatched host {before} -> {after}"


@check("merge_idempotent", spec("os.merge.incoming-priority", "os.merge.existing-remain"))
def _check_merge_idempotent(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merging the same rules twice decides every documented host like merging them once."""
    policy = data.draw(canonical_policy_json(), label="policy")
    rules = data.draw(CANON_PATCHES, label="rules")
    once = engine.merge(policy, rules)
    twice = engine.merge(once, rules)
    problem = _behaviour(engine, twice, once, spec_hosts(policy, {"egress": rules}))
    assert problem is None, f"policy={policy!r} rules={rules!r}: {problem}"


@check(
    "merge_form",
    choice(
        "the documents do not say how a merged policy is written; sandproof keeps the first rule per target, "
        "incoming first, lowercase targets, defaultAction written out, and an empty merge changes nothing"
    ),
)
def _check_merge_form(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merged policies have sandproof's normal form (live rules in order, effective default)."""
    policy = data.draw(policy_json(), label="policy")
    rules = data.draw(PATCHES, label="rules")
    want = normal_form(reference_engine.merge(policy, rules))
    got = engine.merge(policy, rules)
    assert normal_form(got) == want, f"merge({policy!r}, {rules!r}) = {got!r}; sandproof: {want!r}"
    assert normal_form(engine.merge(got, rules)) == want, f"merging {rules!r} into {got!r} again changed it"
    empty = engine.merge(policy, [])
    assert normal_form(empty) == normal_form(policy), f"merge({policy!r}, []) = {empty!r}"


@check("delete_agrees", spec("os.delete.removes"))
def _check_delete(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """After a DELETE the policy decides every documented host like the reference's."""
    policy = data.draw(canonical_policy_json(), label="policy")
    known = [str(r["target"]) for r in (policy or {}).get("egress", [])]
    pool = st.one_of(st.sampled_from(known), canonical_target_json()) if known else canonical_target_json()
    targets = data.draw(st.lists(pool, min_size=1, max_size=3), label="targets")
    got, want = engine.delete(policy, targets), reference_engine.delete(policy, targets)
    problem = _behaviour(engine, got, want, spec_hosts(policy, extra=tuple(targets)))
    assert problem is None, f"delete({policy!r}, {targets!r}) = {got!r}: {problem}"


@check("delete_unknown_is_identity", spec("os.delete.removes"))
def _check_delete_unknown(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Deleting targets the policy does not hold changes no decision."""
    policy = data.draw(canonical_policy_json(), label="policy")
    unknown = data.draw(UNKNOWN_TARGETS.filter(lambda t: ":" not in t and not t[0].isdigit()), label="target")
    got = engine.delete(policy, [unknown])
    problem = _behaviour(engine, got, policy, spec_hosts(policy))
    assert problem is None, f"delete({policy!r}, [{unknown!r}]) = {got!r}: {problem}"


@check("delete_after_merge_restores", spec("os.merge", "os.delete.removes"))
def _check_delete_after_merge(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Deleting a newly merged target restores every decision."""
    policy = data.draw(canonical_policy_json(), label="policy")
    held = {canonical_target(r["target"]) for r in (policy or {}).get("egress", [])}
    rule = data.draw(canonical_rule_json().filter(lambda r: r["target"] not in held), label="rule")
    restored = engine.delete(engine.merge(policy, [rule]), [rule["target"]])
    problem = _behaviour(engine, restored, policy, spec_hosts(policy, extra=(rule["target"],)))
    assert problem is None, f"policy={policy!r} rule={rule!r} -> {restored!r}: {problem}"


@check(
    "delete_form",
    choice(
        "the documents do not say whether DELETE matches targets case-insensitively or how the result is "
        "written; sandproof canonicalises targets and writes the effective defaultAction"
    ),
)
def _check_delete_form(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """DELETE output has sandproof's normal form and removes a listed target in any spelling."""
    policy = data.draw(policy_json(), label="policy")
    known = [str(r["target"]) for r in (policy or {}).get("egress", [])]
    pool = st.one_of(st.sampled_from(known), target_json()) if known else target_json()
    drawn = data.draw(st.lists(pool, min_size=1, max_size=3), label="targets")
    for targets in (drawn, *([target.upper()] for target in known)):
        got = engine.delete(policy, targets)
        want = normal_form(reference_engine.delete(policy, targets))
        assert normal_form(got) == want, f"delete({policy!r}, {targets!r}) = {got!r}; sandproof: {want!r}"
        gone = {canonical_target(t) for t in targets}
        left = [r.target for r in NetworkPolicy.from_json(got).egress if r.target in gone]
        assert not left, f"delete({policy!r}, {targets!r}) = {got!r} still holds {left!r}"


# The boundary checks register themselves after the checks above (every entry form against its neighbours).
from harness.policy.opensandbox import boundaries as _boundaries  # noqa: E402, F401
