"""The OpenSandbox API contract: a Hypothesis state machine whose oracle is the mock's own HTTP-free model.

``make_machine(client_factory, admin=...)`` returns a :class:`RuleBasedStateMachine` subclass that drives any
OpenSandbox server over HTTP (lifecycle ``/v1``, execd on port 44772, the egress sidecar on port 18080) and
checks **every** answer against :class:`OpenSandboxModel` (``mockserver.opensandbox.model.operations``)
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

Strength. Every check is a tagged contract (:mod:`harness.strength`, suite ``opensandbox-api``; the modules'
``CONTRACTS``): mostly ``observed`` (the real server in the differential run, execd's Go source, the SDK),
``spec`` where the NeMo Gym provider page or the egress document says so, ``choice`` for the admin API and the
emulator's exact probe answers. A check that fails the run raises :class:`ContractViolation` (an
``AssertionError`` naming the rule, with the contract attached); a differing choice is recorded in the test's
ledger. Hypothesis shrinks a failure to a minimal program and prints it, with ``@reproduce_failure``; running
it (:mod:`harness.machines.opensandbox.run`: seeded runs with a ``--hypothesis-seed`` replay line, mock and
mutant runs) imports this module, never the other way round.

Layout: :mod:`harness.machines.opensandbox.oracle` (the oracle), :mod:`harness.machines.opensandbox.requests` (constants,
commands and request strategies), :mod:`harness.machines.opensandbox.compare` (predictions, normalisation, diffs),
:mod:`harness.machines.opensandbox.driver` (rule groups, config, HTTP plumbing),
:mod:`harness.machines.opensandbox.lifecycle_rules` (the lifecycle rules), :mod:`harness.machines.opensandbox.execd_rules`
(endpoints, execd, background logs, PTY, egress probes), :mod:`harness.machines.opensandbox.proxy_rules` (what a
sandbox's app receives through the server proxy); this module adds the sidecar's policy and admin rules,
:func:`make_machine`, and re-exports the names the rules are made of.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from harness.machines.common import add_contract, hold
from harness.machines.opensandbox.compare import ANY as _ANY
from harness.machines.opensandbox.compare import ContractViolation, Expected, RunResult, parse_run
from harness.machines.opensandbox.driver import (
    ADMIN_API,
    ADMIN_OPERATIONS,
    OPERATIONS,
    SUITE,
    ClientFactory,
    MachineConfig,
    SandboxHandle,
)
from harness.machines.opensandbox.driver import when_enabled as _on
from harness.machines.opensandbox.execd_rules import execd_framing_problem
from harness.machines.opensandbox.oracle import OpenSandboxModel, Oracle
from harness.machines.opensandbox.proxy_rules import ProxyRules
from harness.machines.opensandbox.requests import RUN_LABEL, Echo, ExitWith, Json, PrintEnv, Probe
from harness.machines.opensandbox.requests import policy_rules as _rules_st
from harness.machines.opensandbox.requests import policy_targets as _targets
from harness.strength import Contract, observed, spec
from harness.strength.observations import published
from mockserver.admin.client import AdminClient
from mockserver.opensandbox.model.profiles import EGRESS_PORT, EXECD_PORT, RuntimeProfile, make_profile

__all__ = [
    "ADMIN_OPERATIONS",
    "CONTRACTS",
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
    "execd_framing_problem",
    "make_machine",
    "parse_run",
]

CONTRACTS: dict[str, Contract] = {}
_WIRE = "opensandbox-wire.md"
EGRESS_POLICY = add_contract(
    CONTRACTS,
    SUITE,
    "egress_policy",
    spec(
        "os.merge", "os.merge.existing-remain", "os.merge.incoming-priority", "os.merge.first-wins", "os.delete.removes"
    ),
    "The sidecar's policy after a PATCH or DELETE is the model's: incoming rules first, the first of a target wins, "
    "the rest kept; deleted targets gone, unknown ones ignored.",
)
EGRESS_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "egress_answer",
    observed(
        published(
            "opensandbox==1.1.1",
            "opensandbox/api/egress/models/policy_status_response.py",
            "enforcement_mode (str | Unset): Egress sidecar enforcement backend mode.",
        ),
        "GET/PATCH/DELETE /policy answer PolicyStatusResponse {status, mode, enforcementMode, policy}; an empty "
        "list is a text/plain 400",
        note=f"{_WIRE} §5",
    ),
    "The sidecar's status, error answers and status fields (mode, enforcementMode) are the model's.",
)


class OpenSandboxAPIMachine(ProxyRules):
    """Drive an OpenSandbox server and compare every answer with the model (configure via :func:`make_machine`)."""

    sandboxes = ProxyRules.sandboxes

    # -- the egress sidecar -------------------------------------------------------------------------

    def _egress(self, rule: str, sb: SandboxHandle, method: str, body: Any, proxy: bool) -> None:
        found = self._endpoint(rule, sb, EGRESS_PORT, proxy)
        if found is None:
            return
        base, headers = found
        response = self._send(rule, method, base + "/policy", body=body, headers=headers)
        if self._gate(rule, sb, EGRESS_PORT, proxy, response):
            return
        expected = self.oracle.egress(sb.model_id, method, body)
        data = self._check(rule, response, expected, EGRESS_ANSWER)
        if expected.status != 200 or response.status_code != 200:
            return
        self._compare_policy(rule, response, expected.body, data)
        if method != "GET":  # read the policy back, as a client checking its change would
            expected = self.oracle.egress(sb.model_id, "GET", _ANY)
            response = self._send(rule, "GET", base + "/policy", headers=headers)
            self._compare_policy(rule, response, expected.body, self._check(rule, response, expected, EGRESS_ANSWER))

    def _compare_policy(self, rule: str, response: httpx.Response, expected: Any, actual: Any) -> None:
        """Compare a sidecar answer: its policy (the merge semantics), then its other fields."""
        want = expected if isinstance(expected, dict) else {}
        got = actual if isinstance(actual, dict) else {}
        self._compare(rule, response, want.get("policy"), got.get("policy"), EGRESS_POLICY)
        rest = {k: v for k, v in want.items() if k != "policy"}
        self._compare(rule, response, rest, {k: v for k, v in got.items() if k != "policy"}, EGRESS_ANSWER)

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
            self._check("inject_fault", response, fault, ADMIN_API, refusal=ADMIN_API)
        finally:
            self.bookkeeping.fault_armed = False
        if kind == "unavailable":
            kept = response.headers.get("retry-after") == "1"
            hold(ADMIN_API, kept, "inject_fault", f"the 503 lost its Retry-After header: {dict(response.headers)}")
        left = admin.faults()
        if not hold(ADMIN_API, not left, "inject_fault", f"a times=1 fault is still armed after firing: {left}"):
            admin.clear_faults()
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

    # -- invariants ----------------------------------------------------------------------------------

    @invariant()
    def listing_matches_model(self) -> None:
        """After a change, the full listing matches the model: no ghosts, newest first, same items."""
        if not self.bookkeeping.listing_dirty:
            return
        self.bookkeeping.listing_dirty = False
        self._compare_listing("invariant", [("metadata", f"{RUN_LABEL}={self.run_label}"), ("pageSize", "200")])


def make_machine(
    client_factory: ClientFactory,
    *,
    admin: AdminClient | None = None,
    operations: Iterable[str] | None = None,
    profile: RuntimeProfile | str = "docker",
    enforcement: str = "dns",
    time_tolerance: float | None = None,
    egress: bool = True,
    sidecar: bool = True,
    name: str | None = None,
) -> type[OpenSandboxAPIMachine]:
    """Return a machine class bound to a target: ``client_factory()`` gives an ``httpx.Client`` on its base URL.

    ``operations`` picks the rule groups of :data:`OPERATIONS` (default: all). ``admin`` enables the reset,
    clock and fault rules; without it times compare within ``time_tolerance`` (default 5 s, else 1 ms).
    ``egress=False`` is for a server without an egress sidecar image: no ``networkPolicy``, no egress rules.
    ``sidecar=False`` is for a server whose sandboxes have no sidecar answering: creates with a policy still run,
    the rules that talk to the sidecar do not.
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
        sidecar=sidecar,
    )
    label = name or "OpenSandboxAPI_" + "_".join(op.replace("-", "_") for op in chosen)
    machine: type[OpenSandboxAPIMachine] = type(label, (OpenSandboxAPIMachine,), {"config": config})
    return machine
