"""The TensorLake API contract: a Hypothesis state machine whose oracle is the mock's own HTTP-free model.

``make_machine(http_factory, admin=...)`` returns a :class:`RuleBasedStateMachine` subclass that drives any
TensorLake server over HTTP (the flat lifecycle paths ``/sandboxes...``, the sandbox proxy and the in-sandbox
management API on port 9501) and checks every answer against :class:`Oracle`: a fresh
:class:`~mockserver.tensorlake.model.TensorLakeModel` on its own manual virtual clock, resolving names from
the same DNS table as the target. Each prediction carries the status, the error ``code``, and the normalised
SandboxInfo (ids mapped through the ``sandboxes`` bundle: each handle holds the target's id and the model's).

Rules: create (ephemeral or named, with valid and invalid ``network`` policies), get by id and by name, list,
update (``network`` absent / ``null`` / object, ``name``, ``auto_resume``, ``exposed_ports`` including 9501,
0 and 65536, ``allow_unauthenticated_access``), expose and unexpose ports the way the SDK does (GET, then
PATCH), suspend and resume, delete, lifecycle calls without a key (list, GET, PATCH, DELETE and create:
refused as the model's key check refuses them, and nothing changes), egress probes run inside a sandbox
through ``/api/v1/processes/run`` (``getent hosts NAME`` and ``curl -s URL`` to the policy's own entries, their subdomains and apexes, and
unrelated hosts; :mod:`contracts.tensorlake` decides the outcome), ingress requests to the management port and
to exposed and unexposed user ports with and without credentials (HTTP and, with the admin API, WebSocket), a
PATCH while a WebSocket into the sandbox is open, and, only with the ``/_mock`` admin API, injected 503s on
mutations, clock advances (timeouts) and transition timings.

Modes. With the admin API (``strict``) every example starts from a reset target whose clock is manual and
mirrored by the oracle's, with a known DNS table: whole bodies, error codes and probe exit codes are compared
too (as choices, see below).
Without it (a real deployment, ``tensorlake-cloud``) the machine prefixes names with a per-example label,
waits for transitions to settle, compares the core fields (status, name, policy, ports, flags), checks only
what the policy decides for certain (a denied probe must fail) and deletes what it created.

Invariants: every SandboxInfo shows a complete policy that decides like one an accepted create or PATCH set for
that sandbox; a rejected request changes nothing (GET before and after); GET answers 404 after a delete; the
listing matches the model.

Strength. Every check is a tagged contract (:mod:`harness.strength`, suite ``tensorlake-api``; the modules'
``CONTRACTS``): behaviour (accepted or refused, status, the policy by what it decides, ports, flags, what the
proxy forwards) is ``spec`` or ``observed``; representation (the exact status among equivalent ones, error
codes, the stored policy form, the rest of the body) is ``choice``. A check that fails the run raises
:class:`ContractViolation` naming the rule, with the contract attached; a differing choice is recorded in the
test's ledger and the machine goes on. Hypothesis shrinks a failure to a minimal program
and prints it (the costly ``explain`` phase is skipped). Running it (seeded runs with a replay line, runs
against an in-process mock, the judge of wrong mocks) is :mod:`harness.machines.tensorlake.run`, which imports
this module and never the other way round.

Layout: :mod:`harness.machines.tensorlake.compare` (predictions, normalisation, diffs),
:mod:`harness.machines.tensorlake.requests` (request strategies), :mod:`harness.machines.tensorlake.probes` (probe
destinations and predictions, SSE, resolvers), :mod:`harness.machines.tensorlake.oracle` (the oracle),
:mod:`harness.machines.tensorlake.driver` (rule groups, config, HTTP plumbing), :mod:`harness.machines.tensorlake.answers`
(the answer checks), :mod:`harness.machines.tensorlake.ingress` and :mod:`harness.machines.tensorlake.steps` (the steps
rules share) and :mod:`harness.machines.tensorlake.run` (clients, settings, seeded runs, mock and mutant
runs); this module holds the rules and :func:`make_machine`, and re-exports the names the rules are made of.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import httpx
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, precondition, rule

from harness.machines.common import add_contract, hold
from harness.machines.tensorlake.answers import NOT_FOUND, Answers
from harness.machines.tensorlake.compare import ANY as _ANY
from harness.machines.tensorlake.compare import ContractViolation, Expected, Json, normalise_info
from harness.machines.tensorlake.driver import (
    ADMIN_API,
    ADMIN_OPERATIONS,
    DEFAULT_KEY,
    OPERATIONS,
    SUITE,
    HttpFactory,
    MachineConfig,
    SandboxHandle,
    Session,
)
from harness.machines.tensorlake.driver import when_enabled as _on
from harness.machines.tensorlake.ingress import Ingress
from harness.machines.tensorlake.oracle import Oracle
from harness.machines.tensorlake.probes import (
    DNS_ENTRIES,
    ProbeExpectation,
    Resolve,
    RunResult,
    default_resolve,
    destinations,
    expect_probe,
    parse_sse,
    system_resolve,
)
from harness.machines.tensorlake.probes import is_ipv4 as _is_ipv4
from harness.machines.tensorlake.requests import (
    AUTH_MODES,
    BAD_PORTS,
    PORTS,
    TIMING_PRESETS,
    WORDS,
    Name,
    create_bodies,
    patch_bodies,
    seed_bodies,
)
from harness.machines.tensorlake.steps import ANONYMOUS_CALLS, Steps
from harness.strength import Contract, observed
from harness.strength.observations import capture
from mockserver.admin.client import AdminClient
from mockserver.tensorlake.model import MANAGEMENT_PORT

__all__ = [
    "ADMIN_OPERATIONS",
    "CONTRACTS",
    "DEFAULT_KEY",
    "DNS_ENTRIES",
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
    "default_resolve",
    "destinations",
    "expect_probe",
    "make_machine",
    "normalise_info",
    "parse_sse",
    "system_resolve",
]

FAULT_BODY = {"code": "unavailable", "message": "injected fault"}

CONTRACTS: dict[str, Contract] = {}
DELETE_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "delete_answer",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.terminate()"),
        "DELETE /sandboxes/{id} answers any 2xx (200 empty, 202, 204); the body is ignored",
        note="tensorlake-wire.md §3",
    ),
    "A delete of a live sandbox is accepted, and afterwards the sandbox is gone (404, or shown terminated).",
)


class TensorLakeAPIMachine(RuleBasedStateMachine):
    """Drive a TensorLake server and compare every answer with the model (configure via :func:`make_machine`).

    Each example gets a :class:`Session` and the parts made on it: :class:`Answers`, :class:`Ingress` (``proxy``)
    and :class:`Steps`; the rules below call them.
    """

    config: ClassVar[MachineConfig]
    sandboxes = Bundle("sandboxes")

    def __init__(self) -> None:
        super().__init__()
        self.session = Session(self.config)
        self.answers = Answers(self.session)
        self.proxy = Ingress(self.session, self.answers)  # `ingress` is a rule's name
        self.steps = Steps(self.session, self.answers, self.proxy)

    # -- lifecycle rules -----------------------------------------------------------------------------------

    @initialize(target=sandboxes, body=seed_bodies(named=True))
    def seed_named(self, body: Json) -> Any:
        """Start with a named sandbox that has a policy."""
        return self.steps.create("seed_named", body)

    @initialize(target=sandboxes, body=seed_bodies(named=False))
    def seed_ephemeral(self, body: Json) -> Any:
        """Start with an ephemeral sandbox that has a policy."""
        return self.steps.create("seed_ephemeral", body)

    @precondition(_on("create"))
    @rule(target=sandboxes, body=create_bodies())
    def create(self, body: Json) -> Any:
        """Create a sandbox (valid or invalid body) and compare the answer with the model."""
        return self.steps.create("create", body)

    @precondition(_on("create_named_like"))
    @rule(target=sandboxes, sb=sandboxes, body=create_bodies())
    def create_named_like(self, sb: SandboxHandle, body: Json) -> Any:
        """Create a sandbox with the name another one has (409) or had before it was deleted (free again)."""
        record = self.session.oracle.model.sandboxes.get(sb.model_id) or self.session.oracle.model.archive.get(
            sb.model_id
        )
        if record is None or record.name is None:
            return multiple()
        return self.steps.create("create_named_like", {**body, "name": record.name})

    @precondition(_on("get"))
    @rule(sb=sandboxes)
    def get(self, sb: SandboxHandle) -> None:
        """Read a sandbox by id."""
        expected = self.session.oracle.get(sb.model_id)
        response = self.session.send("get", "GET", f"/sandboxes/{sb.target_id}")
        data = self.answers.check("get", response, expected, NOT_FOUND)
        if expected.status == 200:
            self.answers.observe("get", response, data, expected.body)

    @precondition(_on("get_by_name"))
    @rule(name=st.sampled_from(tuple(Name(w) for w in WORDS)))
    def get_by_name(self, name: Name) -> None:
        """Read a sandbox by name (404 for a name no live sandbox holds)."""
        ident = self.session.name(name)
        expected = self.session.oracle.get(ident)
        response = self.session.send("get_by_name", "GET", f"/sandboxes/{ident}")
        data = self.answers.check("get_by_name", response, expected, NOT_FOUND)
        if expected.status == 200:
            self.answers.observe("get_by_name", response, data, expected.body)

    @precondition(_on("list_sandboxes"))
    @rule()
    def list_sandboxes(self) -> None:
        """List the sandboxes and compare membership and items with the model."""
        self.steps.compare_listing("list_sandboxes")

    @precondition(_on("anonymous_call"))
    @rule(sb=sandboxes, calls=st.lists(st.sampled_from(ANONYMOUS_CALLS), min_size=1, max_size=3, unique=True))
    def anonymous_call(self, sb: SandboxHandle, calls: list[str]) -> None:
        """List, read, PATCH, delete or create without a key: refused (401 or 403), and nothing changes."""
        self.steps.anonymous("anonymous_call", sb, calls)

    @precondition(_on("update"))
    @rule(sb=sandboxes, body=patch_bodies())
    def update(self, sb: SandboxHandle, body: Json) -> None:
        """PATCH a sandbox (tri-state ``network``, name, flags, ports); a rejected PATCH changes nothing."""
        self.steps.patch("update", sb, self.session.wire(body))

    @precondition(_on("expose_ports"))
    @rule(
        sb=sandboxes,
        ports=st.lists(st.sampled_from((*PORTS, *BAD_PORTS)), min_size=1, max_size=2),
        public=st.sampled_from((None, True, False)),
    )
    def expose_ports(self, sb: SandboxHandle, ports: list[int], public: bool | None) -> None:
        """Expose ports as ``client.expose_ports`` does: GET, then PATCH the union (server-side port checks)."""
        current = self.steps.current("expose_ports", sb)
        if current is None:
            return
        now = [int(p) for p in current.get("exposed_ports") or []]
        unauth = bool(current.get("allow_unauthenticated_access")) if public is None else public
        self.steps.patch(
            "expose_ports",
            sb,
            {"allow_unauthenticated_access": unauth, "exposed_ports": sorted(set(now) | set(ports))},
        )

    @precondition(_on("unexpose_ports"))
    @rule(sb=sandboxes, ports=st.lists(st.sampled_from(PORTS), min_size=1, max_size=2))
    def unexpose_ports(self, sb: SandboxHandle, ports: list[int]) -> None:
        """Unexpose ports as ``client.unexpose_ports`` does (public access ends with the last port)."""
        current = self.steps.current("unexpose_ports", sb)
        if current is None:
            return
        remaining = [int(p) for p in current.get("exposed_ports") or [] if p not in ports]
        unauth = bool(current.get("allow_unauthenticated_access")) if remaining else False
        self.steps.patch("unexpose_ports", sb, {"allow_unauthenticated_access": unauth, "exposed_ports": remaining})

    @precondition(_on("suspend"))
    @rule(sb=sandboxes, wait=st.booleans())
    def suspend(self, sb: SandboxHandle, wait: bool) -> None:
        """Suspend a sandbox (named only: 400 for an ephemeral one; 409 unless running)."""
        self.steps.transition("suspend", sb, "suspend", wait)

    @precondition(_on("resume"))
    @rule(sb=sandboxes, wait=st.booleans())
    def resume(self, sb: SandboxHandle, wait: bool) -> None:
        """Resume a sandbox (a no-op when running; 409 in other states)."""
        self.steps.transition("resume", sb, "resume", wait)

    @precondition(_on("delete"))
    @rule(sb=sandboxes)
    def delete(self, sb: SandboxHandle) -> None:
        """Delete a sandbox; GET answers 404 afterwards (and a second delete too)."""
        expected = self.session.oracle.delete(sb.model_id)
        response = self.session.send("delete", "DELETE", f"/sandboxes/{sb.target_id}")
        data = self.answers.check("delete", response, expected, DELETE_ANSWER, loose=(200, 202, 204))
        self.session.book.listing_dirty = True
        if expected.status == 200 and self.session.strict and response.status_code == 200:
            self.answers.observe("delete", response, data, expected.body)
        gone = self.session.oracle.get(sb.model_id)
        self.answers.check(
            "delete", self.session.send("delete", "GET", f"/sandboxes/{sb.target_id}"), gone, DELETE_ANSWER
        )

    @precondition(_on("update_keeps_connection"))
    @rule(sb=sandboxes, body=patch_bodies())
    def update_keeps_connection(self, sb: SandboxHandle, body: Json) -> None:
        """PATCH a sandbox while a WebSocket to one of its exposed ports is open: the connection stays up."""
        self.steps.connection_across_update("update_keeps_connection", sb, self.session.wire(body))

    # -- inside the sandbox: egress probes -----------------------------------------------------------------

    @precondition(_on("egress_probe"))
    @rule(sb=sandboxes, source=st.sampled_from(("entry", "entry", "entry", "unrelated")), index=st.integers(0, 7))
    def egress_probe(self, sb: SandboxHandle, source: str, index: int) -> None:
        """Probe one policy entry's neighbourhood (or an unrelated host) from inside the sandbox.

        For an entry: the destination it names, a subdomain, its apex and a name or address just outside it,
        each with ``curl -s`` (the first name with ``getent hosts`` too). The reference policy decides.
        """
        resolver = self.steps.resolver(sb)
        if resolver is None:
            return
        record = self.session.oracle.lookup(sb.model_id)
        policy = None if record is None else record.network
        hosts = destinations(policy, source, index)
        for position, host in enumerate(hosts):
            tools = ("curl",) if _is_ipv4(host) or position else ("curl", "getent")
            for tool in tools:
                if not self.steps.probe(sb, policy, resolver, tool, host):
                    return

    # -- ingress -------------------------------------------------------------------------------------------

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
            record = self.session.oracle.lookup(sb.model_id)
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
                if not self.proxy.ingress_once(sb, port, auth, by_name):
                    return

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
        payload: Any = {"patch": self.session.wire(body) or {"network": None}, "create": {}}.get(kind, _ANY)
        admin.add_fault(method=method, path=f"*{path}", status=503, body=FAULT_BODY, times=1)
        before = self.answers.snapshot("inject_fault", sb)
        self.session.book.fault_armed = True
        try:
            response = self.session.send("inject_fault", method, path, body=payload)
            self.answers.check(
                "inject_fault", response, Expected(503, FAULT_BODY["code"]), ADMIN_API, refusal=ADMIN_API
            )
        finally:
            self.session.book.fault_armed = False
        left = admin.faults()
        if not hold(ADMIN_API, not left, "inject_fault", f"a times=1 fault is still armed after firing: {left}"):
            admin.clear_faults()
        if self.session.book.diverged:
            self.session.retire(sb)  # the fault did not answer: the request reached the sandbox
            return
        self.answers.unchanged("inject_fault", sb, before, ADMIN_API)
        if kind == "create":
            self.steps.compare_listing("inject_fault")

    @precondition(_on("advance_clock"))
    @rule(seconds=st.sampled_from((1, 5, 31, 31, 121)))
    def advance_clock(self, seconds: int) -> None:
        """Advance the target's virtual clock and the model's together (timeouts, transitions)."""
        admin = self.config.admin
        assert admin is not None
        now = admin.advance(float(seconds))
        mine = self.session.oracle.clock.advance(float(seconds))
        hold(ADMIN_API, abs(now - mine) <= 1e-6, "advance_clock", f"the target's clock reads {now}, the model's {mine}")
        self.session.book.listing_dirty = True

    @precondition(_on("set_timings"))
    @rule(preset=st.sampled_from(TIMING_PRESETS))
    def set_timings(self, preset: tuple[tuple[str, float], ...]) -> None:
        """Set how long startup, suspend and resume take on both clocks (``/_mock/tensorlake/timings``)."""
        values = dict(preset)
        response = self.session.client.post("/_mock/tensorlake/timings", json=values)
        refused = f"the admin API refused timings {values}: {response.text[:200]!r}"
        if hold(ADMIN_API, response.status_code == 200, "set_timings", refused):
            self.session.oracle.set_timings(values)

    # -- invariants and teardown -----------------------------------------------------------------------------

    @invariant()
    def listing_matches_model(self) -> None:
        """After a change, the listing holds exactly the live sandboxes the model holds."""
        if not self.session.book.listing_dirty or not self.config.enabled("list_sandboxes"):
            return
        self.session.book.listing_dirty = False
        self.steps.compare_listing("invariant")

    def teardown(self) -> None:
        """Reset the target and restore its clock mode (admin), else delete what is still alive."""
        admin = self.config.admin
        try:
            if admin is not None:
                admin.reset()
                if self.session.book.clock_mode:
                    admin.set_clock_mode(self.session.book.clock_mode)
                return
            alive = [
                h.target_id for h in self.session.book.handles if self.session.oracle.lookup(h.model_id) is not None
            ]
            for target_id in [*alive, *sorted(self.session.book.stray)]:
                self.session.client.delete(f"/sandboxes/{target_id}")
        except httpx.HTTPError:
            pass
        finally:
            self.session.client.close()


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
