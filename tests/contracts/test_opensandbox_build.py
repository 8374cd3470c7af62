"""Building OpenSandbox policies fast: ``canonical_target``'s shortcut for already canonical targets and
``NetworkPolicy.from_json``'s way past the per-rule error naming must give exactly what the rule gives.

``_checked_target`` is the rule; ``canonical_target`` may only answer sooner for a target the rule keeps as it
is. ``WRONG`` holds plausible too-lenient shortcuts: each must disagree with the rule on some near miss.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import opensandbox
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


@pytest.fixture(params=sorted(WRONG))
def wrong(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name, value = WRONG[request.param]()
    monkeypatch.setattr(opensandbox, name, value)
    yield request.param


def test_each_wrong_shortcut_is_caught(wrong: str) -> None:
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
