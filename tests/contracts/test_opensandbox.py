"""Tests of the OpenSandbox network-policy reference: spec examples, error codes and Hypothesis laws."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import opensandbox as osb
from contracts.opensandbox import (
    ERROR_CODES,
    NetworkPolicy,
    NetworkRule,
    PolicyError,
    decide_egress,
    decide_egress_naive,
    delete_targets,
    merge_rules,
    parse_rules,
    parse_targets,
)
from contracts.opensandbox_adapter import reference_engine
from harness.policy.opensandbox import hosts_near, policy_json, rule_json, target_json

DENY_PYPI = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
ORDERED = {
    "defaultAction": "allow",
    "egress": [
        {"action": "deny", "target": "*.example.com"},
        {"action": "allow", "target": "api.example.com"},
        {"action": "allow", "target": "example.com"},
    ],
}
IPS = {
    "defaultAction": "deny",
    "egress": [
        {"action": "allow", "target": "10.1.2.3"},
        {"action": "allow", "target": "2001:DB8::1"},
        {"action": "allow", "target": "*.3.example"},
    ],
}


@pytest.mark.parametrize(
    ("policy", "host", "allowed"),
    [
        pytest.param(DENY_PYPI, "pypi.org", True, id="egress.yaml deny-with-allowlist: listed"),
        pytest.param(DENY_PYPI, "files.pythonhosted.org", False, id="egress.yaml deny-with-allowlist: other"),
        pytest.param(DENY_PYPI, "www.pypi.org", False, id="exact target matches no subdomain"),
        pytest.param(None, "anything.example", True, id="null policy allows all"),
        pytest.param({}, "anything.example", True, id="empty object allows all"),
        pytest.param({"egress": []}, "10.0.0.1", True, id="empty egress, no default allows all"),
        pytest.param({"defaultAction": "deny", "egress": []}, "a.example", False, id="explicit deny-all"),
        pytest.param({"defaultAction": "deny"}, "a.example", False, id="deny without egress"),
        pytest.param({"egress": [{"action": "allow", "target": "a.com"}]}, "b.com", False, id="default is deny"),
        pytest.param(ORDERED, "api.example.com", False, id="first match wins over later exact"),
        pytest.param(ORDERED, "example.com", True, id="wildcard never matches its apex"),
        pytest.param(ORDERED, "v1.api.example.com", False, id="wildcard matches any depth"),
        pytest.param(ORDERED, "notexample.com", True, id="wildcard needs a label boundary"),
        pytest.param(ORDERED, "API.Example.COM.", False, id="case and trailing dot ignored"),
        pytest.param(IPS, "10.1.2.3", True, id="IPv4 target"),
        pytest.param(IPS, "[2001:db8:0::1]", True, id="IPv6 target, bracketed and expanded host"),
        pytest.param(IPS, "10.9.9.3", False, id="IP host matches no wildcard"),
        pytest.param(IPS, "10.3.example", True, id="numeric labels in names"),
        pytest.param(
            {"defaultAction": "deny", "egress": [{"action": "allow", "target": "model.example."}]},
            "model.example",
            True,
            id="nemo-gym trailing-dot target",
        ),
    ],
)
def test_decision_examples(policy: dict[str, Any] | None, host: str, allowed: bool) -> None:
    parsed = NetworkPolicy.from_json(policy)
    decision = decide_egress(parsed, host)
    assert decision.allowed is allowed
    assert decision == decide_egress_naive(parsed, host)
    assert reference_engine.allows_egress(policy, host) is allowed


def test_decision_reasons_name_the_rule() -> None:
    policy = NetworkPolicy.from_json(ORDERED)
    assert decide_egress(policy, "a.example.com").reason == "egress[0] deny *.example.com"
    assert decide_egress(policy, "a.example.com").rule_index == 0
    assert decide_egress(policy, "other.org").reason == "no rule matched; defaultAction allow"
    assert decide_egress(None, "x.org").reason == "empty policy allows all egress"


def test_patch_example_first_rule_wins() -> None:
    rules = [{"action": "allow", "target": "example.com"}, {"action": "deny", "target": "example.com"}]
    merged = reference_engine.merge(DENY_PYPI, rules)
    assert merged == {
        "defaultAction": "deny",
        "egress": [{"action": "allow", "target": "example.com"}, {"action": "allow", "target": "pypi.org"}],
    }


def test_patch_incoming_rules_take_priority_over_existing() -> None:
    policy = {"defaultAction": "allow", "egress": [{"action": "allow", "target": "api.example.com"}]}
    merged = reference_engine.merge(policy, [{"action": "deny", "target": "*.Example.com"}])
    assert [rule["target"] for rule in merged["egress"]] == ["*.example.com", "api.example.com"]
    assert not reference_engine.allows_egress(merged, "api.example.com")
    assert reference_engine.allows_egress(merged, "example.com")


def test_patch_replaces_existing_rule_for_same_target_in_any_spelling() -> None:
    merged = reference_engine.merge(DENY_PYPI, [{"action": "deny", "target": "PyPI.org."}])
    assert merged == {"defaultAction": "deny", "egress": [{"action": "deny", "target": "pypi.org"}]}


def test_patch_into_empty_policy_keeps_allowing_others() -> None:
    merged = reference_engine.merge(None, [{"action": "deny", "target": "bad.example"}])
    assert merged == {"defaultAction": "allow", "egress": [{"action": "deny", "target": "bad.example"}]}
    assert reference_engine.allows_egress(merged, "good.example")


def test_delete_example_removes_listed_and_ignores_unknown() -> None:
    policy = {
        "egress": [
            {"action": "deny", "target": "bad.example.com"},
            {"action": "deny", "target": "*.blocked.org"},
            {"action": "allow", "target": "pypi.org"},
        ]
    }
    out = reference_engine.delete(policy, ["bad.example.com", "*.blocked.org", "never.there"])
    assert out == {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
    assert reference_engine.delete(policy, ["never.there"]) == policy


def test_deleting_last_rule_keeps_deny_default() -> None:
    out = reference_engine.delete({"egress": [{"action": "allow", "target": "a.com"}]}, ["A.COM"])
    assert out == {"defaultAction": "deny", "egress": []}
    assert not reference_engine.allows_egress(out, "b.com")


def test_to_json_is_canonical() -> None:
    parsed = NetworkPolicy.from_json({"egress": [{"action": "allow", "target": "*.Ex.COM."}], "defaultAction": None})
    assert parsed.to_json() == {"egress": [{"action": "allow", "target": "*.ex.com"}]}
    assert NetworkRule("deny", "2001:DB8:0::1").target == "2001:db8::1"


def _policy_with_target(target: object) -> Callable[[], object]:
    """Return a call parsing a policy whose second rule has ``target``."""
    return lambda: NetworkPolicy.from_json(
        {"egress": [{"action": "allow", "target": "a.com"}, {"action": "allow", "target": target}]}
    )


ERROR_CASES: list[tuple[str, str, Callable[[], object], str]] = [
    ("list policy", osb.INVALID_POLICY, lambda: NetworkPolicy.from_json([]), "policy"),
    ("unknown key", osb.INVALID_POLICY, lambda: NetworkPolicy.from_json({"rules": []}), "rules"),
    ("bad default", osb.INVALID_DEFAULT_ACTION, lambda: NetworkPolicy.from_json({"defaultAction": "DENY"}), "DENY"),
    ("bad default ctor", osb.INVALID_DEFAULT_ACTION, lambda: NetworkPolicy("block"), "block"),  # type: ignore[arg-type]
    ("egress object", osb.INVALID_EGRESS, lambda: NetworkPolicy.from_json({"egress": {}}), "egress"),
    ("rule not object", osb.INVALID_RULE, lambda: NetworkPolicy.from_json({"egress": ["a.com"]}), "egress[0]"),
    ("rule no target", osb.INVALID_RULE, lambda: parse_rules([{"action": "allow"}]), "rules[0]"),
    (
        "rule extra key",
        osb.INVALID_RULE,
        lambda: parse_rules([{"action": "allow", "target": "a", "ports": []}]),
        "ports",
    ),
    (
        "action case",
        osb.INVALID_ACTION,
        lambda: parse_rules([{"action": "Allow", "target": "a.com"}]),
        "rules[0].action",
    ),
    ("action ctor", osb.INVALID_ACTION, lambda: NetworkRule("reject", "a.com"), "reject"),  # type: ignore[arg-type]
    ("blank target", osb.INVALID_TARGET, _policy_with_target("  "), "egress[1].target"),
    ("spaced target", osb.INVALID_TARGET, _policy_with_target(" a.com"), "egress[1].target"),
    ("empty label", osb.INVALID_TARGET, _policy_with_target("a..com"), "a..com"),
    ("bare star", osb.INVALID_TARGET, _policy_with_target("*"), "'*'"),
    ("inner star", osb.INVALID_TARGET, _policy_with_target("a.*.com"), "a.*.com"),
    ("star over IP", osb.INVALID_TARGET, _policy_with_target("*.10.0.0.1"), "*.10.0.0.1"),
    ("hyphen label", osb.INVALID_TARGET, _policy_with_target("-a.com"), "-a.com"),
    ("numeric TLD", osb.INVALID_TARGET, _policy_with_target("010.0.0.1"), "010.0.0.1"),
    ("non-ASCII", osb.INVALID_TARGET, _policy_with_target("bücher.example"), "bücher.example"),
    ("bracketed IP", osb.INVALID_TARGET, _policy_with_target("[::1]"), "[::1]"),
    ("scoped IP", osb.INVALID_TARGET, _policy_with_target("fe80::1%eth0"), "fe80::1%eth0"),
    ("number target", osb.INVALID_TARGET, _policy_with_target(5), "int"),
    ("delete target", osb.INVALID_TARGET, lambda: parse_targets(["a.com", ""]), "targets[1]"),
    ("IPv4 CIDR", osb.UNSUPPORTED_TARGET, _policy_with_target("10.0.0.0/8"), "10.0.0.0/8"),
    ("IPv6 CIDR", osb.UNSUPPORTED_TARGET, _policy_with_target("2001:db8::/32"), "2001:db8::/32"),
    ("empty host", osb.INVALID_HOST, lambda: decide_egress(None, ""), "''"),
    ("spaced host", osb.INVALID_HOST, lambda: decide_egress(None, "a b.com"), "a b.com"),
    ("bracketed name", osb.INVALID_HOST, lambda: decide_egress(None, "[a.com]"), "[a.com]"),
    ("numeric host", osb.INVALID_HOST, lambda: decide_egress(None, "1.2.3"), "1.2.3"),
    ("wildcard host", osb.INVALID_HOST, lambda: decide_egress_naive(None, "*.a.com"), "*.a.com"),
    ("number host", osb.INVALID_HOST, lambda: decide_egress(None, 5), "int"),  # type: ignore[arg-type]
    ("rules object", osb.INVALID_RULES, lambda: parse_rules({"action": "allow"}), "dict"),
    ("targets string", osb.INVALID_RULES, lambda: parse_targets("a.com"), "str"),
]


@pytest.mark.parametrize(("code", "call", "named"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_policy_error_codes(code: str, call: Callable[[], object], named: str) -> None:
    with pytest.raises(PolicyError) as info:
        call()
    assert info.value.code == code
    assert isinstance(info.value, ValueError)
    assert named in str(info.value)


def test_every_error_code_is_exercised() -> None:
    assert {case[1] for case in ERROR_CASES} == set(ERROR_CODES)


@pytest.mark.parametrize("bad", [[], {"egress": [{"action": "allow", "target": "10.0.0.0/8"}]}])
def test_adapter_raises_value_error(bad: Any) -> None:
    with pytest.raises(ValueError):
        reference_engine.validate(bad)
    with pytest.raises(ValueError):
        reference_engine.merge(None, [{"action": "allow", "target": "*"}])
    with pytest.raises(ValueError):
        reference_engine.delete(None, [""])


def test_index_does_not_scan_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = [{"action": "allow", "target": f"h{i}.example"} for i in range(5000)]
    policy = NetworkPolicy.from_json({"defaultAction": "deny", "egress": [*rules, {"action": "deny", "target": "*.z"}]})

    def no_scan(self: NetworkRule, host: str, host_is_ip: bool | None = None) -> bool:
        raise AssertionError("the indexed decision scanned a rule")

    monkeypatch.setattr(NetworkRule, "matches", no_scan)
    assert decide_egress(policy, "h4999.example").rule_index == 4999
    assert decide_egress(policy, "a.b.z").rule_index == 5000
    assert not decide_egress(policy, "other.example").allowed
    with pytest.raises(AssertionError):
        decide_egress_naive(policy, "h1.example")


# --- Hypothesis laws --------------------------------------------------------------------------------------

PATCHES = st.lists(rule_json(), min_size=1, max_size=5)


def _parse(policy: object) -> NetworkPolicy:
    """Parse a wire policy."""
    return NetworkPolicy.from_json(policy)


@given(policy_json())
def test_round_trip(raw: dict[str, Any] | None) -> None:
    policy = _parse(raw)
    assert NetworkPolicy.from_json(policy.to_json()) == policy


@given(st.data(), st.lists(rule_json(), max_size=40))
def test_index_equals_naive_scan(data: st.DataObject, rules: list[dict[str, Any]]) -> None:
    raw = {"defaultAction": data.draw(st.sampled_from(("allow", "deny"))), "egress": rules}
    policy = _parse(raw)
    for _ in range(5):
        host = data.draw(hosts_near(raw))
        assert decide_egress(policy, host) == decide_egress_naive(policy, host)


@given(st.sampled_from((None, {}, {"egress": []}, {"egress": None})), st.data())
def test_empty_policy_allows_everything(raw: dict[str, Any] | None, data: st.DataObject) -> None:
    host = data.draw(hosts_near({"egress": [{"action": "deny", "target": "*.a.com"}]}))
    assert decide_egress(_parse(raw), host).allowed
    assert decide_egress(None, host).allowed


@given(policy_json())
def test_merge_nothing_is_identity(raw: dict[str, Any] | None) -> None:
    policy = _parse(raw)
    assert merge_rules(policy, []) == policy


@given(policy_json(), PATCHES)
def test_merge_incoming_rule_decides_its_target(raw: dict[str, Any] | None, patch: list[dict[str, Any]]) -> None:
    rules = parse_rules(patch)
    merged = merge_rules(_parse(raw), rules)
    for rule in rules:
        host = "a." + rule.suffix if rule.is_wildcard else rule.target
        first = next(r for r in rules if r.matches(host))
        assert decide_egress(merged, host).allowed == (first.action == "allow")
    merged_one = merge_rules(_parse(raw), rules[:1])
    host = "a." + rules[0].suffix if rules[0].is_wildcard else rules[0].target
    assert decide_egress(merged_one, host).allowed == (rules[0].action == "allow")


@given(policy_json(), target_json(), st.sampled_from(("allow", "deny")))
def test_merge_first_wins_within_patch(raw: dict[str, Any] | None, target: str, action: str) -> None:
    other = "deny" if action == "allow" else "allow"
    merged = merge_rules(
        _parse(raw), parse_rules([{"action": action, "target": target}, {"action": other, "target": target}])
    )
    rule = NetworkRule.from_json({"action": action, "target": target})
    assert rule in merged.egress
    assert NetworkRule(other, rule.target) not in merged.egress  # type: ignore[arg-type]


@given(policy_json(), PATCHES)
def test_merge_keeps_default_action(raw: dict[str, Any] | None, patch: list[dict[str, Any]]) -> None:
    policy = _parse(raw)
    merged = merge_rules(policy, parse_rules(patch))
    assert merged.effective_default == policy.effective_default
    if policy.default_action is not None:
        assert merged.default_action == policy.default_action


@given(policy_json(), PATCHES)
def test_merge_is_idempotent(raw: dict[str, Any] | None, patch: list[dict[str, Any]]) -> None:
    rules = parse_rules(patch)
    once = merge_rules(_parse(raw), rules)
    assert merge_rules(once, rules) == once


@given(policy_json(), st.sampled_from(("nope.test", "*.nope.test", "10.9.9.9", "2001:db8::99")))
def test_delete_unknown_is_identity(raw: dict[str, Any] | None, unknown: str) -> None:
    policy = _parse(raw)
    assert delete_targets(policy, [unknown]) == policy


@given(policy_json(), rule_json(), st.data())
def test_delete_after_merge_restores_decisions(
    raw: dict[str, Any] | None, new: dict[str, Any], data: st.DataObject
) -> None:
    policy = _parse(raw)
    rule = NetworkRule.from_json(new)
    if any(old.target == rule.target for old in policy.egress):
        return
    restored = delete_targets(merge_rules(policy, [rule]), [new["target"]])
    for _ in range(5):
        host = data.draw(hosts_near(raw, (new["target"],)))
        assert decide_egress(restored, host).allowed == decide_egress(policy, host).allowed


@given(policy_json(), st.data())
def test_deleted_targets_leave_egress(raw: dict[str, Any] | None, data: st.DataObject) -> None:
    policy = _parse(raw)
    held = [r.target.upper() for r in policy.egress]
    targets = data.draw(st.lists(st.sampled_from(held) if held else target_json(), min_size=1, max_size=3))
    out = delete_targets(policy, targets)
    gone = set(parse_targets(targets))
    assert not [r for r in out.egress if r.target in gone]
    assert [r for r in policy.egress if r.target not in gone] == list(out.egress)
    assert out.effective_default == policy.effective_default
