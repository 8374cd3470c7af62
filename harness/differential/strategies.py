"""Hypothesis strategies for generated differential programs: creates, lists and steps on sandbox slots."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from harness.differential.canonical import INVALID_CREATES, create, on, renew
from harness.differential.programs import Auth, Program, RelTime, Step

__all__ = ["programs", "steps"]

_META_KEYS = ("team", "tier", "purpose", "app.kubernetes.io/name", "example.com/owner")
_META_VALUES = ("a", "b", "demo", "x-1", "v.2", "")
_STATES = ("Running", "running", "Paused", "PAUSED", "Failed", "Pending", "bogus")
_SLOTS = st.sampled_from((1, 1, 1, 2, 2, 3, 0))


@st.composite
def _valid_create(draw: st.DrawFn) -> Step:
    """Draw a create the real server accepts."""
    fields: dict[str, Any] = {
        "timeout": draw(st.sampled_from((600, 60, 3600, None, "600", 600.0))),
        "resourceLimits": draw(
            st.sampled_from(({"cpu": "1", "memory": "2Gi"}, {"cpu": "500m", "memory": "512Mi"}, {}))
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


@st.composite
def _list_step(draw: st.DrawFn) -> Step:
    """Draw a list with metadata and state filters and pagination, sometimes invalid."""
    params: list[tuple[str, str]] = []
    variant = "valid"
    pairs = draw(st.dictionaries(st.sampled_from(_META_KEYS[:3]), st.sampled_from(_META_VALUES[:3]), max_size=2))
    if pairs:
        params.append(("metadata", "&".join(f"{k}={v}" for k, v in pairs.items())))
    elif draw(st.integers(0, 5)) == 0:
        params.append(("metadata", draw(st.sampled_from(("=&&", "a", "team")))))
        variant = "bad-metadata"
    params += [("state", s) for s in draw(st.lists(st.sampled_from(_STATES), max_size=2))]
    for name in ("page", "pageSize"):
        value = draw(st.sampled_from((None, None, "1", "2", "200", "0", "-1", "x", "201")))
        if value is not None:
            params.append((name, value))
            if value in ("0", "-1", "x", "201"):
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
    ("bad-proxy-flag", "44772", (("use_server_proxy", "maybe"),)),
)


@st.composite
def _sandbox_step(draw: st.DrawFn) -> Step:
    """Draw a step on a sandbox slot."""
    slot = draw(_SLOTS)
    operation = draw(st.sampled_from(("get", "get", "pause", "resume", "delete", "renew", "endpoint")))
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


@st.composite
def steps(draw: st.DrawFn) -> Step:
    """Draw any step: valid and invalid creates, lists, and steps on sandbox slots."""
    step = draw(
        st.one_of(
            _valid_create(),
            _valid_create(),
            st.sampled_from(INVALID_CREATES),
            _list_step(),
            _sandbox_step(),
            _sandbox_step(),
            _sandbox_step(),
        )
    )
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
