"""What the OpenSandbox machine sends: constants, commands run inside a sandbox, and request strategies.

The strategies draw ``CreateSandboxRequest`` bodies (mostly valid, sometimes with one invalid part), network
policies, list filters in any spelling, metadata merge patches, and the commands (:class:`Echo`,
:class:`ExitWith`, :class:`PrintEnv`, egress :class:`Probe`) that execd runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from mockserver.opensandbox.model.spec import STATES

__all__ = [
    "BAD_TARGETS",
    "ENTRYPOINT",
    "ENV_NAMES",
    "ENV_VALUES",
    "HOSTS",
    "IMAGE",
    "META_KEYS",
    "META_VALUES",
    "RESOURCES",
    "RUN_LABEL",
    "TARGETS",
    "WORDS",
    "Command",
    "Echo",
    "ExitWith",
    "Json",
    "PrintEnv",
    "Probe",
    "commands",
    "create_bodies",
    "gone_operations",
    "metadata_maps",
    "metadata_patches",
    "network_policies",
    "policy_rules",
    "policy_targets",
    "probes",
    "state_spellings",
    "valid_bodies",
    "valid_bodies_with_policy",
]

Json = dict[str, Any]

RUN_LABEL = "sandproof-run"
IMAGE = {"uri": "python:3.11"}
RESOURCES = {"cpu": "1", "memory": "2Gi"}
ENTRYPOINT = ["tail", "-f", "/dev/null"]
META_KEYS = ("team", "purpose", "tier")
META_VALUES = ("a", "b", "c-1", "x.y")
ENV_NAMES = ("FOO", "BAR")
ENV_VALUES = ("1", "hello", "a-b")
WORDS = ("hello", "sandproof", "x-1")
#: Names probed from inside a sandbox; each resolves under the admin API's synthetic DNS.
HOSTS = ("pypi.org", "files.pythonhosted.org", "github.com", "api.github.com", "example.com", "evil.example.com")
TARGETS = ("pypi.org", "*.pythonhosted.org", "github.com", "*.github.com", "example.com", "*.example.com")
BAD_TARGETS = ("*", "10.0.0.0/8", "bad..name")


# --- commands run inside a sandbox --------------------------------------------------------------------


@dataclass(frozen=True)
class Echo:
    """``echo WORD``: prints the word, exits 0."""

    word: str

    @property
    def text(self) -> str:
        """Return the shell line."""
        return f"echo {self.word}"


@dataclass(frozen=True)
class ExitWith:
    """``exit N``: prints nothing, exits N."""

    code: int

    @property
    def text(self) -> str:
        """Return the shell line."""
        return f"exit {self.code}"


@dataclass(frozen=True)
class PrintEnv:
    """``echo $NAME``: prints the variable from the sandbox's ``env`` (empty when unset)."""

    name: str

    @property
    def text(self) -> str:
        """Return the shell line."""
        return f"echo ${self.name}"


@dataclass(frozen=True)
class Probe:
    """An egress probe (``getent hosts NAME`` or ``curl http://NAME/``) that the network policy decides."""

    tool: Literal["getent", "curl"]
    host: str

    @property
    def text(self) -> str:
        """Return the shell line."""
        if self.tool == "getent":
            return f"getent hosts {self.host}"
        return f"curl -s -o /dev/null -w '%{{http_code}}' http://{self.host}/"


Command = Echo | ExitWith | PrintEnv | Probe


# --- strategies ---------------------------------------------------------------------------------------

policy_rules = st.fixed_dictionaries({"action": st.sampled_from(("allow", "deny")), "target": st.sampled_from(TARGETS)})
_rule_lists = st.lists(policy_rules, max_size=4)
_some_rules = st.lists(policy_rules, min_size=1, max_size=4)
_defaults = st.sampled_from(("deny", "allow", None))
_timeout_kinds = st.sampled_from(("value", "omit", "value", "null"))
_timeouts = st.one_of(st.sampled_from((60, 61, 120, 600, 3600)), st.integers(60, 7200))
metadata_maps = st.dictionaries(st.sampled_from(META_KEYS), st.sampled_from(META_VALUES), max_size=2)
_env = st.dictionaries(st.sampled_from(ENV_NAMES), st.sampled_from(ENV_VALUES), max_size=2)
_flaws = st.sampled_from(
    ("none",) * 15 + ("timeout", "metadata", "policy", "no-image", "resources", "volumes", "platform")
)
_PVC = {"name": "data", "mountPath": "/data", "pvc": {"claimName": "data"}}
_bad_volumes = st.sampled_from(
    (
        [{"name": "data", "mountPath": "/data", "host": {"path": "/tmp/data"}}],  # 400: outside the allow-list
        [_PVC, {**_PVC, "pvc": {"claimName": "other"}}],  # 400: duplicate name
        [{"name": "data", "mountPath": "/data"}],  # 422: no backend
        [{**_PVC, "mountPath": "data"}],  # 422: relative mount path
    )
)
_bad_platforms = st.sampled_from(({"os": "plan9", "arch": "amd64"}, {"os": "linux", "arch": "mips"}))
_bad_timeouts = st.sampled_from((0, 59, "soon"))
_bad_metadata = st.sampled_from(({"opensandbox.io/owner": "x"}, {"team": "x&y=z"}))
_bad_targets = st.sampled_from(("", *BAD_TARGETS))
policy_targets = st.sampled_from((*TARGETS, "unknown.org"))
gone_operations = st.sampled_from(("get", "delete", "pause", "resume", "renew", "endpoint"))


@st.composite
def network_policies(draw: st.DrawFn, *, rules: bool = False) -> Json:
    """Draw a valid ``networkPolicy`` (``defaultAction`` sometimes omitted; ``rules``: at least one rule)."""
    policy: Json = {"egress": draw(_some_rules if rules else _rule_lists)}
    default = draw(_defaults)
    if default is not None:
        policy["defaultAction"] = default
    return policy


_policies = network_policies()
_policies_with_rules = network_policies(rules=True)


@st.composite
def create_bodies(draw: st.DrawFn, *, valid: bool = False, with_policy: bool = False) -> Json:
    """Draw a ``CreateSandboxRequest``: mostly valid, sometimes with one invalid part.

    ``valid`` draws only valid bodies; ``with_policy`` only valid bodies with a ``networkPolicy``.
    """
    body: Json = {"image": dict(IMAGE), "entrypoint": list(ENTRYPOINT), "resourceLimits": dict(RESOURCES)}
    timeout = draw(_timeout_kinds)
    if timeout == "null":
        body["timeout"] = None
    elif timeout == "value":
        body["timeout"] = draw(_timeouts)
    metadata = draw(metadata_maps)
    if metadata:
        body["metadata"] = metadata
    env = draw(_env)
    if env:
        body["env"] = env
    if with_policy or draw(st.booleans()):
        body["networkPolicy"] = draw(_policies_with_rules if with_policy else _policies)
    if valid or with_policy:
        return body
    flaw = draw(_flaws)
    if flaw == "timeout":
        body["timeout"] = draw(_bad_timeouts)
    elif flaw == "metadata":
        body["metadata"] = {**metadata, **draw(_bad_metadata)}
    elif flaw == "policy":
        body["networkPolicy"] = {"defaultAction": "deny", "egress": [{"action": "allow", "target": draw(_bad_targets)}]}
    elif flaw == "no-image":
        del body["image"]
    elif flaw == "resources":
        body["resourceLimits"] = {"cpu": "1", "memory": "lots"}
    elif flaw == "volumes":
        body["volumes"] = draw(_bad_volumes)
    elif flaw == "platform":
        body["platform"] = draw(_bad_platforms)
    return body


valid_bodies = create_bodies(valid=True)
valid_bodies_with_policy = create_bodies(with_policy=True)
_SPELLINGS: dict[str, Callable[[str], str]] = {"as-is": str, "lower": str.lower, "upper": str.upper}
state_spellings = st.tuples(
    st.sampled_from(("Running", "Paused", *STATES)), st.sampled_from(("lower", "upper", "as-is"))
).map(lambda pair: _SPELLINGS[pair[1]](pair[0]))
_COMMAND_KINDS: dict[str, Callable[[str, int, str], Command]] = {
    "exit": lambda word, code, name: ExitWith(code),
    "echo": lambda word, code, name: Echo(word),
    "env": lambda word, code, name: PrintEnv(name),
}
commands: st.SearchStrategy[Command] = st.tuples(
    st.sampled_from(tuple(_COMMAND_KINDS)),
    st.sampled_from(WORDS),
    st.sampled_from((1, 0, 2, 3, 127)),
    st.sampled_from(ENV_NAMES),
).map(lambda drawn: _COMMAND_KINDS[drawn[0]](*drawn[1:]))
probes = st.builds(Probe, st.sampled_from(("getent", "curl")), st.sampled_from(HOSTS))
metadata_patches = st.dictionaries(
    st.sampled_from((*META_KEYS, "opensandbox.io/owner")),
    st.one_of(st.none(), st.sampled_from((*META_VALUES, "x&y"))),
    min_size=1,
    max_size=2,
)
