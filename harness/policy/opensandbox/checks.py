"""Hypothesis-driven contract checks for any OpenSandbox network-policy engine speaking the JSON protocol.

An engine has ``kind``, ``validate(policy)``, ``allows_egress(policy, host)``, ``merge(policy, rules)`` and
``delete(policy, targets)`` (see ``contracts.opensandbox_adapter``). ``run_checks`` runs every check against
it, with the reference adapter as oracle where a check compares outputs, and returns one ``CheckResult`` per
check. Merge and delete outputs are compared up to equivalence: same effective default action and the same
rules in order once later duplicates of a target (never the first match) are dropped.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st

from contracts.opensandbox import NetworkPolicy, NetworkRule, canonical_host, canonical_target
from contracts.opensandbox_adapter import reference_engine

__all__ = [
    "CHECKS",
    "CheckResult",
    "OpenSandboxEngine",
    "hosts_near",
    "invalid_policy_json",
    "normal_form",
    "policy_json",
    "rule_json",
    "run_checks",
    "target_json",
]

LABELS = ("a", "b", "api", "x-1")
TLDS = ("com", "org")
IPS = ("10.0.0.1", "192.168.1.5", "2001:db8::1")
UNMATCHED_HOST = "nothing.matches.test"
Json = dict[str, Any]


class OpenSandboxEngine(Protocol):
    """An OpenSandbox egress-policy engine speaking the JSON protocol."""

    kind: str

    def validate(self, policy: Json) -> None:
        """Raise ValueError when the policy is invalid."""

    def allows_egress(self, policy: Json | None, host: str) -> bool:
        """Tell whether the policy allows egress to the host."""

    def merge(self, policy: Json | None, rules: list[Json]) -> Json:
        """Return the policy after a PATCH with rules."""

    def delete(self, policy: Json | None, targets: list[str]) -> Json:
        """Return the policy after a DELETE of targets."""


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check against one engine."""

    name: str
    passed: bool
    counterexample: str = ""


# --- strategies (built once: constructing strategies per draw dominates the run time) ------------------


def _respell(parts: tuple[str, str, bool]) -> str:
    """Respell a canonical name with a letter case and an optional trailing dot."""
    name, case, dot = parts
    text = {"lower": name, "upper": name.upper(), "title": name.title()}[case]
    return text + "." if dot and ":" not in name else text


def _join(parts: tuple[list[str], str]) -> str:
    """Join labels and a top-level domain."""
    return ".".join([*parts[0], parts[1]])


def _domains(max_labels: int) -> st.SearchStrategy[str]:
    """Return a strategy for canonical domains from a small vocabulary, so names often collide."""
    return st.tuples(st.lists(st.sampled_from(LABELS), max_size=max_labels), st.sampled_from(TLDS)).map(_join)


_DOMAINS = _domains(2)
_DEEP_DOMAINS = _domains(3)
_CASES = st.sampled_from(("lower", "upper", "title"))
_ACTIONS = st.sampled_from(("allow", "deny"))
_TARGETS = st.one_of(
    st.tuples(_DOMAINS, _CASES, st.booleans()).map(_respell),
    st.tuples(_DOMAINS.map(lambda name: "*." + name), _CASES, st.booleans()).map(_respell),
    st.sampled_from(IPS).map(str.upper),
)
_RULES = st.fixed_dictionaries({"action": _ACTIONS, "target": _TARGETS})


def domain_name(max_labels: int = 2) -> st.SearchStrategy[str]:
    """Return a strategy for canonical domains with up to ``max_labels`` labels before the TLD."""
    known = {2: _DOMAINS, 3: _DEEP_DOMAINS}
    return known[max_labels] if max_labels in known else _domains(max_labels)


def target_json() -> st.SearchStrategy[str]:
    """Return a strategy for valid rule targets: exact domain, wildcard domain or IP, in any spelling."""
    return _TARGETS


def rule_json() -> st.SearchStrategy[Json]:
    """Return a strategy for valid rule objects."""
    return _RULES


def _full_policy(parts: tuple[str | None, list[Json]]) -> Json:
    """Build a policy from an optional default action and rules."""
    default, rules = parts
    return {"egress": rules} if default is None else {"defaultAction": default, "egress": rules}


_DEFAULTS = st.sampled_from((None, "allow", "deny"))
_POLICIES: st.SearchStrategy[Json | None] = st.one_of(
    st.sampled_from((None, {}, {"egress": []})),
    st.tuples(_DEFAULTS, st.lists(_RULES, max_size=6)).map(_full_policy),
    st.tuples(_DEFAULTS, st.lists(_RULES, min_size=1, max_size=6)).map(_full_policy),
)


def policy_json() -> st.SearchStrategy[Json | None]:
    """Return a strategy for valid policies: None, empty, or an optional defaultAction with rules."""
    return _POLICIES


_BAD_TARGETS: tuple[object, ...] = ("", " ", " a.com", "a..com", "*", "a.*.com", "**.a.com", "10.0.0.0/8")
_BAD_TARGETS += ("*.10.0.0.1", "-a.com", "a b.com", "[::1]", "ex/ample", 5, None)


_BAD_SHAPES: tuple[object, ...] = (
    "a.com",
    ["allow", "a.com"],
    {"action": "allow"},
    {"target": "a.com"},
    {"action": "allow", "target": "a.com", "ports": [443]},
)
_BAD_ACTIONS: tuple[object, ...] = ("Allow", "DENY", "reject", "", None)
_FLAWS = st.one_of(
    st.tuples(st.just("type"), st.sampled_from(([], "policy", 1))),
    st.tuples(st.just("key"), st.sampled_from(("default_action", "ingress", "rules"))),
    st.tuples(st.just("defaultAction"), st.sampled_from(("DENY", "Allow", "block", "", 1))),
    st.tuples(st.just("egress"), st.sampled_from(({}, "a.com", 3))),
    st.tuples(st.just("rule"), st.sampled_from(_BAD_SHAPES)),
    st.tuples(st.just("rule"), st.sampled_from(_BAD_ACTIONS).map(lambda a: {"action": a, "target": "a.com"})),
    st.tuples(st.just("rule"), st.sampled_from(_BAD_TARGETS).map(lambda t: {"action": "allow", "target": t})),
)


def _corrupt(parts: tuple[Json | None, tuple[str, object], int]) -> object:
    """Apply one flaw to a valid policy."""
    policy, (flaw, bad), position = parts
    base = policy or {}
    if flaw == "type":
        return bad
    if flaw == "key":
        return {**base, str(bad): []}
    if flaw in ("defaultAction", "egress"):
        return {**base, flaw: bad}
    rules = list(base.get("egress", []))
    rules.insert(position, bad)
    return {**base, "egress": rules}


_INVALID_POLICIES = st.tuples(_POLICIES, _FLAWS, st.integers(0, 6)).map(_corrupt)


def invalid_policy_json() -> st.SearchStrategy[object]:
    """Return a strategy for policies that a strict engine must reject."""
    return _INVALID_POLICIES


def _is_ip(text: str) -> bool:
    """Tell whether a canonical target is an IP address."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def hosts_near(policy: Json | None, extra: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """Return a strategy for canonical hosts at, below and beside the policy's targets."""
    names: set[str] = {UNMATCHED_HOST, *IPS}
    targets = [str(rule["target"]) for rule in (policy or {}).get("egress", [])] + list(extra)
    for raw in targets:
        target = canonical_target(raw)
        if _is_ip(target):
            continue
        suffix = target[2:] if target.startswith("*.") else target
        names.update({suffix, f"a.{suffix}", f"b.a.{suffix}"})
        if "." in suffix:
            names.add(suffix.split(".", 1)[1])
    names = {canonical_host(name) for name in names}
    return st.one_of(st.sampled_from(sorted(names)), _DEEP_DOMAINS)


_PATCHES = st.lists(_RULES, min_size=1, max_size=4)
_EMPTY_POLICIES: st.SearchStrategy[Json | None] = st.sampled_from((None, {}, {"egress": []}))
_ANY_HOSTS = st.one_of(_DEEP_DOMAINS, st.sampled_from(IPS))
_UNKNOWN_TARGETS = st.sampled_from(("nope.test", "*.nope.test", "10.9.9.9"))


def normal_form(policy: object) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Return the effective default and the live rules, the basis of policy equivalence."""
    parsed = NetworkPolicy.from_json(policy)
    seen: set[str] = set()
    live: list[tuple[str, str]] = []
    for rule in parsed.egress:
        if rule.target not in seen:
            seen.add(rule.target)
            live.append((rule.action, rule.target))
    return parsed.effective_default, tuple(live)


def _target_host(target: str) -> str:
    """Return a host the canonical target matches."""
    return "a." + target[2:] if target.startswith("*.") else target


# --- checks -----------------------------------------------------------------------------------------------


def _check_validate(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Engine accepts exactly the policies the reference accepts."""
    policies: list[object] = [data.draw(policy_json(), label="valid policy")]
    policies += data.draw(st.lists(invalid_policy_json(), min_size=3, max_size=3), label="invalid policies")
    for policy in policies:
        verdicts = []
        for judge in (reference_engine, engine):
            try:
                judge.validate(policy)  # type: ignore[arg-type]
                verdicts.append("valid")
            except ValueError:
                verdicts.append("invalid")
        assert verdicts[0] == verdicts[1], f"policy={policy!r}: reference {verdicts[0]}, engine {verdicts[1]}"


def _check_empty_allows(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """A missing or empty policy allows every host."""
    policy = data.draw(_EMPTY_POLICIES, label="policy")
    host = data.draw(_ANY_HOSTS, label="host")
    assert engine.allows_egress(policy, host), f"policy={policy!r} denies host={host!r}"


def _check_decision(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Engine decisions equal the reference's."""
    policy = data.draw(policy_json(), label="policy")
    host = data.draw(hosts_near(policy), label="host")
    want = reference_engine.allows_egress(policy, host)
    got = engine.allows_egress(policy, host)
    assert got == want, f"policy={policy!r} host={host!r}: reference {want}, engine {got}"


def _check_spelling(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Decisions ignore letter case and one trailing dot, in hosts and in targets."""
    policy = data.draw(policy_json(), label="policy")
    rules = (policy or {}).get("egress") or []
    hosts = [data.draw(hosts_near(policy), label="host")]
    hosts += [_target_host(canonical_target(rule["target"])) for rule in rules]
    shouted = {**(policy or {}), "egress": [{**r, "target": str(r["target"]).upper()} for r in rules]}
    for host in hosts:
        base = engine.allows_egress(policy, host)
        for variant in (host.upper() + ("" if ":" in host else "."), host.title()):
            got = engine.allows_egress(policy, variant)
            assert got == base, f"policy={policy!r}: {host!r} gives {base}, {variant!r} gives {got}"
        got = engine.allows_egress(shouted, host)
        assert got == base, f"host={host!r}: policy={policy!r} gives {base}, {shouted!r} gives {got}"


def _check_wildcard_apex(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """``*.d`` matches names below ``d`` at any depth but never ``d`` itself."""
    name = data.draw(domain_name(), label="domain")
    action = data.draw(_ACTIONS, label="action")
    other = "deny" if action == "allow" else "allow"
    policy: Json = {"defaultAction": other, "egress": [{"action": action, "target": "*." + name}]}
    assert engine.allows_egress(policy, name) == (other == "allow"), f"policy={policy!r}: apex {name!r}"
    for below in (f"a.{name}", f"b.a.{name}"):
        assert engine.allows_egress(policy, below) == (action == "allow"), f"policy={policy!r}: {below!r}"


def _check_merge(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merged policy is equivalent to the reference's."""
    policy = data.draw(policy_json(), label="policy")
    rules = data.draw(_PATCHES, label="rules")
    want = normal_form(reference_engine.merge(policy, rules))
    got = engine.merge(policy, rules)
    assert normal_form(got) == want, f"merge({policy!r}, {rules!r}) = {got!r}; expected {want!r}"


def _check_merge_empty(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merging no rules changes nothing."""
    policy = data.draw(policy_json(), label="policy")
    got = engine.merge(policy, [])
    assert normal_form(got) == normal_form(policy), f"merge({policy!r}, []) = {got!r}"


def _check_merge_incoming_wins(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """After a merge each patched target is decided by the patch's first rule matching it."""
    policy = data.draw(policy_json(), label="policy")
    rules = data.draw(_PATCHES, label="rules")
    merged = engine.merge(policy, rules)
    parsed = [NetworkRule.from_json(rule) for rule in rules]
    for rule in parsed:
        host = _target_host(rule.target)
        first = next(r for r in parsed if r.matches(host))
        got = engine.allows_egress(merged, host)
        assert got == (first.action == "allow"), f"merge({policy!r}, {rules!r}) = {merged!r}: {host!r} -> {got}"


def _check_merge_first_wins(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Within one patch the first rule for a target wins."""
    policy = data.draw(policy_json(), label="policy")
    target = data.draw(target_json(), label="target")
    action = data.draw(_ACTIONS, label="action")
    other = "deny" if action == "allow" else "allow"
    rules = [{"action": action, "target": target}, {"action": other, "target": target}]
    merged = engine.merge(policy, rules)
    host = _target_host(canonical_target(target))
    got = engine.allows_egress(merged, host)
    assert got == (action == "allow"), f"merge({policy!r}, {rules!r}) = {merged!r}: {host!r} -> {got}"


def _check_merge_default(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merging keeps the effective default action."""
    policy = data.draw(policy_json(), label="policy")
    rules = data.draw(_PATCHES, label="rules")
    merged = engine.merge(policy, rules)
    before = engine.allows_egress(policy, UNMATCHED_HOST)
    after = engine.allows_egress(merged, UNMATCHED_HOST)
    assert before == after, f"merge({policy!r}, {rules!r}) = {merged!r}: unmatched host {before} -> {after}"


def _check_merge_idempotent(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Merging the same rules twice equals merging them once."""
    policy = data.draw(policy_json(), label="policy")
    rules = data.draw(_PATCHES, label="rules")
    once = engine.merge(policy, rules)
    twice = engine.merge(once, rules)
    assert normal_form(once) == normal_form(twice), f"policy={policy!r} rules={rules!r}: {once!r} vs {twice!r}"


def _check_delete(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Delete output is equivalent to the reference's and keeps no listed target, in any spelling."""
    policy = data.draw(policy_json(), label="policy")
    known = [str(r["target"]) for r in (policy or {}).get("egress", [])]
    pool = st.one_of(st.sampled_from(known), target_json()) if known else target_json()
    drawn = data.draw(st.lists(pool, min_size=1, max_size=3), label="targets")
    for targets in (drawn, *([target.upper()] for target in known)):
        got = engine.delete(policy, targets)
        want = normal_form(reference_engine.delete(policy, targets))
        assert normal_form(got) == want, f"delete({policy!r}, {targets!r}) = {got!r}; expected {want!r}"
        gone = {canonical_target(t) for t in targets}
        left = [r.target for r in NetworkPolicy.from_json(got).egress if r.target in gone]
        assert not left, f"delete({policy!r}, {targets!r}) = {got!r} still holds {left!r}"


def _check_delete_unknown(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Deleting targets the policy does not hold changes nothing."""
    policy = data.draw(policy_json(), label="policy")
    unknown = data.draw(_UNKNOWN_TARGETS, label="target")
    got = engine.delete(policy, [unknown])
    assert normal_form(got) == normal_form(policy), f"delete({policy!r}, [{unknown!r}]) = {got!r}"


def _check_delete_after_merge(engine: OpenSandboxEngine, data: st.DataObject) -> None:
    """Deleting a newly merged target restores every decision."""
    policy = data.draw(policy_json(), label="policy")
    held = {canonical_target(r["target"]) for r in (policy or {}).get("egress", [])}
    rule = data.draw(rule_json().filter(lambda r: canonical_target(r["target"]) not in held), label="rule")
    restored = engine.delete(engine.merge(policy, [rule]), [rule["target"]])
    host = data.draw(hosts_near(policy, (rule["target"],)), label="host")
    before = engine.allows_egress(policy, host)
    after = engine.allows_egress(restored, host)
    assert before == after, f"policy={policy!r} rule={rule!r} -> {restored!r}: {host!r} {before} -> {after}"


Check = Callable[[OpenSandboxEngine, st.DataObject], None]
CHECKS: dict[str, Check] = {
    "validate_agrees": _check_validate,
    "empty_policy_allows_all": _check_empty_allows,
    "decision_agrees": _check_decision,
    "case_and_trailing_dot_ignored": _check_spelling,
    "wildcard_excludes_apex": _check_wildcard_apex,
    "merge_agrees": _check_merge,
    "merge_nothing_is_identity": _check_merge_empty,
    "merge_incoming_rules_win": _check_merge_incoming_wins,
    "merge_first_wins_within_patch": _check_merge_first_wins,
    "merge_keeps_default_action": _check_merge_default,
    "merge_idempotent": _check_merge_idempotent,
    "delete_agrees_and_removes": _check_delete,
    "delete_unknown_is_identity": _check_delete_unknown,
    "delete_after_merge_restores": _check_delete_after_merge,
}


def _run_check(name: str, check: Check, engine: OpenSandboxEngine, config: settings, at: int) -> CheckResult:
    """Run one check under Hypothesis and capture its minimal counterexample."""

    @config
    @seed(at)
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        check(engine, data)

    try:
        prop()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        return CheckResult(name, False, text if len(text) <= 2000 else text[:2000] + "…")
    return CheckResult(name, True)


def run_checks(
    engine: OpenSandboxEngine,
    max_examples: int = 100,
    checks: tuple[str, ...] | None = None,
    at_seed: int = 0,
    stop_on_failure: bool = False,
) -> list[CheckResult]:
    """Run the named checks (all by default) against ``engine`` and return their results."""
    config = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        derandomize=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )
    results: list[CheckResult] = []
    for name in checks if checks is not None else tuple(CHECKS):
        results.append(_run_check(name, CHECKS[name], engine, config, at_seed))
        if stop_on_failure and not results[-1].passed:
            break
    return results
