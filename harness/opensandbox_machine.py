"""The OpenSandbox API contract: a Hypothesis state machine whose oracle is the mock's own HTTP-free model.

``make_machine(client_factory, admin=...)`` returns a :class:`RuleBasedStateMachine` subclass that drives any
OpenSandbox server over HTTP (lifecycle ``/v1``, execd on port 44772, the egress sidecar on port 18080) and
checks **every** answer against :class:`OpenSandboxModel` (``mockserver.opensandbox.models.OpenSandboxState``)
running on its own manual virtual clock: status code, error code, sandbox bodies (state, metadata,
``expiresAt``, ...), list membership, order and pagination, policy contents, command output and exit code.
Ids are mapped through the ``sandboxes`` bundle (each handle holds the target's id and the model's id);
every example starts with one valid sandbox; a deleted sandbox moves to the ``deleted`` bundle, where every
operation must answer 404.

With the ``/_mock`` admin API (``admin`` given) every example starts from a reset target whose clock is
switched to manual and mirrored by the model's clock; the machine then also injects faults (503 with
``Retry-After``, a 404 pending pod) and advances time (expiry). Without it, the model's clock follows the
wall clock, times compare with a tolerance, and the machine deletes what it created at the end of each example.

Invariants after every step: sandboxes that were deleted or expired are never listed; lists are newest first;
the listing matches the model; every lifecycle response carries ``X-Request-ID`` (echoed when sent); no 5xx
unless a fault was injected or the model predicts an unreachable sandbox backend (502).

A failure raises :class:`ContractViolation` (an ``AssertionError`` naming the rule); Hypothesis shrinks it to a
minimal program and prints it, with ``@reproduce_failure``; :func:`run_machine` adds the seed and the
``--hypothesis-seed`` replay line.
"""

from __future__ import annotations

import itertools
import json
import random
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal
from urllib.parse import parse_qsl, urlsplit

import httpx
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from contracts.opensandbox import PolicyError, decide_egress
from mockserver.core import AdminClient, ApiError, IdFactory, VirtualClock
from mockserver.opensandbox.egress import apply_delete, apply_patch, status_body
from mockserver.opensandbox.models import OpenSandboxState, SandboxRecord
from mockserver.opensandbox.profiles import EGRESS_PORT, EXECD_PORT, RuntimeProfile, make_profile
from mockserver.opensandbox.spec import MAX_PAGE_SIZE, STATES, iso, parse_create
from mockserver.opensandbox.validation import Checker, RequestValidationError

__all__ = [
    "ADMIN_OPERATIONS",
    "OPERATIONS",
    "ClientFactory",
    "ContractViolation",
    "Echo",
    "ExitWith",
    "Expected",
    "MachineConfig",
    "OpenSandboxAPIMachine",
    "OpenSandboxModel",
    "Oracle",
    "PrintEnv",
    "Probe",
    "RunResult",
    "SandboxHandle",
    "http_clients",
    "machine_settings",
    "make_machine",
    "parse_run",
    "run_against_mock",
    "run_machine",
    "run_mutant",
]

#: The mock's HTTP-free state model, used as the oracle.
OpenSandboxModel = OpenSandboxState

ClientFactory = Callable[[], httpx.Client]
Json = dict[str, Any]

TENANT = "default"
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

#: Report operation → the rules its machine runs (``create`` always runs; ``use_deleted`` runs with ``delete``).
OPERATIONS: dict[str, frozenset[str]] = {
    "lifecycle": frozenset({"create", "get", "list_sandboxes", "delete", "patch_metadata", "missing_sandbox"}),
    "pause-resume": frozenset({"create", "get", "pause", "resume", "delete"}),
    "renew": frozenset({"create", "get", "renew", "delete"}),
    "endpoints": frozenset({"create", "endpoint", "pause", "resume", "delete"}),
    "execd": frozenset({"create", "run_command", "pause", "resume", "delete"}),
    "egress-policy": frozenset(
        {
            "create",
            "create_with_policy",
            "egress_get",
            "egress_patch",
            "egress_delete",
            "egress_probe",
            "pause",
            "resume",
            "delete",
        }
    ),
    "faults": frozenset({"create", "get", "inject_fault", "delete"}),
    "expiry": frozenset({"create", "get", "renew", "advance_clock", "list_sandboxes", "delete"}),
}
ALL_RULES = frozenset().union(*OPERATIONS.values())
OPERATIONS["state-machine"] = ALL_RULES
#: Operations whose rules need the ``/_mock`` admin API.
ADMIN_OPERATIONS = frozenset({"faults", "expiry"})
ADMIN_RULES = frozenset({"inject_fault", "advance_clock"})
#: Rules that need sandboxes with an egress sidecar (a ``networkPolicy``).
EGRESS_RULES = frozenset({"create_with_policy", "egress_get", "egress_patch", "egress_delete", "egress_probe"})


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


@dataclass(frozen=True)
class RunResult:
    """What the SDK would make of a command's event stream."""

    command_id: str | None
    stdout: str
    stderr: str
    exit_code: int | None


def parse_run(text: str) -> RunResult:
    """Parse an execd SSE body (bare JSON frames or ``data:`` frames) with the SDK's exit-code rule."""
    command_id: str | None = None
    stdout: list[str] = []
    stderr: list[str] = []
    exit_code: int | None = None
    for block in text.split("\n\n"):
        lines = [ln[5:].strip() if ln.startswith("data:") else ln for ln in block.strip().splitlines()]
        payload = "".join(ln for ln in lines if ln and not ln.startswith((":", "event:", "id:")))
        if not payload:
            continue
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("timestamp"), int):
            continue  # the SDK drops events without an integer timestamp
        kind = event.get("type")
        if kind == "init":
            command_id = str(event.get("text"))
        elif kind == "stdout":
            stdout.append(str(event.get("text", "")))
        elif kind == "stderr":
            stderr.append(str(event.get("text", "")))
        elif kind == "execution_complete":
            exit_code = 0
        elif kind == "error":
            evalue = (event.get("error") or {}).get("evalue")
            try:
                exit_code = int(str(evalue))
            except ValueError:
                exit_code = None
    return RunResult(command_id, "".join(stdout), "".join(stderr), exit_code)


# --- expectations and violations -----------------------------------------------------------------------


class ContractViolation(AssertionError):
    """Raise when the target's answer differs from the model's prediction; ``rule`` names the step."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"[{rule}] {message}")
        self.rule = rule


_ANY: Any = object()


@dataclass(frozen=True)
class Expected:
    """The model's prediction of one HTTP answer.

    ``code`` is the flat error body's ``code`` (None: not checked); ``validation`` means a FastAPI 422
    ``{"detail": [...]}``; ``body`` is the normalised body (``_ANY``: not checked).
    """

    status: int
    code: str | None = None
    body: Any = _ANY
    validation: bool = False

    @classmethod
    def error(cls, exc: ApiError) -> Expected:
        """Return the prediction of an :class:`ApiError`."""
        return cls(exc.status, exc.code)


@dataclass
class SandboxHandle:
    """A sandbox the machine created: its id on the target and in the model."""

    alias: str
    target_id: str
    model_id: str

    def __repr__(self) -> str:
        return self.alias


def _parse_time(value: Any) -> Any:
    """Return an RFC 3339 string as epoch seconds (float); anything else unchanged."""
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def normalise_sandbox(body: Any, id_of: Callable[[str], str]) -> Any:
    """Return a ``Sandbox`` body with its id mapped, times as epoch floats and ``status.message`` dropped."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if isinstance(out.get("id"), str):
        out["id"] = id_of(out["id"])
    for key in ("expiresAt", "createdAt"):
        if key in out:
            out[key] = _parse_time(out[key])
    if isinstance(out.get("status"), dict):
        status = dict(out["status"])
        status.pop("message", None)
        if "lastTransitionAt" in status:
            status["lastTransitionAt"] = _parse_time(status["lastTransitionAt"])
        out["status"] = status
    return out


def normalise_list(body: Any, id_of: Callable[[str], str]) -> Any:
    """Return a ``ListSandboxesResponse`` with every item normalised."""
    if not isinstance(body, dict) or not isinstance(body.get("items"), list):
        return body
    return {**body, "items": [normalise_sandbox(item, id_of) for item in body["items"]]}


def diff(expected: Any, actual: Any, tolerance: float, path: str = "$") -> str | None:
    """Return where ``actual`` first differs from ``expected`` (floats within ``tolerance``), or None."""
    if isinstance(expected, float) and isinstance(actual, float) and not isinstance(actual, bool):
        return None if abs(expected - actual) <= tolerance else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = sorted(set(expected) - set(actual))
        extra = sorted(set(actual) - set(expected))
        if missing or extra:
            return f"{path}: keys differ (missing {missing}, unexpected {extra})"
        for key in expected:
            found = diff(expected[key], actual[key], tolerance, f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} items, got {len(actual)}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            found = diff(want, got, tolerance, f"{path}[{index}]")
            if found:
                return found
        return None
    if type(expected) is not type(actual) or expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r}"
    return None


# --- the oracle ---------------------------------------------------------------------------------------


class Oracle:
    """Predict the answers of an OpenSandbox server by running the same requests on the HTTP-free model.

    Each method mirrors the order of checks of the corresponding route (body validation, then the sandbox
    lookup, then the state rules) and returns an :class:`Expected` whose body is normalised with model ids.
    """

    def __init__(self, profile: RuntimeProfile, clock: VirtualClock, enforcement: str = "dns") -> None:
        self.profile = profile
        self.clock = clock
        self.enforcement = enforcement
        self.model = OpenSandboxModel(profile, clock, IdFactory(0))

    def _sandbox(self, model_id: str) -> Any:
        return normalise_sandbox(self.model.find(model_id, TENANT).to_json(), str)

    def lookup(self, model_id: str) -> SandboxRecord | None:
        """Return the live model sandbox, or None once deleted or expired."""
        return self.model.lookup(model_id)

    def create(self, body: Any) -> tuple[Expected, SandboxRecord | None]:
        """Predict ``POST /v1/sandboxes``."""
        try:
            spec = parse_create(body, self.profile.name)
            record = self.model.create(TENANT, spec)
        except RequestValidationError:
            return Expected(422, validation=True), None
        except ApiError as exc:
            return Expected.error(exc), None
        return Expected(202, body=normalise_sandbox(record.create_response(), str)), record

    def get(self, model_id: str) -> Expected:
        """Predict ``GET /v1/sandboxes/{id}``."""
        try:
            return Expected(200, body=self._sandbox(model_id))
        except ApiError as exc:
            return Expected.error(exc)

    def list(self, query: Sequence[tuple[str, str]]) -> Expected:
        """Predict ``GET /v1/sandboxes`` for a query string given as pairs."""
        check = Checker()
        values: dict[str, list[str]] = {}
        for key, value in query:
            values.setdefault(key, []).append(value)
        page = _query_int(check, values, "page", 1, None)
        size = _query_int(check, values, "pageSize", 20, MAX_PAGE_SIZE)
        if check.errors:
            return Expected(422, validation=True)
        metadata: dict[str, str] = {}
        raw = (values.get("metadata") or [""])[0]
        if raw:
            try:
                metadata = dict(parse_qsl(raw, keep_blank_values=True, strict_parsing=True))
            except ValueError:
                return Expected(400, "INVALID_METADATA_FORMAT")
        body = self.model.list(TENANT, values.get("state", []), metadata, page, size)
        return Expected(200, body=normalise_list(body, str))

    def delete(self, model_id: str) -> Expected:
        """Predict ``DELETE /v1/sandboxes/{id}``."""
        try:
            self.model.delete(TENANT, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(204)

    def pause(self, model_id: str) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/pause``."""
        try:
            self.model.pause(TENANT, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(202)

    def resume(self, model_id: str) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/resume``."""
        try:
            self.model.resume(TENANT, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(202)

    def renew(self, model_id: str, body: Any) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/renew-expiration``."""
        check = Checker()
        data = check.obj(body, ["body"])
        if data is None or "expiresAt" not in data:
            return Expected(422, validation=True)
        when = check.datetime_value(data["expiresAt"], ["body", "expiresAt"])
        if when is None:
            return Expected(422, validation=True)
        try:
            new = self.model.renew(TENANT, model_id, when)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(200, body={"expiresAt": _parse_time(iso(new))})

    def patch_metadata(self, model_id: str, patch: Any) -> Expected:
        """Predict ``PATCH /v1/sandboxes/{id}/metadata`` (a JSON merge patch)."""
        if not isinstance(patch, dict) or any(v is not None and not isinstance(v, str) for v in patch.values()):
            return Expected(422, validation=True)
        try:
            record = self.model.patch_metadata(TENANT, model_id, patch)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(200, body=normalise_sandbox(record.to_json(), str))

    def endpoint(self, model_id: str, port: int, proxy: bool, expires: int | None) -> Expected:
        """Predict ``GET /v1/sandboxes/{id}/endpoints/{port}`` (body checked by the machine)."""
        if proxy and expires is not None:
            return Expected(400, "SANDBOX::INVALID_PARAMETER")
        if expires is not None and self.profile.name == "docker":
            return Expected(400, "SANDBOX::API_NOT_SUPPORTED")
        if not 1 <= port <= 65535:
            return Expected(400, "DOCKER::INVALID_PORT")
        try:
            record = self.model.find(model_id, TENANT)
        except ApiError as exc:
            return Expected.error(exc)
        if record.state == "Pending":
            return Expected(404, "KUBERNETES::POD_IP_NOT_AVAILABLE")
        return Expected(200)

    def backend(self, model_id: str, port: int, proxy: bool) -> Expected | None:
        """Predict the answer of a sandbox port before it reaches execd or the sidecar (None: it gets through)."""
        record = self.model.lookup(model_id)
        if record is None:
            return Expected(404, self.profile.not_found_code) if proxy else Expected(502)
        if proxy and record.state == "Pending":
            return Expected(404, "KUBERNETES::POD_IP_NOT_AVAILABLE")
        serves = port == EXECD_PORT or (port == EGRESS_PORT and record.has_sidecar)
        if record.state != "Running" or not serves:
            return Expected(502, "BACKEND_CONNECTION_FAILED") if proxy else Expected(502)
        return None

    def egress(self, model_id: str, method: str, body: Any) -> Expected:
        """Predict the sidecar's ``/policy`` answer for a reachable sandbox."""
        record = self.model.find(model_id)
        if method == "GET":
            return Expected(200, body=status_body(record, self.enforcement, with_policy=True))
        try:
            if method == "PATCH":
                apply_patch(record, body)
            else:
                apply_delete(record, body)
        except PolicyError:
            return Expected(400)
        return Expected(200, body=status_body(record, self.enforcement, with_policy=False))

    def allows(self, model_id: str, host: str) -> bool:
        """Tell whether the sandbox's current policy lets it reach ``host`` (the reference engine decides)."""
        record = self.model.find(model_id)
        policy = record.policy if record.has_sidecar else None
        try:
            return decide_egress(policy, host).allowed
        except PolicyError:
            return False

    def run(self, model_id: str, command: Command) -> tuple[int | None, str | None]:
        """Predict (exit code, stdout) of a command; None where the outcome depends on the real network."""
        record = self.model.find(model_id)
        if isinstance(command, Echo):
            return 0, command.word + "\n"
        if isinstance(command, ExitWith):
            return command.code, ""
        if isinstance(command, PrintEnv):
            return 0, record.spec.env.get(command.name, "") + "\n"
        if not self.allows(model_id, command.host):
            return (2, "") if command.tool == "getent" else (6, "000")
        return 0, None


def _query_int(check: Checker, values: Mapping[str, list[str]], name: str, default: int, le: int | None) -> int:
    given = values.get(name)
    if not given:
        return default
    raw = given[0]
    try:
        value = int(raw)
    except ValueError:
        check.add("int_parsing", ["query", name], raw)
        return default
    if value < 1 or (le is not None and value > le):
        check.add("out_of_range", ["query", name], raw)
    return value


# --- strategies ---------------------------------------------------------------------------------------

_rules_st = st.fixed_dictionaries({"action": st.sampled_from(("allow", "deny")), "target": st.sampled_from(TARGETS)})
_rule_lists = st.lists(_rules_st, max_size=4)
_some_rules = st.lists(_rules_st, min_size=1, max_size=4)
_defaults = st.sampled_from(("deny", "allow", None))
_timeout_kinds = st.sampled_from(("value", "omit", "value", "null"))
_timeouts = st.one_of(st.sampled_from((60, 61, 120, 600, 3600)), st.integers(60, 7200))
_metadata = st.dictionaries(st.sampled_from(META_KEYS), st.sampled_from(META_VALUES), max_size=2)
_env = st.dictionaries(st.sampled_from(ENV_NAMES), st.sampled_from(ENV_VALUES), max_size=2)
_flaws = st.sampled_from(("none",) * 15 + ("timeout", "metadata", "policy", "no-image", "resources"))
_bad_timeouts = st.sampled_from((0, 59, "soon"))
_bad_metadata = st.sampled_from(({"opensandbox.io/owner": "x"}, {"team": "x&y=z"}))
_bad_targets = st.sampled_from(("", *BAD_TARGETS))
_targets = st.sampled_from((*TARGETS, "unknown.org"))
_gone_operations = st.sampled_from(("get", "delete", "pause", "resume", "renew", "endpoint"))


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
    metadata = draw(_metadata)
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
    return body


_valid_bodies = create_bodies(valid=True)
_valid_bodies_with_policy = create_bodies(with_policy=True)
_SPELLINGS: dict[str, Callable[[str], str]] = {"as-is": str, "lower": str.lower, "upper": str.upper}
_state_spellings = st.tuples(
    st.sampled_from(("Running", "Paused", *STATES)), st.sampled_from(("lower", "upper", "as-is"))
).map(lambda pair: _SPELLINGS[pair[1]](pair[0]))
_COMMAND_KINDS: dict[str, Callable[[str, int, str], Command]] = {
    "exit": lambda word, code, name: ExitWith(code),
    "echo": lambda word, code, name: Echo(word),
    "env": lambda word, code, name: PrintEnv(name),
}
_commands: st.SearchStrategy[Command] = st.tuples(
    st.sampled_from(tuple(_COMMAND_KINDS)),
    st.sampled_from(WORDS),
    st.sampled_from((1, 0, 2, 3, 127)),
    st.sampled_from(ENV_NAMES),
).map(lambda drawn: _COMMAND_KINDS[drawn[0]](*drawn[1:]))
_probes = st.builds(Probe, st.sampled_from(("getent", "curl")), st.sampled_from(HOSTS))
_patches = st.dictionaries(
    st.sampled_from((*META_KEYS, "opensandbox.io/owner")),
    st.one_of(st.none(), st.sampled_from((*META_VALUES, "x&y"))),
    min_size=1,
    max_size=2,
)


# --- the machine --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MachineConfig:
    """What one machine class runs against and which rules it enables."""

    client_factory: ClientFactory
    admin: AdminClient | None
    rules: frozenset[str]
    profile: RuntimeProfile
    enforcement: str
    time_tolerance: float
    egress: bool = True

    def enabled(self, name: str) -> bool:
        """Tell whether the rule runs (admin rules only with the admin API, egress rules only with egress)."""
        if name in ADMIN_RULES and self.admin is None:
            return False
        return name in self.rules and (self.egress or name not in EGRESS_RULES)


def _on(name: str) -> Callable[[Any], bool]:
    """Return a precondition enabling a rule when the machine's config lists it."""
    return lambda machine: bool(machine.config.enabled(name))


@dataclass
class _Bookkeeping:
    """What one example has done so far."""

    fault_armed: bool = False
    requests: int = 0
    listing_dirty: bool = False
    handles: list[SandboxHandle] = field(default_factory=list)


class OpenSandboxAPIMachine(RuleBasedStateMachine):
    """Drive an OpenSandbox server and compare every answer with the model (configure via :func:`make_machine`)."""

    config: ClassVar[MachineConfig]
    clock_is_manual: ClassVar[bool] = False
    sandboxes = Bundle("sandboxes")
    deleted = Bundle("deleted")

    def __init__(self) -> None:
        super().__init__()
        config = self.config
        self.client = config.client_factory()
        self.run_label = f"r{secrets.token_hex(5)}"  # not from `random`, which Hypothesis seeds per example
        self.bookkeeping = _Bookkeeping()
        self.ids: dict[str, str] = {}
        if config.admin is not None:
            config.admin.reset()  # keeps the clock's mode
            if not type(self).clock_is_manual:
                config.admin.set_clock_mode("manual")
                type(self).clock_is_manual = True
            clock = VirtualClock("manual", start=config.admin.now())
        else:
            clock = VirtualClock("wall", start=time.time())
        self.oracle = Oracle(config.profile, clock, config.enforcement)

    # -- plumbing ------------------------------------------------------------------------------------

    def _id_of(self, target_id: str) -> str:
        return self.ids.get(target_id, f"unmapped:{target_id}")

    def _send(
        self,
        rule: str,
        method: str,
        url: str,
        *,
        body: Any = _ANY,
        params: Sequence[tuple[str, str | int]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        book = self.bookkeeping
        book.requests += 1
        sent = dict(headers or {})
        request_id = None
        if book.requests % 2 == 0:
            request_id = f"sandproof-{self.run_label}-{book.requests}"
            sent["X-Request-ID"] = request_id
        if body is not _ANY:
            sent["Content-Type"] = "application/json"
        try:
            response = self.client.request(
                method,
                url,
                params=list(params) if params is not None else None,
                headers=sent,
                content=None if body is _ANY else json.dumps(body).encode(),
            )
        except httpx.HTTPError as exc:
            raise ContractViolation(rule, f"{method} {url}: transport error {type(exc).__name__}: {exc}") from exc
        if urlsplit(str(response.request.url)).path.startswith("/v1/"):
            got = response.headers.get("x-request-id")
            if not got:
                raise ContractViolation(rule, f"{method} {url} -> {response.status_code} has no X-Request-ID header")
            if request_id is not None and got != request_id:
                raise ContractViolation(rule, f"{method} {url}: X-Request-ID {request_id!r} came back as {got!r}")
        return response

    def _check(self, rule: str, response: httpx.Response, expected: Expected) -> Any:
        """Compare status, error code and (normalised by the caller) body shape; return the parsed JSON or None."""
        where = f"{response.request.method} {response.request.url.path}"
        status = response.status_code
        if status >= 500 and not self.bookkeeping.fault_armed and expected.status < 500:
            raise ContractViolation(rule, f"{where} -> {status} without an injected fault: {response.text[:200]!r}")
        if status != expected.status:
            raise ContractViolation(
                rule, f"{where} -> {status}, the model says {expected.status}: {response.text[:200]!r}"
            )
        data: Any = None
        if response.content and "json" in response.headers.get("content-type", ""):
            try:
                data = response.json()
            except ValueError:
                data = None
        if expected.code is not None:
            got = data.get("code") if isinstance(data, dict) else None
            if got != expected.code:
                raise ContractViolation(rule, f"{where} -> {status} code {got!r}, the model says {expected.code!r}")
        if expected.validation and not (isinstance(data, dict) and isinstance(data.get("detail"), list)):
            raise ContractViolation(rule, f"{where} -> 422 without a FastAPI detail list: {response.text[:200]!r}")
        return data

    def _compare(self, rule: str, response: httpx.Response, expected: Any, actual: Any) -> None:
        found = diff(expected, actual, self.config.time_tolerance)
        if found:
            where = f"{response.request.method} {response.request.url.path}"
            raise ContractViolation(rule, f"{where}: body differs from the model at {found}")

    def _advance(self, rule: str, seconds: float) -> None:
        """Move the target's and the model's clocks together (admin only)."""
        admin = self.config.admin
        assert admin is not None
        now = admin.advance(seconds)
        mine = self.oracle.clock.advance(seconds)
        self.oracle.model.refresh()
        if abs(now - mine) > 1e-6:
            raise ContractViolation(rule, f"the target's clock reads {now}, the model's {mine}")

    def _sandbox_path(self, handle_or_id: SandboxHandle | str) -> str:
        target_id = handle_or_id.target_id if isinstance(handle_or_id, SandboxHandle) else handle_or_id
        return f"/v1/sandboxes/{target_id}"

    # -- lifecycle rules -----------------------------------------------------------------------------

    @initialize(target=sandboxes, data=st.data())
    def first_sandbox(self, data: st.DataObject) -> Any:
        """Start every example with one valid sandbox (with a policy when egress rules run)."""
        with_policy = self.config.enabled("egress_probe") or self.config.enabled("egress_patch")
        body = data.draw(_valid_bodies_with_policy if with_policy else _valid_bodies, label="body")
        return self._create("first_sandbox", body)

    @precondition(_on("create"))
    @rule(target=sandboxes, body=create_bodies())
    def create(self, body: Json) -> Any:
        """Create a sandbox (valid or invalid body) and compare the answer with the model."""
        return self._create("create", body)

    @precondition(_on("create_with_policy"))
    @rule(target=sandboxes, body=create_bodies(with_policy=True))
    def create_with_policy(self, body: Json) -> Any:
        """Create a sandbox with a valid ``networkPolicy`` (it gets an egress sidecar)."""
        return self._create("create_with_policy", body)

    def _create(self, rule: str, body: Json) -> Any:
        if self.config.admin is not None:
            self._advance(rule, 1.0)  # distinct createdAt, so "newest first" is observable
        sent = {**body, "metadata": {**(body.get("metadata") or {}), RUN_LABEL: self.run_label}}
        if not self.config.egress:
            sent.pop("networkPolicy", None)  # the server has no egress sidecar image configured
        expected, record = self.oracle.create(sent)
        response = self._send(rule, "POST", "/v1/sandboxes", body=sent)
        data = self._check(rule, response, expected)
        if record is None:
            return multiple()
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise ContractViolation(rule, f"202 without an id: {response.text[:200]!r}")
        handle = SandboxHandle(f"sb{len(self.bookkeeping.handles) + 1}", data["id"], record.id)
        self.ids[handle.target_id] = handle.model_id
        self.bookkeeping.handles.append(handle)
        self._compare(rule, response, expected.body, normalise_sandbox(data, self._id_of))
        self.bookkeeping.listing_dirty = True
        return handle

    @precondition(_on("get"))
    @rule(sb=sandboxes)
    def get(self, sb: SandboxHandle) -> None:
        """Read a sandbox."""
        expected = self.oracle.get(sb.model_id)
        response = self._send("get", "GET", self._sandbox_path(sb))
        data = self._check("get", response, expected)
        if expected.status == 200:
            self._compare("get", response, expected.body, normalise_sandbox(data, self._id_of))

    @precondition(_on("list_sandboxes"))
    @rule(
        states=st.lists(_state_spellings, max_size=2),
        metadata=st.one_of(st.just({}), _metadata),
        page=st.one_of(st.none(), st.integers(1, 3)),
        page_size=st.one_of(st.none(), st.integers(1, 3)),
        flaw=st.sampled_from(("none",) * 9 + ("page=0", "pageSize=201", "metadata")),
    )
    def list_sandboxes(
        self, states: list[str], metadata: dict[str, str], page: int | None, page_size: int | None, flaw: str
    ) -> None:
        """List with state and metadata filters and pagination (sometimes malformed)."""
        pairs = [f"{k}={v}" for k, v in metadata.items()]
        if flaw == "metadata":
            pairs.append("team")
        pairs.append(f"{RUN_LABEL}={self.run_label}")
        query: list[tuple[str, str]] = [("state", s) for s in states]
        query.append(("metadata", "&".join(pairs)))
        if flaw == "page=0":
            page = 0
        if flaw == "pageSize=201":
            page_size = 201
        if page is not None:
            query.append(("page", str(page)))
        if page_size is not None:
            query.append(("pageSize", str(page_size)))
        self._compare_listing("list_sandboxes", query)

    def _compare_listing(self, rule: str, query: list[tuple[str, str]]) -> None:
        expected = self.oracle.list(query)
        response = self._send(rule, "GET", "/v1/sandboxes", params=list(query))
        data = self._check(rule, response, expected)
        if expected.status != 200:
            return
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise ContractViolation(rule, f"list answer has no items: {response.text[:200]!r}")
        gone = {h.target_id for h in self.bookkeeping.handles if self.oracle.lookup(h.model_id) is None}
        listed = [item.get("id") for item in data["items"] if isinstance(item, dict)]
        ghosts = [self._id_of(str(i)) for i in listed if i in gone]
        if ghosts:
            raise ContractViolation(rule, f"deleted or expired sandboxes are still listed: {ghosts}")
        created = [_parse_time(item.get("createdAt")) for item in data["items"] if isinstance(item, dict)]
        if any(not isinstance(c, float) for c in created) or any(a < b for a, b in itertools.pairwise(created)):
            raise ContractViolation(rule, f"the list is not newest first: createdAt {created}")
        self._compare(rule, response, expected.body, normalise_list(data, self._id_of))

    @precondition(_on("delete"))
    @rule(target=deleted, sb=consumes(sandboxes))
    def delete(self, sb: SandboxHandle) -> SandboxHandle:
        """Delete a sandbox (404 when it already expired); it moves to the ``deleted`` bundle."""
        expected = self.oracle.delete(sb.model_id)
        response = self._send("delete", "DELETE", self._sandbox_path(sb))
        self._check("delete", response, expected)
        self.bookkeeping.listing_dirty |= expected.status < 300
        return sb

    @precondition(_on("delete"))
    @rule(sb=deleted, operation=_gone_operations)
    def use_deleted(self, sb: SandboxHandle, operation: str) -> None:
        """Call an operation on a deleted sandbox: 404 with the runtime's not-found code."""
        self._gone("use_deleted", sb.target_id, sb.model_id, operation)

    @precondition(_on("pause"))
    @rule(sb=sandboxes)
    def pause(self, sb: SandboxHandle) -> None:
        """Pause a sandbox (409 unless Running)."""
        expected = self.oracle.pause(sb.model_id)
        self._check("pause", self._send("pause", "POST", self._sandbox_path(sb) + "/pause"), expected)
        self.bookkeeping.listing_dirty |= expected.status < 300

    @precondition(_on("resume"))
    @rule(sb=sandboxes)
    def resume(self, sb: SandboxHandle) -> None:
        """Resume a sandbox (409 unless Paused)."""
        expected = self.oracle.resume(sb.model_id)
        self._check("resume", self._send("resume", "POST", self._sandbox_path(sb) + "/resume"), expected)
        self.bookkeeping.listing_dirty |= expected.status < 300

    @precondition(_on("renew"))
    @rule(
        sb=sandboxes,
        minutes=st.sampled_from((1, 10, 60, 120, -1, -60)),
        flaw=st.sampled_from(("none",) * 6 + ("missing", "not-a-date")),
    )
    def renew(self, sb: SandboxHandle, minutes: int, flaw: str) -> None:
        """Renew the expiration to now ± minutes (400 in the past, 409 without expiry, 422 malformed)."""
        when = datetime.fromtimestamp(self.oracle.clock.now() + 60 * minutes, UTC).isoformat()
        body: Json = {"expiresAt": when}
        if flaw == "missing":
            body = {}
        elif flaw == "not-a-date":
            body = {"expiresAt": "tomorrow"}
        expected = self.oracle.renew(sb.model_id, body)
        response = self._send("renew", "POST", self._sandbox_path(sb) + "/renew-expiration", body=body)
        data = self._check("renew", response, expected)
        if expected.status == 200:
            actual = {k: _parse_time(v) for k, v in data.items()} if isinstance(data, dict) else data
            self._compare("renew", response, expected.body, actual)
            self.bookkeeping.listing_dirty = True

    @precondition(_on("patch_metadata"))
    @rule(sb=sandboxes, patch=_patches)
    def patch_metadata(self, sb: SandboxHandle, patch: dict[str, str | None]) -> None:
        """Merge-patch the metadata (null deletes; reserved or malformed labels: 400)."""
        expected = self.oracle.patch_metadata(sb.model_id, patch)
        response = self._send("patch_metadata", "PATCH", self._sandbox_path(sb) + "/metadata", body=patch)
        data = self._check("patch_metadata", response, expected)
        if expected.status == 200:
            self._compare("patch_metadata", response, expected.body, normalise_sandbox(data, self._id_of))
            self.bookkeeping.listing_dirty = True

    @precondition(_on("missing_sandbox"))
    @rule(operation=_gone_operations, sandbox_id=st.uuids().map(str))
    def missing_sandbox(self, operation: str, sandbox_id: str) -> None:
        """Call an operation on an id that never existed: 404 with the runtime's not-found code."""
        self._gone("missing_sandbox", sandbox_id, sandbox_id, operation)

    def _gone(self, rule: str, target_id: str, model_id: str, operation: str) -> None:
        path = self._sandbox_path(target_id)
        calls: dict[str, tuple[str, str, Any]] = {
            "get": ("GET", path, _ANY),
            "delete": ("DELETE", path, _ANY),
            "pause": ("POST", path + "/pause", _ANY),
            "resume": ("POST", path + "/resume", _ANY),
            "renew": ("POST", path + "/renew-expiration", {"expiresAt": "2999-01-01T00:00:00+00:00"}),
            "endpoint": ("GET", path + f"/endpoints/{EXECD_PORT}", _ANY),
        }
        method, url, body = calls[operation]
        expected = self.oracle.get(model_id)
        if expected.status == 200:
            raise AssertionError(f"{rule} on a live sandbox")  # the machine's own bookkeeping is wrong
        self._check(rule, self._send(rule, method, url, body=body), expected)

    # -- endpoints, execd, egress --------------------------------------------------------------------

    def _endpoint(
        self, rule: str, sb: SandboxHandle, port: int, proxy: bool, expires: int | None = None
    ) -> tuple[str, dict[str, str]] | None:
        """Resolve a sandbox port like the SDK; return (base URL, headers) when the model says 200."""
        expected = self.oracle.endpoint(sb.model_id, port, proxy, expires)
        params: list[tuple[str, str | int]] = [("use_server_proxy", "true" if proxy else "false")]
        if expires is not None:
            params.append(("expires", expires))
        response = self._send(rule, "GET", self._sandbox_path(sb) + f"/endpoints/{port}", params=params)
        data = self._check(rule, response, expected)
        if expected.status != 200:
            return None
        endpoint = data.get("endpoint") if isinstance(data, dict) else None
        if not isinstance(endpoint, str) or not endpoint or "://" in endpoint:
            raise ContractViolation(rule, f"endpoint must be a scheme-less host[:port][/path]: {response.text[:200]!r}")
        if proxy and not endpoint.endswith(f"/sandboxes/{sb.target_id}/proxy/{port}"):
            raise ContractViolation(rule, f"use_server_proxy endpoint {endpoint!r} is not the server proxy route")
        headers = data.get("headers") or {}
        if not isinstance(headers, dict):
            raise ContractViolation(rule, f"endpoint headers must be an object: {response.text[:200]!r}")
        scheme = urlsplit(str(response.request.url)).scheme or "http"
        return f"{scheme}://{endpoint}", {str(k): str(v) for k, v in headers.items()}

    @precondition(_on("endpoint"))
    @rule(
        sb=sandboxes,
        port=st.sampled_from((EXECD_PORT, EGRESS_PORT, 0, 70000)),
        proxy=st.booleans(),
        expires=st.sampled_from((None, None, None, 4102444800)),
    )
    def endpoint(self, sb: SandboxHandle, port: int, proxy: bool, expires: int | None) -> None:
        """Resolve a sandbox port (direct or through the server proxy; bad ports and proxy+expires: 400)."""
        self._endpoint("endpoint", sb, port, proxy, expires)

    def _exec(self, rule: str, sb: SandboxHandle, command: Command, proxy: bool) -> None:
        found = self._endpoint(rule, sb, EXECD_PORT, proxy)
        if found is None:
            return
        base, headers = found
        gate = self.oracle.backend(sb.model_id, EXECD_PORT, proxy)
        response = self._send(
            rule,
            "POST",
            base + "/command",
            body={"command": command.text},
            headers={**headers, "Accept": "text/event-stream"},
        )
        if gate is not None:
            self._check(rule, response, gate)
            return
        self._check(rule, response, Expected(200))
        if "text/event-stream" not in response.headers.get("content-type", ""):
            raise ContractViolation(rule, f"command stream has content type {response.headers.get('content-type')!r}")
        result = parse_run(response.text)
        want_code, want_stdout = self.oracle.run(sb.model_id, command)
        strict = self.config.admin is not None
        if want_stdout is None and not strict:
            return  # an allowed probe's outcome depends on the real network
        if result.exit_code != want_code:
            raise ContractViolation(
                rule,
                f"{command.text!r} exited {result.exit_code}, the model says {want_code} (stderr {result.stderr!r})",
            )
        if want_stdout is not None and result.stdout != want_stdout:
            raise ContractViolation(rule, f"{command.text!r} printed {result.stdout!r}, the model says {want_stdout!r}")
        if (
            isinstance(command, Probe)
            and want_code == 0
            and command.tool == "getent"
            and command.host not in result.stdout
        ):
            raise ContractViolation(rule, f"{command.text!r} printed no address line: {result.stdout!r}")
        if result.command_id is None:
            raise ContractViolation(rule, f"{command.text!r}: the stream has no init event with the command id")
        status = self._send(rule, "GET", f"{base}/command/status/{result.command_id}", headers=headers)
        data = self._check(rule, status, Expected(200))
        record = data if isinstance(data, dict) else {}
        if record.get("running") is not False or record.get("exit_code") != want_code:
            raise ContractViolation(
                rule, f"status of {command.text!r} is {record!r}, the model says finished with exit code {want_code}"
            )

    @precondition(_on("run_command"))
    @rule(sb=sandboxes, command=_commands, proxy=st.booleans())
    def run_command(self, sb: SandboxHandle, command: Command, proxy: bool) -> None:
        """Run a command through execd and compare output, exit code and status record with the model."""
        self._exec("run_command", sb, command, proxy)

    @precondition(_on("egress_probe"))
    @rule(sb=sandboxes, probe=_probes, proxy=st.booleans())
    def egress_probe(self, sb: SandboxHandle, probe: Probe, proxy: bool) -> None:
        """Probe a host from inside the sandbox: the reference policy engine decides whether it gets out."""
        self._exec("egress_probe", sb, probe, proxy)

    def _egress(self, rule: str, sb: SandboxHandle, method: str, body: Any, proxy: bool) -> None:
        found = self._endpoint(rule, sb, EGRESS_PORT, proxy)
        if found is None:
            return
        base, headers = found
        gate = self.oracle.backend(sb.model_id, EGRESS_PORT, proxy)
        response = self._send(rule, method, base + "/policy", body=body, headers=headers)
        if gate is not None:
            self._check(rule, response, gate)
            return
        expected = self.oracle.egress(sb.model_id, method, body)
        data = self._check(rule, response, expected)
        if expected.status != 200:
            return
        self._compare(rule, response, expected.body, data)
        if method != "GET":  # read the policy back, as a client checking its change would
            expected = self.oracle.egress(sb.model_id, "GET", _ANY)
            response = self._send(rule, "GET", base + "/policy", headers=headers)
            self._compare(rule, response, expected.body, self._check(rule, response, expected))

    @precondition(_on("egress_get"))
    @rule(sb=sandboxes, proxy=st.booleans())
    def egress_get(self, sb: SandboxHandle, proxy: bool) -> None:
        """Read the sidecar's policy (502 without a sidecar or when not running)."""
        self._egress("egress_get", sb, "GET", _ANY, proxy)

    @precondition(_on("egress_patch"))
    @rule(sb=sandboxes, rules=st.one_of(st.lists(_rules_st, min_size=1, max_size=3), st.just([])), proxy=st.booleans())
    def egress_patch(self, sb: SandboxHandle, rules: list[Json], proxy: bool) -> None:
        """Merge rules into the policy (incoming first; an empty list: 400)."""
        self._egress("egress_patch", sb, "PATCH", rules, proxy)

    @precondition(_on("egress_delete"))
    @rule(sb=sandboxes, names=st.one_of(st.lists(_targets, min_size=1, max_size=3), st.just([])), proxy=st.booleans())
    def egress_delete(self, sb: SandboxHandle, names: list[str], proxy: bool) -> None:
        """Remove rules by target (unknown targets ignored; an empty list: 400)."""
        self._egress("egress_delete", sb, "DELETE", names, proxy)

    # -- admin-only rules ----------------------------------------------------------------------------

    @precondition(_on("inject_fault"))
    @rule(sb=sandboxes, kind=st.sampled_from(("unavailable", "pending_pod")))
    def inject_fault(self, sb: SandboxHandle, kind: str) -> None:
        """Inject one fault through ``/_mock/faults``, see it answered once, then the normal answer."""
        admin = self.config.admin
        assert admin is not None
        path = self._sandbox_path(sb)
        if kind == "unavailable":
            admin.add_fault(
                method="GET",
                path=f"*/sandboxes/{sb.target_id}",
                status=503,
                body={"code": "SERVICE_UNAVAILABLE", "message": "service unavailable"},
                headers={"Retry-After": "1"},
                times=1,
            )
            url, fault = path, Expected(503, "SERVICE_UNAVAILABLE")
        else:
            admin.add_fault(
                method="GET",
                path=f"*/sandboxes/{sb.target_id}/endpoints/*",
                status=404,
                body={"code": "KUBERNETES::POD_IP_NOT_AVAILABLE", "message": "Pod IP is not yet available."},
                times=1,
            )
            url, fault = path + f"/endpoints/{EXECD_PORT}", Expected(404, "KUBERNETES::POD_IP_NOT_AVAILABLE")
        self.bookkeeping.fault_armed = True
        try:
            response = self._send("inject_fault", "GET", url)
            self._check("inject_fault", response, fault)
        finally:
            self.bookkeeping.fault_armed = False
        if kind == "unavailable" and response.headers.get("retry-after") != "1":
            raise ContractViolation("inject_fault", f"the 503 lost its Retry-After header: {dict(response.headers)}")
        left = admin.faults()
        if left:
            raise ContractViolation("inject_fault", f"a times=1 fault is still armed after firing: {left}")
        if kind == "unavailable":
            self.get(sb)
        else:
            self._endpoint("inject_fault", sb, EXECD_PORT, False)

    @precondition(_on("advance_clock"))
    @rule(seconds=st.sampled_from((61, 1, 59, 60, 600, 3600, 7200)))
    def advance_clock(self, seconds: int) -> None:
        """Advance the target's virtual clock and the model's together (sandboxes expire)."""
        self._advance("advance_clock", float(seconds))
        self.bookkeeping.listing_dirty = True

    # -- invariants and teardown ---------------------------------------------------------------------

    @invariant()
    def listing_matches_model(self) -> None:
        """After a change, the full listing matches the model: no ghosts, newest first, same items."""
        if not self.bookkeeping.listing_dirty:
            return
        self.bookkeeping.listing_dirty = False
        self._compare_listing("invariant", [("metadata", f"{RUN_LABEL}={self.run_label}"), ("pageSize", "200")])

    def teardown(self) -> None:
        """Delete what is still alive (without the admin API) and close the client."""
        try:
            if self.config.admin is None:
                for handle in self.bookkeeping.handles:
                    if self.oracle.lookup(handle.model_id) is not None:
                        self.client.delete(self._sandbox_path(handle))
        except httpx.HTTPError:
            pass
        finally:
            self.client.close()


def http_clients(base_url: str, *, api_key: str | None = None, timeout: float = 10.0) -> ClientFactory:
    """Return a factory of ``httpx.Client`` on ``base_url`` (with the API key header) sharing one SSL context."""
    context = httpx.create_ssl_context()
    headers = {"OPEN-SANDBOX-API-KEY": api_key} if api_key else {}
    return lambda: httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, verify=context)


def make_machine(
    client_factory: ClientFactory,
    *,
    admin: AdminClient | None = None,
    operations: Iterable[str] | None = None,
    profile: RuntimeProfile | str = "docker",
    enforcement: str = "dns",
    time_tolerance: float | None = None,
    egress: bool = True,
    name: str | None = None,
) -> type[OpenSandboxAPIMachine]:
    """Return a machine class bound to a target: ``client_factory()`` gives an ``httpx.Client`` on its base URL.

    ``operations`` picks the rule groups of :data:`OPERATIONS` (default: all). ``admin`` enables the reset,
    clock and fault rules; without it times compare within ``time_tolerance`` (default 5 s, else 1 ms).
    ``egress=False`` is for a server without an egress sidecar image: no ``networkPolicy``, no egress rules.
    """
    chosen = list(operations) if operations is not None else ["state-machine"]
    unknown = [op for op in chosen if op not in OPERATIONS]
    if unknown:
        raise ValueError(f"unknown operations {unknown}; known: {', '.join(OPERATIONS)}")
    rules = frozenset().union(*(OPERATIONS[op] for op in chosen)) | {"create"}
    config = MachineConfig(
        client_factory=client_factory,
        admin=admin,
        rules=rules,
        profile=make_profile(profile) if isinstance(profile, str) else profile,
        enforcement=enforcement,
        time_tolerance=time_tolerance if time_tolerance is not None else (1e-3 if admin is not None else 5.0),
        egress=egress,
    )
    label = name or "OpenSandboxAPI_" + "_".join(op.replace("-", "_") for op in chosen)
    machine: type[OpenSandboxAPIMachine] = type(label, (OpenSandboxAPIMachine,), {"config": config})
    return machine


def machine_settings(
    base: settings | None = None,
    *,
    max_examples: int | None = None,
    steps: int | None = None,
    shrink: bool = True,
) -> settings:
    """Return settings for a machine run derived from ``base`` (default: the active profile).

    Steps default to 10 for small budgets (≤ 100 examples, e.g. ``ci``) and 40 above (``thorough``).
    """
    parent = base if base is not None else settings()
    examples = max_examples if max_examples is not None else parent.max_examples
    dropped = (Phase.explain,) if shrink else (Phase.shrink, Phase.explain)
    phases = tuple(p for p in parent.phases if p not in dropped)
    return settings(
        parent,
        max_examples=examples,
        stateful_step_count=steps if steps is not None else (10 if examples <= 100 else 40),
        deadline=None,
        print_blob=True,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=[*parent.suppress_health_check, HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def run_machine(
    machine: type[OpenSandboxAPIMachine],
    *,
    settings: settings | None = None,
    seed: int | None = None,
    replay: str = "",
) -> None:
    """Run ``machine`` as a test with a known seed; on failure add the seed and how to replay it.

    The seed is ``seed``, else pytest's ``--hypothesis-seed``, else a fresh random one (unless the settings
    derandomize). ``replay`` is the command line that reruns the test (the seed option is appended).
    """
    from hypothesis import core

    chosen = settings or machine_settings()
    used = seed if seed is not None else core.global_force_seed
    if used is None and not chosen.derandomize:
        used = random.getrandbits(32)
    factory: type[OpenSandboxAPIMachine] = hypothesis_seed(used)(machine) if used is not None else machine
    try:
        run_state_machine_as_test(factory, settings=chosen)
    except BaseException as exc:
        if used is not None:
            command = f"{replay} --hypothesis-seed={used}".strip() if replay else f"--hypothesis-seed={used}"
            exc.add_note(
                f"sandproof: Hypothesis seed {used}. Replay the same run with: {command} "
                "(or paste the @reproduce_failure decorator printed above onto the machine class; "
                "see docs/opensandbox-contract.md)."
            )
        raise


def run_against_mock(
    mock: Any,
    *,
    operations: Iterable[str] | None = None,
    settings: settings | None = None,
    seed: int | None = None,
) -> BaseException | None:
    """Serve ``mock`` (a ``MockCore``) on a loopback socket, run the machine on it, return the failure or None."""
    with mock.server() as server:
        admin = AdminClient(server.url)
        try:
            machine = make_machine(http_clients(server.url), admin=admin, operations=operations)
            try:
                run_machine(machine, settings=settings, seed=seed)
            except Exception as exc:
                return exc
            return None
        finally:
            admin.close()


def run_mutant(name: str, factory: Callable[[], Any], *, examples: int = 150, seed: int = 0) -> bool:
    """Tell whether the machine kills a wrong mock (for ``harness.mutation.mutation_score``).

    ``factory()`` builds the mock; its ``operation`` attribute, when present, picks the rule group aimed at it.
    Runs at most ``examples`` programs of 10 steps with a fixed seed and no shrinking.
    """
    operation = getattr(factory, "operation", "state-machine")
    quick = machine_settings(settings(max_examples=examples, database=None), steps=10, shrink=False)
    return run_against_mock(factory(), operations=[operation], settings=quick, seed=seed) is not None
