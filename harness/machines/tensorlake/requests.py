"""Request strategies of the TensorLake API machine: names, ports, ``network`` policies, create and PATCH bodies.

Bodies are drawn the way the SDK builds them, sometimes with one defect; valid names are :class:`Name`
values that the machine prefixes on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.machines.tensorlake.compare import Json
from mockserver.core.dns import SANDBOX_RESOLVER
from mockserver.tensorlake.model import MANAGEMENT_PORT

__all__ = [
    "ALLOW_POOL",
    "AUTH_MODES",
    "BAD_ENTRIES",
    "BAD_NAMES",
    "BAD_PORTS",
    "DENY_POOL",
    "PORTS",
    "SCENARIOS",
    "TIMING_PRESETS",
    "WORDS",
    "Name",
    "create_bodies",
    "networks",
    "patch_bodies",
    "port_lists",
    "seed_bodies",
    "valid_networks",
]


@dataclass(frozen=True)
class Name:
    """A sandbox name as drawn: valid names get the run's prefix on the wire, invalid ones go as they are."""

    word: str
    valid: bool = True


WORDS = ("alpha", "beta", "gamma")
BAD_NAMES = ("Bad_Name", "ends-", "abcdefghij0123456789k", "9lives")
PORTS = (3000, 8080, 8443)
BAD_PORTS = (9501, 0, 65536)
ALLOW_POOL = (
    "example.com",
    "*.example.com",
    "*.example.com",
    "www.example.com",
    "pypi.org",
    "*.pythonhosted.org",
    "10.0.0.0/8",
    "203.0.113.10",
    "198.51.100.0/24",
    SANDBOX_RESOLVER,
    "Example.COM.",
    " pypi.org ",
    "example.org:443",
    "1.2.3.4/32",
)
DENY_POOL = (
    "example.org",
    "www.example.com",
    "www.example.com",
    "10.0.0.0/8",
    "203.0.113.10",
    "example.com",
    SANDBOX_RESOLVER,
    "files.pythonhosted.org",
    "198.51.100.0/24",
)
BAD_ENTRIES: tuple[tuple[str, Any], ...] = (
    ("allow_out", "*.b*d.example.com"),
    ("allow_out", "10.0.0.1/8"),
    ("deny_out", "::1"),
    ("allow_out", ""),
    ("deny_out", "999.1.1.1"),
    ("allow_out", "nope.invalid"),
    ("deny_out", "nope.invalid"),
    ("deny_out", "*.example.org"),
    ("allow_out", 42),
    ("deny_out", "example.org:0"),
)
#: Hand-picked policies where hostname, wildcard, address and resolver rules meet (half the seeded policies).
SCENARIOS: tuple[Json, ...] = (
    {"allow_internet_access": True, "allow_out": ["*.example.com"], "deny_out": ["www.example.com"]},
    {
        "allow_internet_access": True,
        "allow_out": ["198.51.100.0/24", "example.com"],
        "deny_out": ["files.pythonhosted.org"],
    },
    {"allow_internet_access": True, "allow_out": ["10.0.0.0/8", "*.pythonhosted.org"], "deny_out": ["www.example.com"]},
    {
        "allow_internet_access": False,
        "allow_out": [SANDBOX_RESOLVER, "*.example.com", "example.org"],
        "deny_out": ["203.0.113.10"],
    },
    {"allow_internet_access": True, "allow_out": [], "deny_out": ["example.org", "198.51.100.0/24"]},
    {"allow_internet_access": False, "allow_out": [], "deny_out": []},
)
AUTH_MODES = ("none", "key", "other-key", "session", "legacy-session", "session-no-project")
TIMING_PRESETS: tuple[tuple[tuple[str, float], ...], ...] = (
    (("startup", 0.0), ("suspend", 0.0), ("resume", 0.0)),
    (("startup", 5.0), ("suspend", 0.0), ("resume", 0.0)),
    (("startup", 0.0), ("suspend", 3.0), ("resume", 3.0)),
)

_NAME_CHOICES: tuple[Name | None, ...] = (
    None,
    None,
    None,
    *(Name(w) for w in WORDS),
    *(Name(w) for w in WORDS),
    Name(BAD_NAMES[0], valid=False),
)
_PATCH_NAMES: tuple[Name | None, ...] = (*(Name(w) for w in WORDS), None, Name(BAD_NAMES[2], valid=False))


@st.composite
def port_lists(draw: st.DrawFn) -> list[int]:
    """Draw an ``exposed_ports`` list: duplicates and any order, sometimes with 9501, 0 or 65536."""
    ports = draw(st.lists(st.sampled_from(PORTS), max_size=4))
    if draw(st.integers(0, 4)) == 0:
        ports.insert(draw(st.integers(0, len(ports))), draw(st.sampled_from((*BAD_PORTS, MANAGEMENT_PORT))))
    return ports


@st.composite
def networks(draw: st.DrawFn) -> Any:
    """Draw a ``network`` object: mostly valid (keys may be left out), sometimes with one defect."""
    net: Json = {}
    flag = draw(st.sampled_from((None, True, False)))
    if flag is not None:
        net["allow_internet_access"] = flag
    allow = draw(st.lists(st.sampled_from(ALLOW_POOL), max_size=3))
    deny = draw(st.lists(st.sampled_from(DENY_POOL), max_size=2))
    keep_allow, keep_deny = draw(st.booleans()), draw(st.booleans())
    if allow or keep_allow:
        net["allow_out"] = allow
    if deny or keep_deny:
        net["deny_out"] = deny
    flaw = draw(st.sampled_from(("none",) * 9 + ("entry",) * 3 + ("unknown-key", "not-a-list", "flag-type")))
    if flaw == "entry":
        where, bad = draw(st.sampled_from(BAD_ENTRIES))
        items = list(net.get(where, []))
        items.insert(draw(st.integers(0, len(items))), bad)
        net[where] = items
    elif flaw == "unknown-key":
        net["allow_all"] = True
    elif flaw == "not-a-list":
        net["allow_out"] = "example.com"
    elif flaw == "flag-type":
        net["allow_internet_access"] = "no"
    return net


@st.composite
def valid_networks(draw: st.DrawFn) -> Json:
    """Draw a valid ``network`` object (all three keys): a hand-picked scenario or random entries."""
    if draw(st.booleans()):
        scenario = draw(st.sampled_from(SCENARIOS))
        return {key: list(value) if isinstance(value, list) else value for key, value in scenario.items()}
    return {
        "allow_internet_access": draw(st.sampled_from((True, True, False))),
        "allow_out": draw(st.lists(st.sampled_from(ALLOW_POOL), min_size=1, max_size=3)),
        "deny_out": draw(st.lists(st.sampled_from(DENY_POOL), max_size=2)),
    }


@st.composite
def seed_bodies(draw: st.DrawFn, named: bool) -> Json:
    """Draw a valid create body with a policy: every example starts with one named and one ephemeral sandbox."""
    body: Json = {"resources": {"cpus": 1.0, "memory_mb": 1024}, "network": draw(valid_networks())}
    if named:
        body["name"] = Name(draw(st.sampled_from(WORDS)))
    if draw(st.booleans()):
        body["exposed_ports"] = draw(st.lists(st.sampled_from(PORTS), max_size=2))
    unauth = draw(st.sampled_from((None, True, True, False)))
    if unauth is not None:
        body["allow_unauthenticated_access"] = unauth
    if draw(st.booleans()):
        body["wait"] = False
    timeout = draw(st.sampled_from((None, 30, 30, 120)))
    if timeout is not None:
        body["timeout_secs"] = timeout
    return body


@st.composite
def create_bodies(draw: st.DrawFn) -> Json:
    """Draw a create body the way the SDK builds one, sometimes with an invalid field."""
    body: Json = {"resources": {"cpus": 1.0, "memory_mb": 1024}}
    name = draw(st.sampled_from(_NAME_CHOICES))
    if name is not None:
        body["name"] = name
    wait = draw(st.sampled_from((None, None, False, True)))
    if wait is not None:
        body["wait"] = wait
    if draw(st.integers(0, 2)) == 0:
        body["network"] = draw(networks())
    if draw(st.integers(0, 3)) == 0:
        body["exposed_ports"] = draw(port_lists())
    unauth = draw(st.sampled_from((None, None, True, False)))
    if unauth is not None:
        body["allow_unauthenticated_access"] = unauth
    timeout = draw(st.sampled_from((None, None, None, 30, 120)))
    if timeout is not None:
        body["timeout_secs"] = timeout
    auto_resume = draw(st.sampled_from((None, None, None, True, False)))
    if auto_resume is not None:
        body["auto_resume"] = auto_resume
    return body


@st.composite
def patch_bodies(draw: st.DrawFn) -> Json:
    """Draw a PATCH body: ``network`` absent, null or an object, plus name, flags and ports (maybe none)."""
    body: Json = {}
    mode = draw(st.sampled_from(("absent", "null", "object", "absent", "object")))
    if mode == "null":
        body["network"] = None
    elif mode == "object":
        body["network"] = draw(networks())
    if draw(st.integers(0, 3)) == 0:
        body["name"] = draw(st.sampled_from(_PATCH_NAMES))
    auto_resume = draw(st.sampled_from((None, None, None, True, False)))
    if auto_resume is not None:
        body["auto_resume"] = auto_resume
    if draw(st.integers(0, 2)) == 0:
        body["exposed_ports"] = draw(port_lists())
    unauth = draw(st.sampled_from((None, None, None, None, True, False, True, False, "yes")))
    if unauth is not None:
        body["allow_unauthenticated_access"] = unauth
    return body
