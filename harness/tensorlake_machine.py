"""The TensorLake API contract: a Hypothesis state machine whose oracle is the mock's own HTTP-free model.

``make_machine(http_factory, admin=...)`` returns a :class:`RuleBasedStateMachine` subclass that drives any
TensorLake server over HTTP (the flat lifecycle paths ``/sandboxes...``, the sandbox proxy and the in-sandbox
management API on port 9501) and checks every answer against :class:`Oracle`: a fresh
:class:`~mockserver.tensorlake.models.TensorLakeModel` on its own manual virtual clock, resolving names from
the same DNS table as the target. Each prediction carries the status, the error ``code``, and the normalised
SandboxInfo (ids mapped through the ``sandboxes`` bundle: each handle holds the target's id and the model's).

Rules: create (ephemeral or named, with valid and invalid ``network`` policies), get by id and by name, list,
update (``network`` absent / ``null`` / object, ``name``, ``auto_resume``, ``exposed_ports`` including 9501,
0 and 65536, ``allow_unauthenticated_access``), expose and unexpose ports the way the SDK does (GET, then
PATCH), suspend and resume, delete, egress probes run inside a sandbox through ``/api/v1/processes/run``
(``getent hosts NAME`` and ``curl -s URL`` to the policy's own entries, their subdomains and apexes, and
unrelated hosts; :mod:`contracts.tensorlake` decides the outcome), ingress requests to the management port and
to exposed and unexposed user ports with and without credentials, and, only with the ``/_mock`` admin API,
injected 503s on mutations, clock advances (timeouts) and transition timings.

Modes. With the admin API (``strict``) every example starts from a reset target whose clock is manual and
mirrored by the oracle's, with a known DNS table: whole bodies, error codes and probe exit codes must match.
Without it (a real deployment, ``tensorlake-cloud``) the machine prefixes names with a per-example label,
waits for transitions to settle, compares the core fields (status, name, policy, ports, flags), checks only
what the policy decides for certain (a denied probe must fail) and deletes what it created.

Invariants: every SandboxInfo shows a complete policy that some accepted create or PATCH set for that sandbox;
a rejected request changes nothing (GET before and after); GET answers 404 after a delete; the listing
matches the model. A failure raises :class:`ContractViolation`; Hypothesis shrinks it to a minimal program
and prints it (the costly ``explain`` phase is skipped), and :func:`run_machine` adds the seed and the
command line that replays it. :func:`check_mock` runs the machine against an in-process mock object, and
:func:`kills_mutant` is the runner :func:`harness.mutation.mutation_score` takes for wrong mocks.
"""

from __future__ import annotations

import ipaddress
import json
import random
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import httpx
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from contracts.tensorlake import NetworkConfig, PolicyError, decide_dns, decide_egress
from mockserver.core import AdminClient, ApiError, DnsTable, IdFactory, MockCore, MockServer, VirtualClock
from mockserver.tensorlake.models import TensorLakeModel, Timings
from mockserver.tensorlake.records import ROUTABLE, ROUTING_HINT, STATUSES, Sandbox, Session, owner_id
from mockserver.tensorlake.validate import MANAGEMENT_PORT, parse_create

__all__ = [
    "ADMIN_OPERATIONS",
    "DEFAULT_KEY",
    "DNS_ENTRIES",
    "MUTANT_SEEDS",
    "OPERATIONS",
    "ContractViolation",
    "Expected",
    "HttpFactory",
    "MachineConfig",
    "Name",
    "Oracle",
    "ProbeExpectation",
    "RunResult",
    "SandboxHandle",
    "TensorLakeAPIMachine",
    "check_mock",
    "default_resolve",
    "destinations",
    "expect_probe",
    "http_clients",
    "kill_plan",
    "kills_mutant",
    "machine_settings",
    "make_machine",
    "normalise_info",
    "parse_sse",
    "run_machine",
    "system_resolve",
]

HttpFactory = Callable[[], httpx.Client]
Resolve = Callable[[str], Sequence[str]]
Json = dict[str, Any]

NAMESPACE = "default"
OTHER_KEY = "sandproof-other-key"
DEFAULT_KEY = "sandproof-key"
DEFAULT_RESOLVER = "10.0.0.2"
DEFAULT_INGRESS_DOMAIN = "sandbox.localhost"
SESSION_COOKIES = ("tl.session_token", "tl-session")
ORGANIZATION, PROJECT = "org_sandproof", "proj_sandproof"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
FAULT_BODY = {"code": "unavailable", "message": "injected fault"}
LENIENT_TIMEOUT = 3600
TRANSITIONAL = frozenset({"pending", "suspending", "snapshotting"})
URL_KEYS = frozenset({"sandbox_url", "ingress_endpoint"})
CORE_KEYS = ("id", "status", "name", "network_policy", "exposed_ports", "allow_unauthenticated_access", "auto_resume")
POLICY_KEYS = frozenset({"allow_internet_access", "allow_out", "deny_out"})

#: The DNS table a strict run installs on the target and gives the oracle (unknown names resolve synthetically).
#: ``www.example.com`` sits inside ``10.0.0.0/8`` and ``example.org`` is ``203.0.113.10``, so hostname and
#: address rules meet on the same destination.
DNS_ENTRIES: dict[str, list[str]] = {
    "example.com": ["93.184.215.14"],
    "www.example.com": ["10.20.30.40"],
    "example.org": ["203.0.113.10"],
    "pypi.org": ["151.101.0.223"],
    "files.pythonhosted.org": ["198.51.100.7"],
    "github.com": ["140.82.112.3"],
}
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
    "10.0.0.2",
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
    "10.0.0.2",
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
UNRELATED = ("github.com", "www.example.net", "192.0.2.1", "8.8.8.8")
VARIANTS = ("as-is", "sub", "apex", "outside")
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
        "allow_out": ["10.0.0.2", "*.example.com", "example.org"],
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

#: Report operation → the rules its machine runs (``create`` always runs).
OPERATIONS: dict[str, frozenset[str]] = {
    "lifecycle": frozenset({"create", "create_named_like", "get", "get_by_name", "list_sandboxes", "delete"}),
    "update": frozenset({"create", "get", "update"}),
    "ports-ingress": frozenset({"create", "update", "expose_ports", "unexpose_ports", "ingress"}),
    "suspend-resume": frozenset({"create", "get", "update", "suspend", "resume", "delete", "ingress"}),
    "egress-probe": frozenset({"create", "update", "egress_probe"}),
    "faults": frozenset({"create", "update", "inject_fault"}),
    "timeouts": frozenset({"create", "list_sandboxes", "suspend", "resume", "ingress", "advance_clock", "set_timings"}),
}
OPERATIONS["state-machine"] = frozenset().union(*OPERATIONS.values()) | {"delete", "list_sandboxes"}
#: Fixed seeds the mutation runs use (each run: 30 programs of up to 12 steps, no shrinking).
MUTANT_SEEDS = (4, 5)
#: Operations that need the ``/_mock`` admin API, and the rules that do.
ADMIN_OPERATIONS = frozenset({"faults", "timeouts"})
ADMIN_RULES = frozenset({"inject_fault", "advance_clock", "set_timings"})


class ContractViolation(AssertionError):
    """Raise when the target's answer differs from the model's prediction; ``rule`` names the step."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"[{rule}] {message}")
        self.rule = rule


_ANY: Any = object()


@dataclass(frozen=True)
class Expected:
    """The model's prediction of one HTTP answer: status, error ``code`` (None: unchecked), normalised body."""

    status: int
    code: str | None = None
    body: Any = _ANY

    @classmethod
    def error(cls, exc: ApiError) -> Expected:
        """Return the prediction of an :class:`ApiError`."""
        return cls(exc.status, exc.code)


@dataclass(frozen=True)
class Name:
    """A sandbox name as drawn: valid names get the run's prefix on the wire, invalid ones go as they are."""

    word: str
    valid: bool = True


@dataclass
class SandboxHandle:
    """A sandbox the machine created: its id on the target and in the model, and where its proxy lives."""

    alias: str
    target_id: str
    model_id: str
    sandbox_url: str | None = None

    def __repr__(self) -> str:
        return self.alias


# --- normalised views --------------------------------------------------------------------------------------


def normalise_policy(value: Any) -> Any:
    """Return a ``network_policy`` in reference form when it parses, else unchanged."""
    if not isinstance(value, dict):
        return value
    try:
        return NetworkConfig.from_json(value).to_json()
    except PolicyError:
        return value


def normalise_info(data: Any, id_of: Callable[[str], str]) -> Any:
    """Return a SandboxInfo without its URLs, its id mapped, a missing policy as null and null ports as []."""
    if not isinstance(data, dict):
        return data
    out = {k: v for k, v in data.items() if k not in URL_KEYS and k != "sandbox_id"}
    raw = data.get("id", data.get("sandbox_id"))
    out["id"] = id_of(raw) if isinstance(raw, str) else raw
    out.setdefault("network_policy", None)
    if out.get("exposed_ports") is None:
        out["exposed_ports"] = []
    return out


def core_view(info: Json) -> Json:
    """Return the fields every implementation must agree on, the policy normalised."""
    view = {key: info.get(key) for key in CORE_KEYS}
    view["network_policy"] = normalise_policy(view["network_policy"])
    if view["allow_unauthenticated_access"] is None:
        view["allow_unauthenticated_access"] = False
    if view["auto_resume"] is None:
        view["auto_resume"] = True
    return view


def info_shape_problem(data: Any) -> str | None:
    """Return what makes ``data`` an unusable SandboxInfo for the SDK, or None."""
    if not isinstance(data, dict):
        return f"not a JSON object: {data!r:.200}"
    if not isinstance(data.get("id", data.get("sandbox_id")), str):
        return "no string id"
    if not isinstance(data.get("namespace"), str):
        return "no string namespace"
    if data.get("status") not in STATUSES:
        return f"status {data.get('status')!r} is not one of {', '.join(STATUSES)}"
    resources = data.get("resources")
    if not isinstance(resources, dict) or not all(k in resources for k in ("cpus", "memory_mb", "disk_mb")):
        return f"resources {resources!r} lack cpus, memory_mb or disk_mb"
    if "allow_unauthenticated_access" in data and not isinstance(data["allow_unauthenticated_access"], bool):
        return "allow_unauthenticated_access is not a boolean"
    if "file_systems" in data and not isinstance(data["file_systems"], list):
        return "file_systems is not a list"
    policy = data.get("network_policy")
    if policy is not None and (
        not isinstance(policy, dict)
        or set(policy) != POLICY_KEYS
        or not isinstance(policy["allow_internet_access"], bool)
        or not all(isinstance(policy[k], list) for k in ("allow_out", "deny_out"))
    ):
        return f"network_policy {policy!r} is not a complete policy (allow_internet_access, allow_out, deny_out)"
    return None


def diff(expected: Any, actual: Any, path: str = "$") -> str | None:
    """Return where ``actual`` first differs from ``expected``, or None."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = sorted(set(expected) - set(actual))
        extra = sorted(set(actual) - set(expected))
        if missing or extra:
            return f"{path}: keys differ (missing {missing}, unexpected {extra})"
        for key in expected:
            found = diff(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{path}: expected {expected!r}, got {actual!r}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            found = diff(want, got, f"{path}[{index}]")
            if found:
                return found
        return None
    if type(expected) is not type(actual) or expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r}"
    return None


# --- management API output --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    """What ``/api/v1/processes/run`` streamed: output lines per stream and the exit event."""

    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    exit_code: int | None
    signal: int | None


def parse_sse(text: str) -> RunResult:
    """Parse a ``text/event-stream`` body of ``data:`` frames (started, output lines, exit)."""
    stdout: list[str] = []
    stderr: list[str] = []
    exit_code: int | None = None
    signal: int | None = None
    for block in text.split("\n\n"):
        payload = "".join(line[5:].strip() for line in block.splitlines() if line.startswith("data:"))
        if not payload:
            continue
        try:
            event = json.loads(payload)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if "line" in event:
            (stderr if event.get("stream") == "stderr" else stdout).append(str(event["line"]))
        elif "exit_code" in event or "signal" in event:
            exit_code = event.get("exit_code") if isinstance(event.get("exit_code"), int) else None
            signal = event.get("signal") if isinstance(event.get("signal"), int) else None
    return RunResult(tuple(stdout), tuple(stderr), exit_code, signal)


# --- egress probes ----------------------------------------------------------------------------------------


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _derive(entry: str, variant: str) -> str:
    """Return a destination near a canonical policy entry: itself, a subdomain, its apex, or just outside it."""
    if entry.startswith("*."):
        base = entry[2:]
        return {"as-is": "a." + base, "sub": "a.b." + base, "apex": base}.get(variant, "x" + base)
    if "/" in entry:
        network = ipaddress.IPv4Network(entry)
        last = int(network.broadcast_address)
        offsets = {"as-is": int(network.network_address) + 1, "sub": last, "apex": int(network.network_address)}
        return str(ipaddress.IPv4Address(offsets.get(variant, min(last + 1, 2**32 - 1))))
    if _is_ipv4(entry):
        address = int(ipaddress.IPv4Address(entry))
        return str(ipaddress.IPv4Address(min(address + 1, 2**32 - 1))) if variant == "outside" else entry
    labels = entry.split(".")
    picks = {
        "as-is": entry,
        "sub": ("api." if entry.startswith("www.") else "www.") + entry,
        "apex": ".".join(labels[1:]) if len(labels) > 2 else entry,
    }
    return picks.get(variant, "x" + entry)


def destinations(policy: NetworkConfig | None, source: str, index: int) -> list[str]:
    """Return probe destinations: around one of the policy's entries (``source="entry"``) or an unrelated host."""
    entries = [] if policy is None else [*policy.allow_out, *policy.deny_out]
    if source != "entry" or not entries:
        return [UNRELATED[index % len(UNRELATED)]]
    entry = entries[index % len(entries)]
    return list(dict.fromkeys(_derive(entry, variant) for variant in VARIANTS))


@dataclass(frozen=True)
class ProbeExpectation:
    """What the reference policy says of one probe.

    ``exit_code`` is the exact exit code when DNS answers are known (None otherwise); ``blocked`` means the
    policy certainly stops it (it must fail anywhere); ``addresses`` are the lines ``getent`` must print.
    """

    exit_code: int | None
    blocked: bool
    addresses: tuple[str, ...] | None = None


def expect_probe(
    policy: NetworkConfig | None, tool: str, host: str, resolver: str, resolve: Resolve | None
) -> ProbeExpectation:
    """Decide ``getent hosts HOST`` or ``curl -s http://HOST/`` with :mod:`contracts.tensorlake`.

    DNS goes to ``resolver`` (:func:`decide_dns`); curl connects to the first address of the name (or the
    literal) and :func:`decide_egress` judges the name asked for and that address. ``resolve`` is the DNS the
    sandbox sees; None when unknown (only certain blocks are then predicted).
    """
    dns_ok = decide_dns(policy, resolver).allowed
    literal = _is_ipv4(host)
    if tool == "getent" and not literal:
        if not dns_ok:
            return ProbeExpectation(2, True, ())
        if resolve is None:
            return ProbeExpectation(None, False)
        found = tuple(resolve(host))
        return ProbeExpectation(0 if found else 2, False, found)
    if literal:
        allowed = decide_egress(policy, ip=host).allowed
        return ProbeExpectation(0 if allowed else 7, not allowed)
    if not dns_ok:
        return ProbeExpectation(6, True)
    if resolve is None:
        verdict = decide_egress(policy, host=host)
        return ProbeExpectation(None, not verdict.allowed and verdict.reason.startswith("deny_out"))
    found = tuple(resolve(host))
    if not found:
        return ProbeExpectation(6, False)
    allowed = decide_egress(policy, host=host, ip=found[0]).allowed
    return ProbeExpectation(0 if allowed else 7, not allowed)


def system_resolve(name: str) -> list[str]:
    """Return the IPv4 addresses of ``name`` from the system resolver ([] when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})


def default_resolve() -> Resolve:
    """Return the resolver a target without the admin API is assumed to share with this host.

    The system resolver when it answers for ``example.com``; otherwise (no DNS here) a synthetic table in
    which every name but ``*.invalid`` resolves, which is what a public resolver says of the names drawn.
    """
    return system_resolve if system_resolve("example.com") else DnsTable().resolve


# --- the oracle -------------------------------------------------------------------------------------------


class Oracle:
    """Predict a TensorLake server's answers by running the same requests on the mock's HTTP-free model.

    Each method mirrors the order of checks of the corresponding route or proxy step and returns an
    :class:`Expected` whose body is a normalised SandboxInfo with model ids.
    """

    def __init__(self, clock: VirtualClock, resolve: Resolve, owner: str) -> None:
        self.clock = clock
        self.resolve = resolve
        self.owner = owner
        self.model = TensorLakeModel(clock, IdFactory(0), resolve)

    def lookup(self, model_id: str) -> Sandbox | None:
        """Return the live model sandbox settled to now, or None once it is gone."""
        with self.model.lock:
            sb = self.model.sandboxes.get(model_id)
            if sb is not None:
                self.model.settle(sb)
            return self.model.sandboxes.get(model_id)

    def info(self, sb: Sandbox) -> Json:
        """Return the normalised SandboxInfo of a model sandbox."""
        data: Json = normalise_info(sb.info(sandbox_url=None, ingress_endpoint=None), str)
        return data

    def create(self, body: Json) -> tuple[Expected, Sandbox | None]:
        """Predict ``POST /sandboxes`` (the create response, without URLs)."""
        try:
            req = parse_create(body, self.resolve)
            sb, _ = self.model.create(self.owner, NAMESPACE, req)
        except ApiError as exc:
            return Expected.error(exc), None
        state = sb.status if req.wait else "pending"
        out: Json = {"sandbox_id": sb.id, "status": state}
        if sb.name is not None:
            out["name"] = sb.name
        if state == "running":
            out["routing_hint"] = ROUTING_HINT
        if state == "pending":
            out["pending_reason"] = sb.pending_reason or "scheduling"
        return Expected(200 if req.wait else 202, body=out), sb

    def get(self, ident: str) -> Expected:
        """Predict ``GET /sandboxes/{id-or-name}``."""
        try:
            return Expected(200, body=self.info(self.model.find(self.owner, NAMESPACE, ident)))
        except ApiError as exc:
            return Expected.error(exc)

    def list(self) -> Expected:
        """Predict ``GET /sandboxes``."""
        return Expected(200, body=[self.info(sb) for sb in self.model.list_sandboxes(self.owner, NAMESPACE)])

    def patch(self, model_id: str, body: Any) -> Expected:
        """Predict ``PATCH /sandboxes/{id}``."""
        try:
            sb, _ = self.model.patch(self.owner, NAMESPACE, model_id, body)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(200, body=self.info(sb))

    def delete(self, model_id: str) -> Expected:
        """Predict ``DELETE /sandboxes/{id}``."""
        try:
            return Expected(200, body=self.info(self.model.delete(self.owner, NAMESPACE, model_id)))
        except ApiError as exc:
            return Expected.error(exc)

    def suspend(self, model_id: str) -> Expected:
        """Predict ``POST /sandboxes/{id}/suspend``: 200 once suspended, 202 while suspending."""
        try:
            sb = self.model.suspend(self.owner, NAMESPACE, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        self.model.settle(sb)
        return Expected(200 if sb.status == "suspended" else 202, body=self.info(sb))

    def resume(self, model_id: str) -> Expected:
        """Predict ``POST /sandboxes/{id}/resume``: 200 once running, 202 while resuming."""
        try:
            sb = self.model.resume(self.owner, NAMESPACE, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        self.model.settle(sb)
        return Expected(200 if sb.status == "running" else 202, body=self.info(sb))

    def admit(
        self, label: str, port: int, key: str | None, cookies: Mapping[str, str], query: Mapping[str, str]
    ) -> Expected | None:
        """Predict the proxy's answer to a request for ``label`` (id or name) and ``port``; None: forwarded.

        Waking a suspended sandbox with ``auto_resume`` changes the model, as it changes the target.
        """
        model = self.model
        owner = None if key is None else owner_id(key)
        sb = model.find_any(label, owner) or model.find_any(label)
        if sb is None:
            return Expected(404, "SANDBOX_NOT_FOUND")
        public = port != MANAGEMENT_PORT and sb.allow_unauthenticated_access
        if port != MANAGEMENT_PORT and port not in sb.exposed_ports:
            return Expected(403, "PORT_NOT_EXPOSED")
        if not public:
            refused = self._refuse(sb, key, cookies, query)
            if refused is not None:
                return refused
        if sb.status == "suspended" and sb.auto_resume:
            model.wake(sb)
        if sb.status == "pending" and sb.resuming:
            model.settle(sb)
        if sb.status in ("running", "snapshotting", "suspending"):
            return None
        if sb.status in ("pending", "suspended"):
            return Expected(503, "SANDBOX_NOT_READY")
        return Expected(502, "SANDBOX_UNREACHABLE")

    def _refuse(
        self, sb: Sandbox, key: str | None, cookies: Mapping[str, str], query: Mapping[str, str]
    ) -> Expected | None:
        if key is not None:
            return Expected(403, "FORBIDDEN") if owner_id(key) != sb.owner else None
        token = next((cookies[name] for name in SESSION_COOKIES if cookies.get(name)), None)
        if token is None:
            return Expected(401, "UNAUTHENTICATED")
        session = self.model.sessions.get(token)
        if session is None:
            return Expected(401, "INVALID_SESSION")
        org, project = query.get("organizationId"), query.get("projectId")
        if not org or not project:
            return Expected(401, "MISSING_PROJECT")
        if (org, project) != (session.organization_id, session.project_id) or session.owner != sb.owner:
            return Expected(403, "FORBIDDEN")
        return None


# --- strategies -------------------------------------------------------------------------------------------

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


# --- the machine ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MachineConfig:
    """What one machine class runs against and which rules it enables."""

    http_factory: HttpFactory
    admin: AdminClient | None
    rules: frozenset[str]
    api_key: str | None = None
    resolve: Resolve | None = None
    settle_timeout: float = 120.0

    @property
    def strict(self) -> bool:
        """Tell whether the target has the admin API (exact comparisons)."""
        return self.admin is not None

    def enabled(self, name: str) -> bool:
        """Tell whether the rule runs (admin rules only with the admin API)."""
        return name in self.rules and (name not in ADMIN_RULES or self.admin is not None)


def _on(name: str) -> Callable[[Any], bool]:
    """Return a precondition enabling a rule when the machine's config lists it."""
    return lambda machine: bool(machine.config.enabled(name))


@dataclass
class _Book:
    """Per-example bookkeeping."""

    handles: list[SandboxHandle] = field(default_factory=list)
    stray: set[str] = field(default_factory=set)
    history: dict[str, list[Any]] = field(default_factory=dict)
    resolvers: dict[str, str] = field(default_factory=dict)
    listing_dirty: bool = False
    fault_armed: bool = False
    session: str | None = None
    ingress_endpoint: str | None = None
    clock_mode: str | None = None


class TensorLakeAPIMachine(RuleBasedStateMachine):
    """Drive a TensorLake server and compare every answer with the model (configure via :func:`make_machine`)."""

    config: ClassVar[MachineConfig]
    sandboxes = Bundle("sandboxes")

    def __init__(self) -> None:
        super().__init__()
        config = self.config
        self.client = config.http_factory()
        self.strict = config.strict
        self.key = config.api_key or _bearer(self.client) or DEFAULT_KEY
        self.book = _Book()
        self.ids: dict[str, str] = {}
        resolve: Resolve
        if config.admin is not None:
            self.book.clock_mode = self._clock_mode()
            config.admin.reset()
            config.admin.set_clock_mode("manual")
            config.admin.set_dns(DNS_ENTRIES, "synthetic")
            clock = VirtualClock("manual", start=config.admin.now())
            resolve = DnsTable(DNS_ENTRIES).resolve
            self.prefix = ""
        else:
            clock = VirtualClock("manual")
            resolve = config.resolve or default_resolve()
            self.prefix = f"sp{random.getrandbits(24):06x}-"
        self.oracle = Oracle(clock, resolve, owner_id(self.key))

    # -- plumbing ------------------------------------------------------------------------------------------

    def _clock_mode(self) -> str | None:
        try:
            data = self.client.get("/_mock/clock").json()
        except (httpx.HTTPError, ValueError):
            return None
        mode = data.get("mode") if isinstance(data, dict) else None
        return mode if isinstance(mode, str) else None

    def _id_of(self, target_id: str) -> str:
        return self.ids.get(target_id, f"unmapped:{target_id}")

    def _alias(self, model_id: str) -> str:
        return next((h.alias for h in self.book.handles if h.model_id == model_id), model_id)

    def _handle_of(self, model_id: str) -> SandboxHandle | None:
        return next((h for h in self.book.handles if h.model_id == model_id), None)

    def _name(self, name: Name) -> str:
        return self.prefix + name.word if name.valid else name.word

    def _wire(self, body: Json) -> Json:
        out = dict(body)
        if isinstance(out.get("name"), Name):
            out["name"] = self._name(out["name"])
        if not self.strict and isinstance(out.get("timeout_secs"), int):
            out["timeout_secs"] = LENIENT_TIMEOUT
        return out

    def _send(
        self,
        rule: str,
        method: str,
        url: str,
        *,
        body: Any = _ANY,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        anonymous: bool = False,
    ) -> httpx.Response:
        sent = dict(headers or {})
        content = None
        if body is not _ANY:
            sent["content-type"] = "application/json"
            content = json.dumps(body).encode()
        request = self.client.build_request(method, url, params=params, headers=sent, content=content)
        if anonymous:
            request.headers.pop("authorization", None)
            if "authorization" in sent:
                request.headers["authorization"] = sent["authorization"]
        try:
            return self.client.send(request)
        except httpx.HTTPError as exc:
            raise ContractViolation(rule, f"{method} {url}: transport error {type(exc).__name__}: {exc}") from exc

    def _check(self, rule: str, response: httpx.Response, expected: Expected, loose: Iterable[int] = ()) -> Any:
        """Compare the status (and, strictly, the error code); return the parsed JSON body or None.

        Without the admin API, statuses in ``loose`` are equivalent when the model predicts one of them, and so
        are 400 and 422.
        """
        where = f"{response.request.method} {response.request.url.path}"
        status = response.status_code
        accepted = {expected.status}
        if not self.strict:
            for group in (tuple(loose), (400, 422)):
                if expected.status in group:
                    accepted |= set(group)
        if status >= 500 and not self.book.fault_armed and expected.status < 500:
            raise ContractViolation(rule, f"{where} -> {status} without an injected fault: {response.text[:300]!r}")
        if not self.strict and expected.status == 404 and status == 200 and _terminated(response):
            return None  # the wire allows a deleted sandbox to read as terminated instead of 404
        if status not in accepted:
            raise ContractViolation(
                rule, f"{where} -> {status}, the model says {expected.status}: {response.text[:300]!r}"
            )
        data: Any = None
        if response.content and "json" in response.headers.get("content-type", ""):
            try:
                data = response.json()
            except ValueError:
                data = None
        if self.strict and expected.code is not None:
            got = data.get("code") if isinstance(data, dict) else None
            if got != expected.code:
                raise ContractViolation(rule, f"{where} -> {status} code {got!r}, the model says {expected.code!r}")
        return data

    def _observe(self, rule: str, response: httpx.Response, data: Any, expected: Any) -> None:
        """Check one SandboxInfo answer: SDK shape, URLs, policy history and the model's normalised view."""
        where = f"{response.request.method} {response.request.url.path}"
        problem = info_shape_problem(data)
        if problem:
            raise ContractViolation(rule, f"{where}: unusable SandboxInfo: {problem}")
        actual = normalise_info(data, self._id_of)
        self._check_urls(rule, where, data)
        self._check_history(rule, where, actual)
        self._compare(rule, where, expected, actual)

    def _compare(self, rule: str, where: str, expected: Json, actual: Json) -> None:
        found = diff(expected, actual) if self.strict else diff(core_view(expected), core_view(actual))
        if found:
            alias = self._alias(str(expected.get("id")))
            raise ContractViolation(rule, f"{where}: {alias} differs from the model at {found}")

    def _check_urls(self, rule: str, where: str, data: Json) -> None:
        status, url = data.get("status"), data.get("sandbox_url")
        if status == "running" and not url:
            raise ContractViolation(rule, f"{where}: a running sandbox without sandbox_url")
        if self.strict and (url is not None) != (status in ROUTABLE):
            raise ContractViolation(rule, f"{where}: sandbox_url {url!r} for a sandbox that is {status}")
        if isinstance(data.get("ingress_endpoint"), str):
            self.book.ingress_endpoint = data["ingress_endpoint"]
        handle = self._handle_of(self._id_of(str(data.get("id", data.get("sandbox_id")))))
        if handle is not None and isinstance(url, str) and url:
            handle.sandbox_url = url

    def _check_history(self, rule: str, where: str, actual: Json) -> None:
        """Every policy a GET shows is one an accepted create or PATCH set for that sandbox."""
        seen = self.book.history.get(str(actual.get("id")))
        if seen is None:
            return
        policy = actual.get("network_policy")
        if not self.strict:
            policy = normalise_policy(policy)
        if policy not in seen:
            raise ContractViolation(
                rule,
                f"{where}: {self._alias(str(actual.get('id')))} shows network_policy {policy!r}, which no accepted "
                f"create or PATCH set (accepted: {seen!r})",
            )

    def _snapshot(self, rule: str, sb: SandboxHandle) -> tuple[int, Any]:
        """Return the target's own GET of a sandbox (status, normalised view) without asking the model."""
        response = self._send(rule, "GET", f"/sandboxes/{sb.target_id}")
        data: Any = None
        if response.status_code == 200:
            try:
                data = normalise_info(response.json(), self._id_of)
            except ValueError:
                data = response.text
            if not self.strict and isinstance(data, dict):
                data = core_view(data)
        return response.status_code, data

    def _unchanged(self, rule: str, sb: SandboxHandle, before: tuple[int, Any]) -> None:
        after = self._snapshot(rule, sb)
        found = diff(before[1], after[1]) if before[0] == after[0] else f"GET status {before[0]} -> {after[0]}"
        if found:
            raise ContractViolation(rule, f"a rejected request changed {sb.alias}: {found}")

    def _settle(self, sb: SandboxHandle) -> None:
        """Wait (lenient mode) until the target's sandbox leaves a transitional status."""
        if self.strict:
            return
        deadline = time.monotonic() + self.config.settle_timeout
        while time.monotonic() < deadline:
            response = self._send("settle", "GET", f"/sandboxes/{sb.target_id}")
            try:
                data = response.json() if response.status_code == 200 else None
            except ValueError:
                data = None
            if not isinstance(data, dict) or data.get("status") not in TRANSITIONAL:
                return
            time.sleep(1.0)

    def _policy_accepted(self, model_id: str) -> None:
        sb = self.oracle.lookup(model_id)
        policy = None if sb is None or sb.network is None else sb.network.to_json()
        history = self.book.history.setdefault(model_id, [])
        if policy not in history:
            history.append(policy)

    # -- lifecycle rules -----------------------------------------------------------------------------------

    @initialize(target=sandboxes, body=seed_bodies(named=True))
    def seed_named(self, body: Json) -> Any:
        """Start with a named sandbox that has a policy."""
        return self._create("seed_named", body)

    @initialize(target=sandboxes, body=seed_bodies(named=False))
    def seed_ephemeral(self, body: Json) -> Any:
        """Start with an ephemeral sandbox that has a policy."""
        return self._create("seed_ephemeral", body)

    @precondition(_on("create"))
    @rule(target=sandboxes, body=create_bodies())
    def create(self, body: Json) -> Any:
        """Create a sandbox (valid or invalid body) and compare the answer with the model."""
        return self._create("create", body)

    def _create(self, rule: str, body: Json) -> Any:
        wire = self._wire(body)
        expected, record = self.oracle.create(wire)
        response = self._send(rule, "POST", "/sandboxes", body=wire)
        self.book.listing_dirty = True
        data: Any = None
        if response.is_success:
            try:
                data = response.json()
            except ValueError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("sandbox_id"), str):
                self.book.stray.add(data["sandbox_id"])
        data = self._check(rule, response, expected)
        if record is None:
            return multiple()
        if not isinstance(data, dict) or not isinstance(data.get("sandbox_id"), str):
            raise ContractViolation(rule, f"{response.status_code} without a sandbox_id: {response.text[:300]!r}")
        target_id = data["sandbox_id"]
        if target_id in self.ids:
            raise ContractViolation(rule, f"the new sandbox got the id of {self.ids[target_id]!r}: {target_id}")
        handle = SandboxHandle(f"sb{len(self.book.handles) + 1}", target_id, record.id)
        self.ids[target_id] = record.id
        self.book.handles.append(handle)
        self.book.stray.discard(target_id)
        self._policy_accepted(record.id)
        if data.get("status") not in STATUSES:
            raise ContractViolation(rule, f"status {data.get('status')!r} is not a sandbox status")
        if isinstance(data.get("ingress_endpoint"), str):
            self.book.ingress_endpoint = data["ingress_endpoint"]
        if isinstance(data.get("sandbox_url"), str):
            handle.sandbox_url = data["sandbox_url"]
        if data.get("status") == "running" and not data.get("sandbox_url"):
            raise ContractViolation(rule, "a running sandbox without sandbox_url (the SDK cannot route to it)")
        if self.strict:
            actual = {k: v for k, v in data.items() if k not in URL_KEYS}
            actual["sandbox_id"] = self._id_of(target_id)
            found = diff(expected.body, actual)
            if found:
                raise ContractViolation(rule, f"POST /sandboxes: {handle.alias} differs from the model at {found}")
        else:
            if body.get("wait") is False and data.get("status") not in ("pending", "running"):
                raise ContractViolation(rule, f"wait:false answered status {data.get('status')!r}")
            self._settle(handle)
        return handle

    @precondition(_on("create_named_like"))
    @rule(target=sandboxes, sb=sandboxes, body=create_bodies())
    def create_named_like(self, sb: SandboxHandle, body: Json) -> Any:
        """Create a sandbox with the name another one has (409) or had before it was deleted (free again)."""
        record = self.oracle.model.sandboxes.get(sb.model_id) or self.oracle.model.archive.get(sb.model_id)
        if record is None or record.name is None:
            return multiple()
        return self._create("create_named_like", {**body, "name": record.name})

    @precondition(_on("get"))
    @rule(sb=sandboxes)
    def get(self, sb: SandboxHandle) -> None:
        """Read a sandbox by id."""
        expected = self.oracle.get(sb.model_id)
        response = self._send("get", "GET", f"/sandboxes/{sb.target_id}")
        data = self._check("get", response, expected)
        if expected.status == 200:
            self._observe("get", response, data, expected.body)

    @precondition(_on("get_by_name"))
    @rule(name=st.sampled_from(tuple(Name(w) for w in WORDS)))
    def get_by_name(self, name: Name) -> None:
        """Read a sandbox by name (404 for a name no live sandbox holds)."""
        ident = self._name(name)
        expected = self.oracle.get(ident)
        response = self._send("get_by_name", "GET", f"/sandboxes/{ident}")
        data = self._check("get_by_name", response, expected)
        if expected.status == 200:
            self._observe("get_by_name", response, data, expected.body)

    @precondition(_on("list_sandboxes"))
    @rule()
    def list_sandboxes(self) -> None:
        """List the sandboxes and compare membership and items with the model."""
        self._compare_listing("list_sandboxes")

    def _compare_listing(self, rule: str) -> None:
        expected = self.oracle.list()
        response = self._send(rule, "GET", "/sandboxes")
        data = self._check(rule, response, expected)
        items = data.get("sandboxes") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ContractViolation(rule, f"GET /sandboxes has no sandboxes list: {response.text[:300]!r}")
        listed: dict[str, Json] = {}
        for item in items:
            problem = info_shape_problem(item)
            if problem:
                raise ContractViolation(rule, f"GET /sandboxes: unusable item: {problem}")
            view = normalise_info(item, self._id_of)
            if not self.strict and (str(view["id"]).startswith("unmapped:") or view["status"] == "terminated"):
                continue  # the account's other sandboxes, and deleted ones still shown as terminated
            if view["id"] in listed:
                raise ContractViolation(rule, f"GET /sandboxes lists {self._alias(view['id'])} twice")
            self._check_urls(rule, "GET /sandboxes", item)
            self._check_history(rule, "GET /sandboxes", view)
            listed[view["id"]] = view
        want = {str(v["id"]): v for v in expected.body}
        missing = sorted(self._alias(i) for i in set(want) - set(listed))
        extra = sorted(self._alias(i) for i in set(listed) - set(want))
        if missing or extra:
            raise ContractViolation(rule, f"GET /sandboxes: missing {missing}, unexpected {extra} (the model's view)")
        for ident, view in want.items():
            self._compare(rule, "GET /sandboxes", view, listed[ident])

    @precondition(_on("update"))
    @rule(sb=sandboxes, body=patch_bodies())
    def update(self, sb: SandboxHandle, body: Json) -> None:
        """PATCH a sandbox (tri-state ``network``, name, flags, ports); a rejected PATCH changes nothing."""
        self._patch("update", sb, self._wire(body))

    def _patch(self, rule: str, sb: SandboxHandle, wire: Json) -> None:
        expected = self.oracle.patch(sb.model_id, wire)
        before = self._snapshot(rule, sb) if expected.status >= 400 else None
        response = self._send(rule, "PATCH", f"/sandboxes/{sb.target_id}", body=wire)
        data = self._check(rule, response, expected)
        self.book.listing_dirty = True
        if before is not None:
            self._unchanged(rule, sb, before)
            return
        if "network" in wire:
            self._policy_accepted(sb.model_id)
        self._observe(rule, response, data, expected.body)

    def _current(self, rule: str, sb: SandboxHandle) -> Json | None:
        """GET a sandbox like the SDK does before changing its ports; None when the model says 404."""
        expected = self.oracle.get(sb.model_id)
        response = self._send(rule, "GET", f"/sandboxes/{sb.target_id}")
        data = self._check(rule, response, expected)
        if expected.status != 200:
            return None
        self._observe(rule, response, data, expected.body)
        return data if isinstance(data, dict) else None

    @precondition(_on("expose_ports"))
    @rule(
        sb=sandboxes,
        ports=st.lists(st.sampled_from((*PORTS, *BAD_PORTS)), min_size=1, max_size=2),
        public=st.sampled_from((None, True, False)),
    )
    def expose_ports(self, sb: SandboxHandle, ports: list[int], public: bool | None) -> None:
        """Expose ports as ``client.expose_ports`` does: GET, then PATCH the union (server-side port checks)."""
        current = self._current("expose_ports", sb)
        if current is None:
            return
        now = [int(p) for p in current.get("exposed_ports") or []]
        unauth = bool(current.get("allow_unauthenticated_access")) if public is None else public
        self._patch(
            "expose_ports",
            sb,
            {"allow_unauthenticated_access": unauth, "exposed_ports": sorted(set(now) | set(ports))},
        )

    @precondition(_on("unexpose_ports"))
    @rule(sb=sandboxes, ports=st.lists(st.sampled_from(PORTS), min_size=1, max_size=2))
    def unexpose_ports(self, sb: SandboxHandle, ports: list[int]) -> None:
        """Unexpose ports as ``client.unexpose_ports`` does (public access ends with the last port)."""
        current = self._current("unexpose_ports", sb)
        if current is None:
            return
        remaining = [int(p) for p in current.get("exposed_ports") or [] if p not in ports]
        unauth = bool(current.get("allow_unauthenticated_access")) if remaining else False
        self._patch("unexpose_ports", sb, {"allow_unauthenticated_access": unauth, "exposed_ports": remaining})

    def _transition(self, rule: str, sb: SandboxHandle, action: str, wait: bool) -> None:
        expected = self.oracle.suspend(sb.model_id) if action == "suspend" else self.oracle.resume(sb.model_id)
        before = self._snapshot(rule, sb) if expected.status >= 400 else None
        params = {"wait_ms": "3000"} if wait else None
        response = self._send(rule, "POST", f"/sandboxes/{sb.target_id}/{action}", params=params)
        data = self._check(rule, response, expected, loose=(200, 202))
        self.book.listing_dirty = True
        if before is not None:
            self._unchanged(rule, sb, before)
        elif self.strict:
            self._observe(rule, response, data, expected.body)
        else:
            self._settle(sb)

    @precondition(_on("suspend"))
    @rule(sb=sandboxes, wait=st.booleans())
    def suspend(self, sb: SandboxHandle, wait: bool) -> None:
        """Suspend a sandbox (named only: 400 for an ephemeral one; 409 unless running)."""
        self._transition("suspend", sb, "suspend", wait)

    @precondition(_on("resume"))
    @rule(sb=sandboxes, wait=st.booleans())
    def resume(self, sb: SandboxHandle, wait: bool) -> None:
        """Resume a sandbox (a no-op when running; 409 in other states)."""
        self._transition("resume", sb, "resume", wait)

    @precondition(_on("delete"))
    @rule(sb=sandboxes)
    def delete(self, sb: SandboxHandle) -> None:
        """Delete a sandbox; GET answers 404 afterwards (and a second delete too)."""
        expected = self.oracle.delete(sb.model_id)
        response = self._send("delete", "DELETE", f"/sandboxes/{sb.target_id}")
        data = self._check("delete", response, expected, loose=(200, 202, 204))
        self.book.listing_dirty = True
        if expected.status == 200 and self.strict:
            self._observe("delete", response, data, expected.body)
        gone = self.oracle.get(sb.model_id)
        self._check("delete", self._send("delete", "GET", f"/sandboxes/{sb.target_id}"), gone)

    # -- inside the sandbox: management API and egress probes ----------------------------------------------

    def _management(self, sb: SandboxHandle) -> tuple[str, dict[str, str]]:
        """Return the management base URL and routing headers the SDK would use for ``sb``."""
        url = (sb.sandbox_url or str(self.client.base_url)).rstrip("/")
        if (urlsplit(url).hostname or "") in LOOPBACK:
            return url, {"host": f"{sb.target_id}.local"}
        return url, {"x-tensorlake-sandbox-id": sb.target_id}

    def _waking(self, model_id: str) -> bool:
        record = self.oracle.lookup(model_id)
        return record is not None and record.status == "suspended" and record.auto_resume

    def _run(self, rule: str, sb: SandboxHandle, command: str, args: list[str]) -> RunResult | None:
        """Run a command through the proxy; None when the model says the proxy refuses (checked)."""
        waking = self._waking(sb.model_id)
        gate = self.oracle.admit(sb.model_id, MANAGEMENT_PORT, self.key, {}, {})
        base, headers = self._management(sb)
        response = self._send(
            rule,
            "POST",
            base + "/api/v1/processes/run",
            body={"command": command, "args": args, "timeout": 30},
            headers={**headers, "accept": "text/event-stream"},
        )
        if waking and not self.strict:
            self._settle(sb)
            if response.status_code != 200:
                return None
        if gate is not None:
            self._check(rule, response, gate)
            return None
        self._check(rule, response, Expected(200))
        if "text/event-stream" not in response.headers.get("content-type", ""):
            raise ContractViolation(rule, f"{command}: the run stream is {response.headers.get('content-type')!r}")
        result = parse_sse(response.text)
        if result.exit_code is None and result.signal is None:
            raise ContractViolation(rule, f"{command} {' '.join(args)}: the stream has no exit event")
        return result

    def _resolver(self, sb: SandboxHandle) -> str | None:
        """Return the sandbox's resolver from its ``/etc/resolv.conf`` (read once), None if unreachable."""
        known = self.book.resolvers.get(sb.model_id)
        if known is not None:
            return known
        result = self._run("egress_probe", sb, "cat", ["/etc/resolv.conf"])
        if result is None:
            return None
        resolver = DEFAULT_RESOLVER
        for line in result.stdout:
            fields = line.split()
            if len(fields) > 1 and fields[0] == "nameserver":
                resolver = fields[1]
                break
        self.book.resolvers[sb.model_id] = resolver
        return resolver

    @precondition(_on("egress_probe"))
    @rule(sb=sandboxes, source=st.sampled_from(("entry", "entry", "entry", "unrelated")), index=st.integers(0, 7))
    def egress_probe(self, sb: SandboxHandle, source: str, index: int) -> None:
        """Probe one policy entry's neighbourhood (or an unrelated host) from inside the sandbox.

        For an entry: the destination it names, a subdomain, its apex and a name or address just outside it,
        each with ``curl -s`` (the first name with ``getent hosts`` too). The reference policy decides.
        """
        resolver = self._resolver(sb)
        if resolver is None:
            return
        record = self.oracle.lookup(sb.model_id)
        policy = None if record is None else record.network
        hosts = destinations(policy, source, index)
        for position, host in enumerate(hosts):
            tools = ("curl",) if _is_ipv4(host) or position else ("curl", "getent")
            for tool in tools:
                if not self._probe(sb, policy, resolver, tool, host):
                    return

    def _probe(self, sb: SandboxHandle, policy: NetworkConfig | None, resolver: str, tool: str, host: str) -> bool:
        """Run one probe and compare it with the reference; False when the proxy refused (checked)."""
        args = ["hosts", host] if tool == "getent" else ["-s", "-m", "5", f"http://{host}/"]
        result = self._run("egress_probe", sb, tool, args)
        if result is None:
            return False
        want = expect_probe(policy, tool, host, resolver, self.oracle.resolve if self.strict else None)
        text = f"{tool} {' '.join(args)} (policy {None if policy is None else policy.to_json()}, resolver {resolver})"
        if self.strict and want.exit_code is not None and result.exit_code != want.exit_code:
            raise ContractViolation(
                "egress_probe", f"{text} exited {result.exit_code}, the reference says {want.exit_code}"
            )
        if want.blocked and result.exit_code == 0:
            raise ContractViolation("egress_probe", f"{text} got out; the reference policy blocks it")
        if want.blocked and result.stdout:
            raise ContractViolation("egress_probe", f"{text} is blocked but printed {result.stdout!r}")
        if self.strict and tool == "getent" and want.addresses is not None:
            printed = sorted(tuple(line.split()[:2]) for line in result.stdout if line.split())
            expected = sorted((address, host) for address in want.addresses)
            if printed != expected:
                raise ContractViolation("egress_probe", f"{text} printed {result.stdout!r}, expected {expected!r}")
        return True

    # -- ingress ---------------------------------------------------------------------------------------------

    def _session_token(self) -> str:
        """Return a valid session token (minted through the admin API), or a bogus one without it."""
        if self.config.admin is None:
            return "sandproof-bogus-session"
        if self.book.session is None:
            response = self.client.post(
                "/_mock/tensorlake/sessions",
                json={"api_key": self.key, "organization_id": ORGANIZATION, "project_id": PROJECT},
            )
            if response.status_code != 201:
                raise ContractViolation("ingress", f"the admin API did not issue a session: {response.text[:200]!r}")
            token = str(response.json()["token"])
            self.oracle.model.sessions[token] = Session(token, owner_id(self.key), ORGANIZATION, PROJECT)
            self.book.session = token
        return self.book.session

    def _credentials(self, auth: str) -> tuple[str | None, dict[str, str], dict[str, str]]:
        """Return (bearer key, cookies, query) for an ingress auth mode."""
        cookies = {"app": "1"}
        query = {"x": "1"}
        project = {"organizationId": ORGANIZATION, "projectId": PROJECT}
        if auth == "key":
            return self.key, {**cookies, SESSION_COOKIES[0]: "stale"}, query
        if auth == "other-key":
            return OTHER_KEY, cookies, query
        if auth == "session":
            return None, {SESSION_COOKIES[0]: self._session_token(), **cookies}, {**query, **project}
        if auth == "legacy-session":
            return None, {**cookies, SESSION_COOKIES[1]: self._session_token()}, {**query, **project}
        if auth == "session-no-project":
            return None, {**cookies, SESSION_COOKIES[0]: self._session_token()}, query
        return None, cookies, query

    def _ingress_url(self, label: str, port: int, path: str) -> tuple[str, dict[str, str]]:
        endpoint = urlsplit(self.book.ingress_endpoint or "")
        domain = endpoint.hostname or DEFAULT_INGRESS_DOMAIN
        host = label if port == MANAGEMENT_PORT else f"{port}-{label}"
        base = str(self.client.base_url).rstrip("/")
        parts = urlsplit(base)
        if (parts.hostname or "") in LOOPBACK:
            suffix = f":{endpoint.port or parts.port}" if (endpoint.port or parts.port) else ""
            return base + path, {"host": f"{host}.{domain}{suffix}"}
        return f"{endpoint.scheme or parts.scheme}://{host}.{domain}{path}", {}

    @precondition(_on("ingress"))
    @rule(
        sb=sandboxes,
        auths=st.lists(st.sampled_from(AUTH_MODES), min_size=1, max_size=3, unique=True),
        by_name=st.booleans(),
    )
    def ingress(self, sb: SandboxHandle, auths: list[str], by_name: bool) -> None:
        """Request the management port, an exposed and an unexposed user port with the drawn credentials.

        Checks exposure, public access, bearer keys, session cookies with and without the project query,
        the wake of a suspended sandbox, and what reaches the sandbox (path, query, no platform cookie).
        """
        for kind in ("management", "exposed", "unexposed"):
            record = self.oracle.lookup(sb.model_id)
            exposed = tuple(record.exposed_ports) if record is not None else ()
            if kind == "management":
                port = MANAGEMENT_PORT
            elif kind == "exposed":
                if not exposed:
                    continue
                port = exposed[0]
            else:
                port = next(p for p in (22, *PORTS) if p not in exposed)
            for auth in auths[:1] if kind == "unexposed" else auths:
                if not self._ingress_once(sb, port, auth, by_name):
                    return

    def _ingress_once(self, sb: SandboxHandle, port: int, auth: str, by_name: bool) -> bool:
        """Send one proxied request and check it; False when the sandbox is gone or the outcome is unknowable."""
        record = self.oracle.lookup(sb.model_id)
        named = by_name and record is not None and record.name is not None
        label_model = record.name if named and record is not None and record.name else sb.model_id
        label_target = label_model if named else sb.target_id
        key, cookies, query = self._credentials(auth)
        waking = self._waking(sb.model_id)
        expected = self.oracle.admit(label_model, port, key, cookies, query)
        path = "/api/v1/health" if port == MANAGEMENT_PORT else "/sandproof/echo"
        url, headers = self._ingress_url(label_target, port, path)
        headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
        response = self._send("ingress", "GET", url, params=query, headers=headers, anonymous=True)
        if waking and not self.strict:
            self._settle(sb)
            return False
        where = f"{auth} request for port {port} of {sb.alias}{' by name' if named else ''}"
        if expected is not None:
            self._check("ingress", response, expected, loose=(401, 403))
            return record is not None
        if not self.strict:
            if response.status_code in (401, 403, 404):
                raise ContractViolation("ingress", f"{where} was refused ({response.status_code}); it must pass")
            return True
        data = self._check("ingress", response, Expected(200))
        if port == MANAGEMENT_PORT:
            if data != {"healthy": True}:
                raise ContractViolation("ingress", f"{where}: the management API answered {data!r}")
            return True
        self._check_echo(where, sb, port, path, cookies, query, data)
        return True

    def _check_echo(
        self,
        where: str,
        sb: SandboxHandle,
        port: int,
        path: str,
        cookies: Mapping[str, str],
        query: Mapping[str, str],
        data: Any,
    ) -> None:
        """Check what reached the sandbox's echo app: right sandbox and port, path and query kept, no session."""
        if not isinstance(data, dict):
            raise ContractViolation("ingress", f"{where}: the port app answered {data!r}")
        for key, want in (("sandbox_id", sb.target_id), ("port", port), ("path", path)):
            if data.get(key) != want:
                raise ContractViolation("ingress", f"{where}: the sandbox saw {key}={data.get(key)!r}, not {want!r}")
        got_query = {k: v[-1] for k, v in parse_qs(str(data.get("query", ""))).items()}
        if got_query != dict(query):
            raise ContractViolation("ingress", f"{where}: the query reached the sandbox as {got_query!r}")
        kept = {k: v for k, v in cookies.items() if k not in SESSION_COOKIES}
        if data.get("cookies") != kept:
            raise ContractViolation(
                "ingress", f"{where}: the sandbox received cookies {data.get('cookies')!r}; expected {kept!r}"
            )

    # -- admin-only rules -------------------------------------------------------------------------------------

    @precondition(_on("inject_fault"))
    @rule(sb=sandboxes, kind=st.sampled_from(("patch", "delete", "suspend", "resume", "create")), body=patch_bodies())
    def inject_fault(self, sb: SandboxHandle, kind: str, body: Json) -> None:
        """Answer one mutation with an injected 503: the target must change nothing, then serve normally."""
        admin = self.config.admin
        assert admin is not None
        path = "/sandboxes" if kind == "create" else f"/sandboxes/{sb.target_id}"
        method = {"patch": "PATCH", "delete": "DELETE", "create": "POST"}.get(kind, "POST")
        if kind in ("suspend", "resume"):
            path += f"/{kind}"
        payload: Any = {"patch": self._wire(body) or {"network": None}, "create": {}}.get(kind, _ANY)
        admin.add_fault(method=method, path=f"*{path}", status=503, body=FAULT_BODY, times=1)
        before = self._snapshot("inject_fault", sb)
        self.book.fault_armed = True
        try:
            response = self._send("inject_fault", method, path, body=payload)
            self._check("inject_fault", response, Expected(503, FAULT_BODY["code"]))
        finally:
            self.book.fault_armed = False
        left = admin.faults()
        if left:
            raise ContractViolation("inject_fault", f"a times=1 fault is still armed after firing: {left}")
        self._unchanged("inject_fault", sb, before)
        if kind == "create":
            self._compare_listing("inject_fault")

    @precondition(_on("advance_clock"))
    @rule(seconds=st.sampled_from((1, 5, 31, 31, 121)))
    def advance_clock(self, seconds: int) -> None:
        """Advance the target's virtual clock and the model's together (timeouts, transitions)."""
        admin = self.config.admin
        assert admin is not None
        now = admin.advance(float(seconds))
        mine = self.oracle.clock.advance(float(seconds))
        if abs(now - mine) > 1e-6:
            raise ContractViolation("advance_clock", f"the target's clock reads {now}, the model's {mine}")
        self.book.listing_dirty = True

    @precondition(_on("set_timings"))
    @rule(preset=st.sampled_from(TIMING_PRESETS))
    def set_timings(self, preset: tuple[tuple[str, float], ...]) -> None:
        """Set how long startup, suspend and resume take on both clocks (``/_mock/tensorlake/timings``)."""
        values = dict(preset)
        response = self.client.post("/_mock/tensorlake/timings", json=values)
        if response.status_code != 200:
            raise ContractViolation("set_timings", f"the admin API refused timings {values}: {response.text[:200]!r}")
        current = self.oracle.model.timings.to_json()
        self.oracle.model.timings = Timings(**{**current, **values})

    # -- invariants and teardown -----------------------------------------------------------------------------

    @invariant()
    def listing_matches_model(self) -> None:
        """After a change, the listing holds exactly the live sandboxes the model holds."""
        if not self.book.listing_dirty or not self.config.enabled("list_sandboxes"):
            return
        self.book.listing_dirty = False
        self._compare_listing("invariant")

    def teardown(self) -> None:
        """Reset the target and restore its clock mode (admin), else delete what is still alive."""
        admin = self.config.admin
        try:
            if admin is not None:
                admin.reset()
                if self.book.clock_mode:
                    admin.set_clock_mode(self.book.clock_mode)
                return
            alive = [h.target_id for h in self.book.handles if self.oracle.lookup(h.model_id) is not None]
            for target_id in [*alive, *sorted(self.book.stray)]:
                self.client.delete(f"/sandboxes/{target_id}")
        except httpx.HTTPError:
            pass
        finally:
            self.client.close()


def _terminated(response: httpx.Response) -> bool:
    """Tell whether a GET answered a SandboxInfo with status ``terminated``."""
    if response.request.method != "GET":
        return False
    try:
        data = response.json()
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "terminated"


def _bearer(client: httpx.Client) -> str | None:
    scheme, _, key = client.headers.get("authorization", "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


# --- building and running -----------------------------------------------------------------------------------


def http_clients(base_url: str, *, api_key: str | None = None, timeout: float = 30.0) -> HttpFactory:
    """Return a factory of ``httpx.Client`` on ``base_url`` with the bearer key (proxies ignored on loopback)."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    loopback = (urlsplit(base_url).hostname or "") in LOOPBACK
    context = httpx.create_ssl_context()
    return lambda: httpx.Client(
        base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, trust_env=not loopback, verify=context
    )


def make_machine(
    http_factory: HttpFactory,
    *,
    admin: AdminClient | None = None,
    operations: Iterable[str] | None = None,
    api_key: str | None = None,
    resolve: Resolve | None = None,
    name: str | None = None,
) -> type[TensorLakeAPIMachine]:
    """Return a machine class bound to a target: ``http_factory()`` gives a client on its lifecycle base URL.

    ``operations`` picks rule groups of :data:`OPERATIONS` (default: all). ``admin`` enables reset, clock,
    DNS, fault and timing rules and exact comparisons. ``resolve`` is the DNS the target's sandboxes see
    when there is no admin API (default: :func:`default_resolve`).
    """
    chosen = list(operations) if operations is not None else ["state-machine"]
    unknown = [op for op in chosen if op not in OPERATIONS]
    if unknown:
        raise ValueError(f"unknown operations {unknown}; known: {', '.join(OPERATIONS)}")
    rules = frozenset().union(*(OPERATIONS[op] for op in chosen)) | {"create"}
    config = MachineConfig(http_factory=http_factory, admin=admin, rules=rules, api_key=api_key, resolve=resolve)
    label = name or "TensorLakeAPI_" + "_".join(op.replace("-", "_") for op in chosen)
    machine: type[TensorLakeAPIMachine] = type(label, (TensorLakeAPIMachine,), {"config": config})
    return machine


def machine_settings(
    base: settings | None = None,
    *,
    max_examples: int | None = None,
    steps: int | None = None,
    shrink: bool = True,
    database: bool = True,
) -> settings:
    """Return settings for a machine run derived from ``base`` (default: the active profile)."""
    parent = base if base is not None else settings()
    examples = max_examples if max_examples is not None else parent.max_examples
    dropped = (Phase.explain,) if shrink else (Phase.shrink, Phase.explain)
    phases = tuple(p for p in parent.phases if p not in dropped)
    extra: dict[str, Any] = {} if database else {"database": None}
    return settings(
        parent,
        max_examples=examples,
        stateful_step_count=steps if steps is not None else (10 if examples <= 100 else 30),
        deadline=None,
        print_blob=True,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=[*parent.suppress_health_check, HealthCheck.too_slow, HealthCheck.filter_too_much],
        **extra,
    )


def run_machine(
    machine: type[TensorLakeAPIMachine],
    *,
    settings: settings | None = None,
    seed: int | None = None,
    replay: str = "",
) -> None:
    """Run ``machine`` with a known seed; on failure note the seed and the command that replays it.

    The seed is ``seed``, else pytest's ``--hypothesis-seed``, else a fresh random one (unless the settings
    derandomize). ``replay`` is the command line that reruns the test (the seed option is appended).
    """
    from hypothesis import core

    chosen = settings or machine_settings()
    used = seed if seed is not None else core.global_force_seed
    if used is None and not chosen.derandomize:
        used = random.getrandbits(32)
    factory: type[TensorLakeAPIMachine] = hypothesis_seed(used)(machine) if used is not None else machine
    try:
        run_state_machine_as_test(factory, settings=chosen)
    except BaseException as exc:
        if used is not None:
            command = f"{replay} --hypothesis-seed={used}".strip()
            exc.add_note(f"TensorLake contract machine {machine.__name__}: seed {used}; replay with: {command}")
        raise


def check_mock(
    mock: MockCore,
    *,
    operations: Iterable[str] | None = None,
    max_examples: int = 30,
    steps: int = 12,
    seed: int = 0,
    shrink: bool = False,
) -> str | None:
    """Serve ``mock`` on loopback, run the machine against it; return the violation's text, or None if it passed."""
    server = MockServer(mock.app).start()
    admin = AdminClient(server.url)
    try:
        machine = make_machine(http_clients(server.url, api_key=DEFAULT_KEY), admin=admin, operations=operations)
        run_machine(
            machine,
            settings=machine_settings(max_examples=max_examples, steps=steps, shrink=shrink, database=False),
            seed=seed,
        )
    except ContractViolation as exc:
        return "\n".join([str(exc), *getattr(exc, "__notes__", [])])
    finally:
        admin.close()
        server.stop()
    return None


def kill_plan(factory: Callable[[], object]) -> list[tuple[list[str] | None, int]]:
    """Return the (operations, seed) runs that try to kill a mutant: its ``caught_by`` group, then every rule."""
    aimed = getattr(factory, "caught_by", None)
    plan: list[tuple[list[str] | None, int]] = []
    if isinstance(aimed, str) and aimed in OPERATIONS:
        plan += [([aimed], seed) for seed in MUTANT_SEEDS]
    return [*plan, (None, MUTANT_SEEDS[0])]


def kills_mutant(name: str, factory: Callable[[], object]) -> bool:
    """Tell whether the machine fails against a mutant mock (a runner for :func:`harness.mutation.mutation_score`)."""
    for operations, seed in kill_plan(factory):
        mock = factory()
        if not isinstance(mock, MockCore):
            raise TypeError(f"mutant {name} built {type(mock).__name__}, not a mock")
        if check_mock(mock, operations=operations, seed=seed) is not None:
            return True
    return False
