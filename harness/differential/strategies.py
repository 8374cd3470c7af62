"""Hypothesis strategies for generated differential programs: creates, lists and steps on sandbox slots."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from harness.differential.canonical import INVALID_CREATES, create, on, renew
from harness.differential.programs import Auth, Program, RelTime, Step

__all__ = ["HUGE_CREATE", "programs", "steps"]

_META_KEYS = ("team", "tier", "purpose", "app.kubernetes.io/name", "example.com/owner")
_META_VALUES = ("a", "b", "demo", "x-1", "v.2", "")
_STATES = ("Running", "running", "Paused", "PAUSED", "Failed", "Pending", "bogus")
_SLOTS = st.sampled_from((1, 1, 1, 2, 2, 3, 0))


@st.composite
def _valid_create(draw: st.DrawFn) -> Step:
    """Draw a create the real server accepts."""
    fields: dict[str, Any] = {
        "timeout": draw(st.sampled_from((600, 60, 3600, None, "600", 600.0, " 600 ", 86_400 * 365, 10**10))),
        "resourceLimits": draw(
            st.sampled_from(
                (
                    {"cpu": "1", "memory": "2Gi"},
                    {"cpu": "500m", "memory": "512Mi"},
                    {},
                    {"cpu": "0.25", "memory": "1G", "gpu": "1"},
                    {"memory": "64m"},
                )
            )
        ),
        "entrypoint": draw(
            st.sampled_from((["tail", "-f", "/dev/null"], ["sleep", "infinity"], ["python", "-c", "1"]))
        ),
    }
    if draw(st.booleans()):
        fields["metadata"] = draw(
            st.dictionaries(st.sampled_from(_META_KEYS), st.sampled_from(_META_VALUES), max_size=3)
        )
    env = draw(st.sampled_from((None, {"A": "1"}, {"A": "1", "B": None}, {})))
    if env is not None:
        fields["env"] = env
    extra = draw(st.sampled_from(("valid",) * 6 + ("platform", "unknown-field", "secure-access-false", "extensions")))
    if extra == "extensions":
        fields["extensions"] = {"sandproof": "1"}
    elif extra == "platform":
        fields["platform"] = {"os": "linux", "arch": "arm64"}
    elif extra == "unknown-field":
        fields["sandproofExtra"] = 1
    elif extra == "secure-access-false":
        fields["secureAccess"] = False
    return create(extra, **fields)


_POLICY_TARGETS = (
    "pypi.org",
    "*.example.com",
    "example.com.",
    "EXAMPLE.com",
    "xn--bcher-kva.example",
    "1.2.3.4",
    "10.0.0.0/8",
    "2001:db8::/32",
    "*",
    "example.com:443",
    "http://example.com",
    "a b",
    "x" * 300,
)
_POLICY_ACTIONS = ("allow", "deny", "ALLOW", "block", 1, None)


@st.composite
def _rule(draw: st.DrawFn) -> Any:
    """Draw an egress rule: mostly well-formed, sometimes missing a key or of the wrong type."""
    shape = draw(st.sampled_from(("rule",) * 6 + ("no-target", "no-action", "empty-target", "not-object")))
    if shape == "not-object":
        return draw(st.sampled_from(("pypi.org", 1, [], None)))
    rule: dict[str, Any] = {
        "action": draw(st.sampled_from(_POLICY_ACTIONS)),
        "target": draw(st.sampled_from(_POLICY_TARGETS)),
    }
    if shape == "no-target":
        del rule["target"]
    elif shape == "no-action":
        del rule["action"]
    elif shape == "empty-target":
        rule["target"] = ""
    return rule


@st.composite
def _policy(draw: st.DrawFn) -> Any:
    """Draw a ``networkPolicy`` value: a policy object, sometimes with wrong types, or not an object."""
    if draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from(([], "deny", 1, True)))
    policy: dict[str, Any] = {}
    default = draw(st.sampled_from(("deny", "allow", "DENY", "bogus", 1, None, "<absent>")))
    if default != "<absent>":
        policy["defaultAction"] = default
    if draw(st.integers(0, 7)) == 0:
        policy["egress"] = draw(st.sampled_from(({}, "pypi.org", None)))
    elif draw(st.booleans()):
        policy["egress"] = draw(st.lists(_rule(), max_size=3))
    return policy


@st.composite
def _policy_create(draw: st.DrawFn) -> Step:
    """Draw a create with a ``networkPolicy``, sometimes with another field wrong too (which check wins)."""
    fields: dict[str, Any] = {"networkPolicy": draw(_policy())}
    other = draw(st.sampled_from(("",) * 4 + ("secure-access", "bad-limits", "bad-label", "timeout-low")))
    if other == "secure-access":
        fields["secureAccess"] = True
    elif other == "bad-limits":
        fields["resourceLimits"] = {"cpu": "lots"}
    elif other == "bad-label":
        fields["metadata"] = {"team": "a b"}
    elif other == "timeout-low":
        fields["timeout"] = 10
    return create("network-policy" + (f"+{other}" if other else ""), **fields)


#: A create body over 1 MiB (one environment variable of 1 MiB).
HUGE_CREATE = create("huge-body", env={"BIG": "x" * (1 << 20)})

_FIELDS = (
    "image",
    "snapshotId",
    "timeout",
    "resourceLimits",
    "resourceRequests",
    "entrypoint",
    "env",
    "metadata",
    "secureAccess",
    "extensions",
    "platform",
    "volumes",
    "lifecycle",
    "credentialProxy",
    "templateId",
)
_ODD_VALUES: tuple[Any, ...] = (None, 0, -1, 2.0, 1.5, "", "x", "y", True, [], ["x"], {}, {"x": "y"}, {"x": 1}, [{}])


@st.composite
def _mutated_create(draw: st.DrawFn) -> Step:
    """Draw a create with one or two fields set to an odd JSON value (wrong types, empties, nulls)."""
    names = draw(st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=2, unique=True))
    fields = {name: draw(st.sampled_from(_ODD_VALUES)) for name in names}
    return create("mutate-" + "+".join(names), **fields)


_BAD_JSON = (
    b"{",
    b"[",
    b"nul",
    b"\xff\xfe",
    b'{"image": 1}',
    b'{"image": {"uri": "python:3.11"}, "timeout": 600,}',
    b"123",
    b'"text"',
    b"{}",
    b'{"image": {"uri": "python:3.11"}} trailing',
)


@st.composite
def _bad_json_create(draw: st.DrawFn) -> Step:
    """Draw a create whose body is not a valid create document at all."""
    return Step("create", "bad-json", raw=draw(st.sampled_from(_BAD_JSON)))


def _invalid_create() -> st.SearchStrategy[Step]:
    """Draw a create the real server refuses, or may: canonical, mutated, with a policy, or not JSON."""
    canonical = st.sampled_from((*INVALID_CREATES, HUGE_CREATE))
    return st.one_of(canonical, _mutated_create(), _policy_create(), _bad_json_create())


@st.composite
def _list_step(draw: st.DrawFn) -> Step:
    """Draw a list with metadata and state filters and pagination, sometimes invalid."""
    params: list[tuple[str, str]] = []
    variant = "valid"
    pairs = draw(st.dictionaries(st.sampled_from(_META_KEYS[:3]), st.sampled_from(_META_VALUES[:3]), max_size=2))
    if pairs:
        params.append(("metadata", "&".join(f"{k}={v}" for k, v in pairs.items())))
    elif draw(st.integers(0, 5)) == 0:
        params.append(("metadata", draw(st.sampled_from(("=&&", "a", "team", "team==a", "=a", "team=a&team=b")))))
        variant = "bad-metadata"
    params += [("state", s) for s in draw(st.lists(st.sampled_from(_STATES), max_size=2))]
    for name in ("page", "pageSize"):
        value = draw(st.sampled_from((None, None, "1", "2", "200", "02", "+2", " 2", "0", "-1", "x", "201", "1.5", "")))
        if value is not None:
            params.append((name, value))
            if value in ("0", "-1", "x", "201", "1.5", ""):
                variant = "bad-page"
    return Step("list", variant, params=tuple(params))


_RENEWS: tuple[tuple[str, Any], ...] = (
    ("future", RelTime(3600)),
    ("future-z", RelTime(1800, "Z")),
    ("future-plus2", RelTime(900, "plus2")),
    ("future-naive", RelTime(1200, "naive")),
    ("absolute", "2030-01-01T00:00:00Z"),
    ("past", RelTime(-3600)),
    ("epoch-int", 5),
    ("epoch-future", 1_900_000_000),
    ("garbage", "not-a-time"),
    ("garbage", "2030-13-01T00:00:00Z"),
    ("date-only", "2030-06-01"),
    ("epoch-text", "1900000000"),
    ("epoch-float", 1_900_000_000.5),
    ("bool", True),
    ("object", {}),
    ("null", None),
)
_ENDPOINTS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("direct-execd", "44772", ()),
    ("direct-egress", "18080", ()),
    ("server-proxy", "44772", (("use_server_proxy", "true"),)),
    ("server-proxy", "18080", (("use_server_proxy", "true"),)),
    ("invalid-port", "0", ()),
    ("invalid-port", "70000", ()),
    ("port-not-int", "x", ()),
    ("port-not-int", "1.5", ()),
    ("direct-http", "8080", ()),
    ("direct-http", "65535", ()),
    ("direct-http", "00044772", ()),
    ("server-proxy", "8080", (("use_server_proxy", "True"),)),
    ("server-proxy", "44772", (("use_server_proxy", "1"),)),
    ("direct-execd", "44772", (("use_server_proxy", "0"),)),
    ("bad-proxy-flag", "44772", (("use_server_proxy", "maybe"),)),
    ("bad-proxy-flag", "44772", (("use_server_proxy", ""),)),
)


_POLICY_BODIES: tuple[tuple[str, str, Any], ...] = (
    ("policy-get", "valid", None),
    ("policy-put", "valid", {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}),
    ("policy-put", "bad-body", [1]),
    ("policy-put", "bad-rule", {"egress": [{"action": "allow"}]}),
    ("policy-patch", "valid", [{"action": "allow", "target": "*.example.com"}]),
    ("policy-patch", "bad-body", {"x": 1}),
    ("policy-delete", "valid", ["pypi.org"]),
    ("policy-delete", "bad-body", None),
)


@st.composite
def _policy_step(draw: st.DrawFn) -> Step:
    """Draw a read, replace, patch or delete of a sandbox's network policy (the sidecar's ``/policy``)."""
    operation, variant, body = draw(st.sampled_from(_POLICY_BODIES))
    slot = draw(_SLOTS)
    if draw(st.integers(0, 9)) == 0:
        return on(operation, slot, "malformed", raw=b"{bad")
    return on(operation, slot, variant, body=body)


@st.composite
def _sandbox_step(draw: st.DrawFn) -> Step:
    """Draw a step on a sandbox slot."""
    slot = draw(_SLOTS)
    operation = draw(st.sampled_from(("get", "get", "pause", "resume", "delete", "renew", "endpoint", "policy")))
    if operation == "policy":
        return draw(_policy_step())
    if operation == "renew":
        if draw(st.integers(0, 6)) == 0:
            return on("renew", slot, "malformed", raw=draw(st.sampled_from((b"{bad", b"", b"[]", b"{}"))))
        variant, value = draw(st.sampled_from(_RENEWS))
        return renew(slot, variant, value)
    if operation == "endpoint":
        variant, port, params = draw(st.sampled_from(_ENDPOINTS))
        return on("endpoint", slot, variant, port=port, params=params)
    return on(operation, slot)


def _with_auth(step: Step, auth: Auth) -> Step:
    """Send a step with a missing or wrong key."""
    return replace(step, auth=auth, variant=f"auth-{auth}") if auth != "ok" else step


_STEP_KINDS: dict[str, Any] = {
    "sandbox": _sandbox_step,
    "list": _list_step,
    "valid-create": _valid_create,
    "invalid-create": _invalid_create,
}
#: How often each kind of step is drawn (Hypothesis's ``one_of`` does not pick its branches evenly).
_KINDS = ("sandbox",) * 10 + ("list",) * 3 + ("valid-create",) * 3 + ("invalid-create",) * 4


@st.composite
def steps(draw: st.DrawFn) -> Step:
    """Draw any step: steps on sandbox slots, lists, valid creates and invalid ones (canonical, mutated, with a
    ``networkPolicy``, not JSON)."""
    kind = draw(st.sampled_from(_KINDS))
    step = draw(_STEP_KINDS[kind]())
    step = _with_auth(step, draw(st.sampled_from(("ok",) * 12 + ("missing", "wrong"))))
    if draw(st.integers(0, 9)) == 0:
        step = replace(step, request_id="sandproof-req-gen")
    if step.operation in ("get", "list") and draw(st.integers(0, 9)) == 0:
        step = replace(step, prefix="")
    return step


def programs(min_steps: int = 3, max_steps: int = 8) -> st.SearchStrategy[Program]:
    """Return a strategy of programs of `min_steps`..`max_steps` steps that start with a valid create."""
    return st.builds(
        lambda first, rest: Program("generated", (first, *rest)),
        _valid_create(),
        st.lists(steps(), min_size=min_steps - 1, max_size=max_steps - 1),
    )
