"""Building OpenSandbox policies fast: ``canonical_target``'s shortcut for already canonical targets and
``NetworkPolicy.from_json``'s way past the per-rule error naming must give exactly what the rule gives.

``_checked_target`` is the rule; ``canonical_target`` may only answer sooner for a target the rule keeps as it
is. ``WRONG`` holds plausible too-lenient shortcuts: each must disagree with the rule on some near miss.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import _bulk, opensandbox
from contracts._bulk import BULK_MIN
from contracts.opensandbox import (
    NetworkPolicy,
    NetworkRule,
    PolicyError,
    _checked_target,
    canonical_target,
    decide_egress,
    decide_egress_naive,
)

NEAR_MISSES = (
    "example.com",
    "*.example.com",
    "a_b-c.example.io",
    "1.2.3.4",
    "255.255.255.255",
    "",
    " ",
    "Example.com",
    "example.com.",
    "example..com",
    ".example.com",
    "-a.example.com",
    "a-.example.com",
    "a.-b.com",
    "*.-a.com",
    "*.",
    "*",
    "**.a.com",
    "*.*.a.com",
    "a.*.com",
    "a.123",
    "a.b12",
    "a" * 63 + ".com",
    "a" * 64 + ".com",
    "a" * 59 + ".com",
    "*." + "a" * 62 + ".com",
    "01.2.3.4",
    "1.2.3.04",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "1.2.3.4.",
    "::1",
    "2001:DB8::1",
    "10.0.0.0/8",
    "bücher.de",
    "xn--bcher-kva.de",
)


def _rule(raw: object) -> str:
    """Return what the rule makes of ``raw``: its canonical form, or the error code."""
    try:
        return _checked_target(raw, "target")
    except PolicyError as exc:
        return "error:" + exc.code


def _fast(raw: object) -> str:
    try:
        return canonical_target(raw)
    except PolicyError as exc:
        return "error:" + exc.code


@pytest.mark.parametrize("raw", NEAR_MISSES)
def test_the_shortcut_agrees_with_the_rule_on_near_misses(raw: str) -> None:
    assert _fast(raw) == _rule(raw)


_labels = st.text(alphabet="abz09_-AZ", min_size=0, max_size=66)
_targets = st.one_of(
    st.builds(lambda p, ls: p + ".".join(ls), st.sampled_from(("", "", "*.", "*", ".")), st.lists(_labels, max_size=4)),
    st.builds(lambda qs: ".".join(qs), st.lists(st.sampled_from(("0", "1", "01", "255", "256", "10", "")), max_size=5)),
)


@settings(max_examples=150, deadline=None)
@given(_targets)
def test_the_shortcut_agrees_with_the_rule_on_drawn_targets(raw: str) -> None:
    assert _fast(raw) == _rule(raw)


#: Plausible too-lenient shortcuts, each a patch of one ``contracts.opensandbox`` name.
WRONG: dict[str, Callable[[], tuple[str, object]]] = {
    "no length bound": lambda: ("_SHORT", 1000),
    "hyphens anywhere": lambda: ("_PLAIN_TARGET", opensandbox.re.compile(r"(?:\*\.)?[a-z0-9_.-]+")),
    "octets with a leading zero": lambda: ("_OCTETS", opensandbox._OCTETS | {"01", "04"}),
    "uppercase": lambda: ("_PLAIN_TARGET", opensandbox.re.compile(r"(?:\*\.)?[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")),
}


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_each_wrong_shortcut_is_caught(wrong: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opensandbox, *WRONG[wrong]())
    assert any(_fast(raw) != _rule(raw) for raw in NEAR_MISSES), f"no near miss catches: {wrong}"


def test_rules_built_past_the_checks_equal_rules_built_through_them() -> None:
    items = [{"action": "allow", "target": t} for t in NEAR_MISSES if not _rule(t).startswith("error:")]
    items += [{"action": "deny", "target": "Example.COM."}, {"target": "a.io", "action": "allow"}]
    policy = NetworkPolicy.from_json({"defaultAction": "deny", "egress": items})
    assert policy.egress == tuple(NetworkRule(item["action"], item["target"]) for item in items)
    assert all(type(rule) is NetworkRule for rule in policy.egress)


@pytest.mark.parametrize(
    ("item", "code", "named"),
    [
        ({"action": "allow", "target": "-a.com"}, "invalid_target", "egress[1].target"),
        ({"action": "permit", "target": "a.com"}, "invalid_action", "egress[1].action"),
        ({"action": "allow", "target": "a.com", "x": 1}, "invalid_rule", "egress[1]"),
        ({"action": "allow"}, "invalid_rule", "egress[1]"),
        ({"action": "allow", "target": None}, "invalid_target", "egress[1].target"),
    ],
)
def test_a_bad_rule_is_still_named(item: dict[str, object], code: str, named: str) -> None:
    with pytest.raises(PolicyError) as raised:
        NetworkPolicy.from_json({"egress": [{"action": "allow", "target": "a.com"}, item]})
    assert raised.value.code == code
    assert named in str(raised.value)


def test_a_10k_rule_policy_decides_like_the_linear_scan() -> None:
    rng = random.Random(22)
    egress = []
    for i in range(10_000):
        kind = i % 3
        target = (
            f"svc{i % 300}.example{i % 5}.com"
            if kind == 0
            else f"*.zone{i % 200}.example{i % 5}.com"
            if kind == 1
            else f"10.{rng.randrange(4)}.{rng.randrange(8)}.{rng.randrange(256)}"
        )
        egress.append({"action": rng.choice(("allow", "deny")), "target": target})
    policy = NetworkPolicy.from_json({"defaultAction": "deny", "egress": egress})
    for _ in range(100):
        host = rng.choice(
            (
                f"svc{rng.randrange(320)}.example{rng.randrange(6)}.com",
                f"a.zone{rng.randrange(220)}.example{rng.randrange(6)}.com",
                f"10.{rng.randrange(4)}.{rng.randrange(8)}.{rng.randrange(256)}",
            )
        )
        assert decide_egress(policy, host) == decide_egress_naive(policy, host)


# The whole-list way in (``contracts._bulk.plain_rules``, through ``contracts.opensandbox._plain_rules``): a long egress list of plain, canonical rules.

FILLER = [
    {"action": "allow" if i % 3 else "deny", "target": f"svc{i}.team{i % 7}.example.com"} for i in range(BULK_MIN)
]
ITEM_MISSES: tuple[object, ...] = (
    {"action": "permit", "target": "a.com"},
    {"action": "ALLOW", "target": "a.com"},
    {"action": "allow"},
    {"target": "a.com"},
    {"action": "allow", "target": "a.com", "note": "x"},
    {"action": "allow", "target": None},
    {"action": "allow", "target": 7},
    {"action": ["allow"], "target": "a.com"},
    ["allow", "a.com"],
    "allow",
    None,
)


def _per_rule(items: list[Any]) -> tuple[tuple[str, str], ...] | str:
    """Return what the per-rule path makes of ``items``: (action, target) pairs, or the error code."""
    try:
        return tuple((rule.action, rule.target) for rule in (NetworkRule.from_json(item) for item in items))
    except PolicyError as exc:
        return "error:" + exc.code


def _agrees(items: list[Any]) -> bool:
    """Tell whether the whole-list path declines ``items`` or takes them just as the per-rule path would."""
    plain = opensandbox._plain_rules(items)
    return plain is None or tuple(zip(*plain, strict=True)) == _per_rule(items)


def _with(item: object) -> list[Any]:
    return [*FILLER[:100], item, *FILLER[100:], item]


def test_a_long_plain_list_takes_the_whole_list_path() -> None:
    items = [*FILLER, *({"action": "allow", "target": t} for t in ("*.cdn.example.org", "10.1.2.3", "a-b_c.io"))]
    assert opensandbox._plain_rules(items) is not None
    policy = NetworkPolicy.from_json({"defaultAction": "deny", "egress": items})
    assert policy.egress == tuple(NetworkRule(item["action"], item["target"]) for item in items)
    assert all(type(rule) is NetworkRule for rule in policy.egress)
    rebuilt = NetworkPolicy(policy.default_action, policy.egress)  # its index built on first use, the other way
    assert policy._index == rebuilt._index
    assert policy._index.wildcard == {"cdn.example.org": BULK_MIN}


def test_a_short_list_takes_the_per_rule_path() -> None:
    assert opensandbox._plain_rules(FILLER[:-1]) is None


@pytest.mark.parametrize("raw", NEAR_MISSES)
def test_targets_agree_with_the_rule_in_a_long_list(raw: str) -> None:
    assert _agrees(_with({"action": "allow", "target": raw}))


@pytest.mark.parametrize("item", ITEM_MISSES, ids=repr)
def test_items_that_are_no_plain_rule_take_the_per_rule_path(item: object) -> None:
    assert opensandbox._plain_rules(_with(item)) is None
    with pytest.raises(PolicyError) as raised:
        NetworkPolicy.from_json({"egress": _with(item)})
    assert "egress[100]" in str(raised.value)  # the per-rule path names the first bad rule


def test_a_long_list_with_a_duplicate_target_keeps_the_first_position() -> None:
    items = _with({"action": "deny", "target": "dup.example.com"})
    policy = NetworkPolicy.from_json({"defaultAction": "allow", "egress": items})
    assert decide_egress(policy, "dup.example.com").rule_index == 100
    assert decide_egress(policy, "dup.example.com") == decide_egress_naive(policy, "dup.example.com")


def _lenient_pton(family: int, text: str) -> bytes:
    return socket.inet_aton(text)  # takes 01, 0x1 and 1.2.3 too


#: Plausible wrong whole-list checks, each a patch of one name in ``contracts._bulk`` (or of what
#: ``contracts.opensandbox`` hands it).
WRONG_BULK: dict[str, Callable[[], tuple[object, str, object]]] = {
    "any action passes": lambda: (opensandbox, "_ACTION_SET", frozenset(("allow", "deny", "permit", "ALLOW"))),
    "uppercase passes": lambda: (
        _bulk,
        "_ALLOWED",
        {**_bulk._ALLOWED, "egress": _bulk._ALLOWED["egress"] + b"ABCEGM"},
    ),
    "long names pass": lambda: (_bulk, "_LONGEST", 1000),
    "hyphens at label edges pass": lambda: (_bulk, "_hyphens_inside", lambda shape: True),
    "a lenient address parser": lambda: (_bulk, "_inet_pton", _lenient_pton),
    "targets ending in a digit are not checked": lambda: (_bulk, "_addresses", lambda texts: [0] * len(texts)),
}


@pytest.mark.parametrize("wrong_bulk", sorted(WRONG_BULK))
def test_each_wrong_whole_list_check_is_caught(wrong_bulk: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(*WRONG_BULK[wrong_bulk]())
    items = [{"action": "allow", "target": raw} for raw in NEAR_MISSES] + [i for i in ITEM_MISSES if type(i) is dict]
    caught = [item for item in items if not _agrees(_with(item))]
    assert caught, f"no near miss catches the wrong check: {wrong_bulk}"
