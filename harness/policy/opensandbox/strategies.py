"""Hypothesis strategies for OpenSandbox network policies, and the normal form policies are compared in.

Two families: the full ones (any spelling of a target: case, trailing dot, IP addresses) and the
``canonical_*`` ones (lowercase FQDNs and ``*.`` wildcards only), the forms the OpenSandbox documents name, so
a ``spec`` check drawing from them needs no choice of sandproof's. :func:`spec_hosts` gives the hosts whose
decision the documents fix (exact targets, one label below a wildcard, unrelated names).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Protocol

from hypothesis import strategies as st

from contracts.opensandbox import NetworkPolicy, canonical_host, canonical_target

__all__ = [
    "ACTIONS",
    "ANY_HOSTS",
    "CANON_PATCHES",
    "EMPTY_POLICIES",
    "IPS",
    "PATCHES",
    "UNKNOWN_TARGETS",
    "UNMATCHED_HOST",
    "Json",
    "OpenSandboxEngine",
    "canonical_policy_json",
    "canonical_rule_json",
    "canonical_target_json",
    "domain_name",
    "hosts_near",
    "invalid_policy_json",
    "normal_form",
    "policy_json",
    "rule_json",
    "spec_hosts",
    "target_host",
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
ACTIONS = st.sampled_from(("allow", "deny"))
_TARGETS = st.one_of(
    st.tuples(_DOMAINS, _CASES, st.booleans()).map(_respell),
    st.tuples(_DOMAINS.map(lambda name: "*." + name), _CASES, st.booleans()).map(_respell),
    st.sampled_from(IPS).map(str.upper),
)
_RULES = st.fixed_dictionaries({"action": ACTIONS, "target": _TARGETS})


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


PATCHES = st.lists(_RULES, min_size=1, max_size=4)
EMPTY_POLICIES: st.SearchStrategy[Json | None] = st.sampled_from((None, {}, {"egress": []}))
ANY_HOSTS = st.one_of(_DEEP_DOMAINS, st.sampled_from(IPS))
UNKNOWN_TARGETS = st.sampled_from(("nope.test", "*.nope.test", "10.9.9.9"))


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


_CANON_TARGETS = st.one_of(_DOMAINS, _DOMAINS.map(lambda name: "*." + name))
_CANON_RULES = st.fixed_dictionaries({"action": ACTIONS, "target": _CANON_TARGETS})
_CANON_POLICIES: st.SearchStrategy[Json | None] = st.one_of(
    st.sampled_from((None, {}, {"egress": []})),
    st.tuples(_DEFAULTS, st.lists(_CANON_RULES, max_size=6)).map(_full_policy),
    st.tuples(_DEFAULTS, st.lists(_CANON_RULES, min_size=1, max_size=6)).map(_full_policy),
)


CANON_PATCHES = st.lists(_CANON_RULES, min_size=1, max_size=4)


def canonical_target_json() -> st.SearchStrategy[str]:
    """Return a strategy for documented targets in canonical spelling: a lowercase FQDN or ``*.`` wildcard."""
    return _CANON_TARGETS


def canonical_rule_json() -> st.SearchStrategy[Json]:
    """Return a strategy for rules with documented, canonically spelled targets."""
    return _CANON_RULES


def canonical_policy_json() -> st.SearchStrategy[Json | None]:
    """Return a strategy for policies whose targets are documented and canonically spelled."""
    return _CANON_POLICIES


def target_host(target: str) -> str:
    """Return a host the canonical target matches (one label below a wildcard)."""
    return "a." + target[2:] if target.startswith("*.") else target


def _wildcard_bases(policies: list[Json | None]) -> set[str]:
    return {
        str(rule["target"])[2:].lower().rstrip(".")
        for policy in policies
        for rule in (policy or {}).get("egress") or []
        if str(rule["target"]).startswith("*.")
    }


def _fixed_by_docs(host: str, bases: set[str]) -> bool:
    """Tell whether no wildcard base is the host's apex, or its ancestor two or more labels up (both choices)."""
    return not any(host == base or (host.endswith("." + base) and "." in host[: -len(base) - 1]) for base in bases)


def spec_hosts(*policies: Json | None, extra: tuple[str, ...] = ()) -> list[str]:
    """Return the hosts whose decision the documents fix for these policies: targets, one label below, unrelated."""
    names: dict[str, None] = {UNMATCHED_HOST: None, "unrelated.example.org": None}
    for policy in policies:
        for rule in (policy or {}).get("egress") or []:
            target = canonical_target(rule["target"])
            if not _is_ip(target):
                names[target_host(target)] = None
    for target in extra:
        names[target_host(canonical_target(target))] = None
    bases = _wildcard_bases(list(policies)) | {t[2:] for t in extra if t.startswith("*.")}
    return [name for name in names if _fixed_by_docs(name, bases)]
