"""Reference model of OpenSandbox's egress ``networkPolicy``: parsing, decisions, PATCH merge and DELETE.

The shape is the lifecycle ``NetworkPolicy`` / egress sidecar ``/policy`` body::

    {"defaultAction": "allow" | "deny", "egress": [{"action": "allow" | "deny", "target": "..."}]}

Matching rules (sources: ``specs/opensandbox/egress.yaml``, the lifecycle 1.1.1 ``NetworkPolicy`` schema and
``docs/sources/reference/opensandbox-wire.md`` §5; where those are silent the choice is marked *chosen*):

* Rules are evaluated in order and the first matching rule decides (schema: "evaluated in order"). When no rule
  matches, ``defaultAction`` decides.
* A policy that is missing (``None``) or empty (no ``defaultAction`` and no rules, e.g. ``{}``) allows all
  egress. A policy with rules but without ``defaultAction`` denies unmatched hosts (the sidecar's default).
  ``{"defaultAction": "deny", "egress": []}`` denies everything. ``null`` for either key counts as omitted.
* ``example.com`` matches that name only. ``*.example.com`` matches every name below ``example.com`` at any
  depth but never the apex ``example.com`` itself; add the apex as its own rule. A ``*`` anywhere else is
  invalid.
* Targets and hosts compare case-insensitively, and one trailing dot is ignored (``Example.COM.`` equals
  ``example.com``). Targets are stored in that canonical form, so ``to_json`` emits lowercase targets without
  the trailing dot.
* *Chosen:* IP address targets are accepted, because NeMo Gym sends raw IP targets; they match an IP host
  exactly (IPv6 compared in canonical compressed form, brackets allowed on hosts only). Wildcards never
  match IP hosts. CIDR ranges raise ``unsupported_target`` ("IP/CIDR not yet supported").
* *Chosen:* actions are the exact lowercase strings ``allow`` / ``deny``; targets must be non-blank without
  surrounding whitespace; domain labels use ASCII ``[a-z0-9_-]`` (1-63 characters, no leading or trailing
  hyphen; internationalised names must be given in their ``xn--`` form), 253 characters at most, and the last
  label is not all digits (so ``1.2.3`` or ``010.0.0.1`` are never taken for names); unknown keys are
  rejected. Hosts passed to ``decide_egress`` follow the same syntax, without wildcards.
* PATCH (``merge_rules``): the incoming rules, first occurrence of each target kept, come first, followed by
  the existing rules whose target the patch does not name; incoming rules therefore take priority over all
  existing ones. ``defaultAction`` keeps its effective value; *chosen:* it is written out explicitly in the
  result (so merging into an empty, allow-all policy yields ``defaultAction: allow``).
* DELETE (``delete_targets``): rules whose target is listed are removed; unknown targets are ignored. When
  nothing is removed the policy is returned unchanged; otherwise the effective ``defaultAction`` is written
  out, so deleting the last rule of a deny-by-default policy leaves it denying.

Decisions use an exact-target dict plus a wildcard-suffix dict (cost grows with the host's label count,
not with the number of rules); ``decide_egress_naive`` is the linear scan used to cross-check it.
"""

from __future__ import annotations

import ipaddress
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress, repeat
from operator import attrgetter, itemgetter, methodcaller, not_
from typing import Any, Literal, cast

from contracts.errors import PolicyError

Action = Literal["allow", "deny"]
ACTIONS: tuple[Action, ...] = ("allow", "deny")
_ACTION_SET = frozenset(ACTIONS)  # what the whole-list check of contracts._bulk is given

INVALID_POLICY = "invalid_policy"
INVALID_DEFAULT_ACTION = "invalid_default_action"
INVALID_EGRESS = "invalid_egress"
INVALID_RULE = "invalid_rule"
INVALID_ACTION = "invalid_action"
INVALID_TARGET = "invalid_target"
UNSUPPORTED_TARGET = "unsupported_target"
INVALID_HOST = "invalid_host"
INVALID_RULES = "invalid_rules"
ERROR_CODES: tuple[str, ...] = (
    INVALID_POLICY,
    INVALID_DEFAULT_ACTION,
    INVALID_EGRESS,
    INVALID_RULE,
    INVALID_ACTION,
    INVALID_TARGET,
    UNSUPPORTED_TARGET,
    INVALID_HOST,
    INVALID_RULES,
)

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_MAX_NAME = 253
#: A lowercase domain or ``*.`` wildcard of whole labels, none starting or ending with a hyphen. One of at
#: most ``_SHORT`` characters has no label over 63 and is no name over 253; if its last character is no digit,
#: it is neither an IP nor a name whose last label is numeric: ``canonical_target`` keeps it as it is.
_PLAIN_LABEL = r"[a-z0-9_]+(?:-+[a-z0-9_]+)*"
_PLAIN_TARGET = re.compile(rf"(?:\*\.)?{_PLAIN_LABEL}(?:\.{_PLAIN_LABEL})*")
_SHORT = 63
#: The canonical spelling of each IPv4 octet: a dotted quad of four of these is its own canonical form.
_OCTETS = frozenset(str(octet) for octet in range(256))

__all__ = [
    "ACTIONS",
    "ERROR_CODES",
    "Action",
    "Decision",
    "NetworkPolicy",
    "NetworkRule",
    "PolicyError",
    "canonical_host",
    "canonical_target",
    "decide_egress",
    "decide_egress_naive",
    "delete_targets",
    "merge_rules",
    "parse_rules",
    "parse_targets",
]


def _is_domain(name: str) -> bool:
    """Tell whether a lowercase name without trailing dot is a syntactically valid domain."""
    if not name or len(name) > _MAX_NAME:
        return False
    return _NAME.fullmatch(name) is not None and not name.rpartition(".")[2].isdigit()


def _is_canonical_ipv4(text: str) -> bool:
    """Tell whether ``text`` is a dotted quad spelled as ``ipaddress`` writes it (no leading zeros)."""
    parts = text.split(".")
    return len(parts) == 4 and _OCTETS.issuperset(parts)


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Return the address ``text`` spells, or None when it is not a plain IP literal."""
    if ":" not in text and not text.replace(".", "").isdigit():
        return None  # neither an IPv4 literal (digits and dots) nor IPv6 (colons): no exception raised twice
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        return None
    return address


def _strip_dot(text: str) -> str:
    """Drop one trailing dot."""
    return text[:-1] if text.endswith(".") else text


def canonical_target(raw: object, where: str = "target") -> str:
    """Return the canonical form of a rule target, or raise PolicyError naming ``where``."""
    if type(raw) is str and len(raw) <= _SHORT:  # already canonical: what _checked_target returns, sooner
        if raw[-1:].isdigit():
            if _is_canonical_ipv4(raw):
                return raw
        elif _PLAIN_TARGET.fullmatch(raw):
            return raw
    return _checked_target(raw, where)


def _checked_target(raw: object, where: str) -> str:
    """Return the canonical form of a rule target, or raise PolicyError naming ``where``: the rule itself."""
    if not isinstance(raw, str):
        raise PolicyError(INVALID_TARGET, f"{where}: target must be a string, got {type(raw).__name__}")
    stripped = raw.strip()
    if not stripped:
        raise PolicyError(INVALID_TARGET, f"{where}: target must not be blank")
    if raw != stripped:
        raise PolicyError(INVALID_TARGET, f"{where}: target {raw!r} has surrounding whitespace")
    text = raw.lower()
    if "/" in text:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise PolicyError(INVALID_TARGET, f"{where}: target {raw!r} is not a domain or IP") from None
        raise PolicyError(UNSUPPORTED_TARGET, f"{where}: CIDR target {raw!r} is not supported")
    text = _strip_dot(text)
    address = _parse_ip(text)
    if address is not None:
        return str(address)
    wildcard = text.startswith("*.")
    name = text[2:] if wildcard else text
    if not _is_domain(name):
        raise PolicyError(INVALID_TARGET, f"{where}: target {raw!r} is not a domain, a '*.' wildcard domain or an IP")
    return text


def canonical_host(raw: object) -> str:
    """Return the canonical form of a host to decide on, or raise PolicyError."""
    if not isinstance(raw, str):
        raise PolicyError(INVALID_HOST, f"host must be a string, got {type(raw).__name__}")
    text = raw.lower()
    if text.startswith("[") and text.endswith("]"):
        address = _parse_ip(text[1:-1])
        if not isinstance(address, ipaddress.IPv6Address):
            raise PolicyError(INVALID_HOST, f"host {raw!r}: brackets must enclose an IPv6 address")
        return str(address)
    text = _strip_dot(text)
    address = _parse_ip(text)
    if address is not None:
        return str(address)
    if not _is_domain(text):
        raise PolicyError(INVALID_HOST, f"host {raw!r} is not a domain name or IP address")
    return text


@dataclass(frozen=True, slots=True)
class NetworkRule:
    """One egress rule; the target is stored in canonical form."""

    action: Action
    target: str

    def __post_init__(self) -> None:
        """Validate the action and canonicalise the target."""
        if self.action not in ACTIONS:
            raise PolicyError(INVALID_ACTION, f"rule: action must be 'allow' or 'deny', got {self.action!r}")
        object.__setattr__(self, "target", canonical_target(self.target))

    @property
    def is_wildcard(self) -> bool:
        """Tell whether the target is a ``*.`` wildcard."""
        return self.target.startswith("*.")

    @property
    def suffix(self) -> str:
        """Return the domain a wildcard covers (the target itself for exact rules)."""
        return self.target[2:] if self.is_wildcard else self.target

    def matches(self, host: str, host_is_ip: bool | None = None) -> bool:
        """Tell whether this rule matches a canonical host (IP-ness is computed when not given)."""
        if self.is_wildcard:
            if host_is_ip is None:
                host_is_ip = _parse_ip(host) is not None
            return not host_is_ip and host.endswith("." + self.suffix)
        return self.target == host

    @classmethod
    def _canonical(cls, action: Action, target: str) -> NetworkRule:
        """Return a rule from a valid action and an already canonical target, skipping ``__post_init__``."""
        rule = object.__new__(cls)
        _set_action(rule, action)  # frozen: written through the slots, as __init__ does
        _set_target(rule, target)
        return rule

    @classmethod
    def _canonical_many(cls, actions: Sequence[Action], targets: Sequence[str]) -> tuple[NetworkRule, ...]:
        """Return rules from valid actions and already canonical targets, as ``_canonical`` would one by one."""
        rules = tuple(map(object.__new__, repeat(cls, len(targets))))
        deque(map(_set_action, rules, actions), maxlen=0)  # the slots' setters, called from C
        deque(map(_set_target, rules, targets), maxlen=0)
        return rules

    @classmethod
    def from_json(cls, obj: object, where: str = "rule") -> NetworkRule:
        """Parse one ``{"action", "target"}`` object, naming ``where`` in errors."""
        if not isinstance(obj, Mapping):
            raise PolicyError(INVALID_RULE, f"{where}: rule must be an object, got {type(obj).__name__}")
        unknown = sorted(str(key) for key in obj if key not in ("action", "target"))
        if unknown:
            raise PolicyError(INVALID_RULE, f"{where}: unknown keys {unknown}")
        for key in ("action", "target"):
            if key not in obj:
                raise PolicyError(INVALID_RULE, f"{where}: missing {key!r}")
        action = obj["action"]
        if action not in ACTIONS:
            raise PolicyError(INVALID_ACTION, f"{where}.action: must be 'allow' or 'deny', got {action!r}")
        target = canonical_target(obj["target"], f"{where}.target")
        return cls._canonical(cast(Action, action), target)

    def to_json(self) -> dict[str, str]:
        """Return the wire form of the rule."""
        return {"action": self.action, "target": self.target}


_set_action = NetworkRule.__dict__["action"].__set__  # the slots' descriptors: what a frozen __init__ uses
_set_target = NetworkRule.__dict__["target"].__set__
_target_attribute = attrgetter("target")
_is_wildcard_target = methodcaller("startswith", "*.")
_suffix_of_wildcard = itemgetter(slice(2, None))


@dataclass(frozen=True)
class _Index:
    """Exact-target and wildcard-suffix lookups holding each key's first rule position."""

    exact: dict[str, int] = field(default_factory=dict)
    wildcard: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """Outcome of one egress decision."""

    allowed: bool
    reason: str
    rule_index: int | None = None


@dataclass(frozen=True)
class NetworkPolicy:
    """An OpenSandbox network policy; ``default_action`` None means the key was omitted."""

    default_action: Action | None = None
    egress: tuple[NetworkRule, ...] = ()

    def __post_init__(self) -> None:
        """Validate the default action and freeze the rule list."""
        if self.default_action is not None and self.default_action not in ACTIONS:
            raise PolicyError(
                INVALID_DEFAULT_ACTION, f"defaultAction must be 'allow' or 'deny', got {self.default_action!r}"
            )
        object.__setattr__(self, "egress", tuple(self.egress))

    @property
    def is_empty(self) -> bool:
        """Tell whether the policy is empty, i.e. allows all egress."""
        return self.default_action is None and not self.egress

    @property
    def effective_default(self) -> Action:
        """Return the action applied to hosts that no rule matches."""
        if self.is_empty:
            return "allow"
        return self.default_action or "deny"

    @cached_property
    def _index(self) -> _Index:
        """Build the lookup index on first use."""
        return _index_of(tuple(map(_target_attribute, self.egress)))

    @classmethod
    def from_json(cls, obj: object) -> NetworkPolicy:
        """Parse a wire policy; ``None`` is the empty policy."""
        if obj is None:
            return cls()
        if not isinstance(obj, Mapping):
            raise PolicyError(INVALID_POLICY, f"policy must be an object, got {type(obj).__name__}")
        unknown = sorted(str(key) for key in obj if key not in ("defaultAction", "egress"))
        if unknown:
            raise PolicyError(INVALID_POLICY, f"policy: unknown keys {unknown}")
        default = obj.get("defaultAction")
        if default is not None and default not in ACTIONS:
            raise PolicyError(INVALID_DEFAULT_ACTION, f"defaultAction must be 'allow' or 'deny', got {default!r}")
        egress = obj.get("egress")
        if egress is None:
            egress = []
        if not isinstance(egress, list | tuple):
            raise PolicyError(INVALID_EGRESS, f"egress must be a list, got {type(egress).__name__}")
        plain = _plain_rules(egress) if egress else None
        if plain is None:
            rules = tuple(
                [_plain_rule(item) or NetworkRule.from_json(item, f"egress[{i}]") for i, item in enumerate(egress)]
            )
            return cls(cast(Action | None, default), rules)
        actions, targets = cast("tuple[list[Action], list[str]]", plain)
        policy = cls(cast(Action | None, default), NetworkRule._canonical_many(actions, targets))
        policy.__dict__["_index"] = _index_of(targets)  # what the cached property would build from the same targets
        return policy

    def to_json(self) -> dict[str, Any]:
        """Return the wire form; ``defaultAction`` is omitted when it was."""
        out: dict[str, Any] = {}
        if self.default_action is not None:
            out["defaultAction"] = self.default_action
        out["egress"] = [rule.to_json() for rule in self.egress]
        return out


def _plain_rules(egress: Sequence[object]) -> tuple[list[str], list[str]] | None:
    """Return ``contracts._bulk.plain_rules(egress)``, loading that module with the first policy that has rules."""
    from contracts._bulk import plain_rules

    return plain_rules(egress, _ACTION_SET)


def _index_of(targets: Sequence[str]) -> _Index:
    """Return the index of rules with these targets, in order."""
    backwards = targets[::-1]  # the first position of a key is written last
    positions = range(len(targets) - 1, -1, -1)
    wild = list(map(_is_wildcard_target, backwards))
    if not any(wild):
        return _Index(dict(zip(backwards, positions, strict=True)))
    exact = dict(zip(compress(backwards, map(not_, wild)), compress(positions, map(not_, wild)), strict=True))
    suffixes = map(_suffix_of_wildcard, compress(backwards, wild))
    return _Index(exact, dict(zip(suffixes, compress(positions, wild), strict=True)))


def _plain_rule(obj: object) -> NetworkRule | None:
    """Return the rule of a plain ``{"action", "target"}`` dict with a valid target, or None.

    None sends the item through ``NetworkRule.from_json``, which checks it again and names it in its error;
    this only saves valid rules the formatting of that name and the search for unknown keys.
    """
    if type(obj) is not dict or len(obj) != 2:
        return None
    action = obj.get("action")
    target = obj.get("target")
    if action not in ACTIONS or target is None:
        return None
    try:
        return NetworkRule._canonical(cast(Action, action), canonical_target(target))
    except PolicyError:
        return None


def _decision_for(policy: NetworkPolicy, position: int | None) -> Decision:
    """Turn a matched rule position (or none) into a Decision."""
    if position is not None:
        rule = policy.egress[position]
        return Decision(rule.action == "allow", f"egress[{position}] {rule.action} {rule.target}", position)
    if policy.is_empty:
        return Decision(True, "empty policy allows all egress")
    default = policy.effective_default
    return Decision(default == "allow", f"no rule matched; defaultAction {default}")


def decide_egress(policy: NetworkPolicy | None, host: str) -> Decision:
    """Decide whether the sandbox may reach ``host`` using the rule index."""
    policy = policy or NetworkPolicy()
    name = canonical_host(host)
    index = policy._index
    best = index.exact.get(name)
    if index.wildcard and _parse_ip(name) is None:
        rest = name
        while "." in rest:
            rest = rest.split(".", 1)[1]
            position = index.wildcard.get(rest)
            if position is not None and (best is None or position < best):
                best = position
    return _decision_for(policy, best)


def decide_egress_naive(policy: NetworkPolicy | None, host: str) -> Decision:
    """Decide like ``decide_egress`` by scanning every rule in order."""
    policy = policy or NetworkPolicy()
    name = canonical_host(host)
    is_ip = _parse_ip(name) is not None
    for position, rule in enumerate(policy.egress):
        if rule.matches(name, is_ip):
            return _decision_for(policy, position)
    return _decision_for(policy, None)


def parse_rules(obj: object) -> tuple[NetworkRule, ...]:
    """Parse a PATCH body: a list of rule objects."""
    if not isinstance(obj, list | tuple):
        raise PolicyError(INVALID_RULES, f"rules must be a list, got {type(obj).__name__}")
    return tuple(NetworkRule.from_json(item, f"rules[{i}]") for i, item in enumerate(obj))


def parse_targets(obj: object) -> tuple[str, ...]:
    """Parse a DELETE body: a list of target strings, canonicalised."""
    if not isinstance(obj, list | tuple):
        raise PolicyError(INVALID_RULES, f"targets must be a list, got {type(obj).__name__}")
    return tuple(canonical_target(item, f"targets[{i}]") for i, item in enumerate(obj))


def merge_rules(policy: NetworkPolicy | None, rules: Sequence[NetworkRule]) -> NetworkPolicy:
    """Apply the sidecar's PATCH: incoming rules first (first per target wins), then untouched old rules."""
    base = policy or NetworkPolicy()
    if not rules:
        return base
    seen: set[str] = set()
    merged: list[NetworkRule] = []
    for rule in (*rules, *base.egress):
        if rule.target not in seen:
            seen.add(rule.target)
            merged.append(rule)
    return NetworkPolicy(base.effective_default, tuple(merged))


def delete_targets(policy: NetworkPolicy | None, targets: Iterable[str]) -> NetworkPolicy:
    """Apply the sidecar's DELETE: drop rules with a listed target, ignoring unknown targets."""
    base = policy or NetworkPolicy()
    drop = {canonical_target(target, f"targets[{i}]") for i, target in enumerate(targets)}
    kept = tuple(rule for rule in base.egress if rule.target not in drop)
    if len(kept) == len(base.egress):
        return base
    return NetworkPolicy(base.effective_default, kept)
