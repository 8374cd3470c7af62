"""The OpenSandbox API contract: a Hypothesis state machine whose oracle is the mock's own HTTP-free model.

``make_machine(client_factory, admin=...)`` returns a :class:`RuleBasedStateMachine` subclass that drives any
OpenSandbox server over HTTP (lifecycle ``/v1``, execd on port 44772, the egress sidecar on port 18080) and
checks **every** answer against :class:`OpenSandboxModel` (``mockserver.opensandbox.model.state.OpenSandboxState``)
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

Layout: :mod:`harness.machines.opensandbox.oracle` (the oracle), :mod:`harness.machines.opensandbox.requests` (constants,
commands and request strategies), :mod:`harness.machines.opensandbox.compare` (predictions, normalisation, diffs),
:mod:`harness.machines.opensandbox.driver` (rule groups, config, HTTP plumbing, :func:`run_machine`),
:mod:`harness.machines.opensandbox.lifecycle_rules` (the lifecycle rules); this module adds the endpoint, execd, egress and
admin rules, :func:`make_machine` and the mock runners, and re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from harness.machines.opensandbox.compare import ANY as _ANY
from harness.machines.opensandbox.compare import ContractViolation, Expected, RunResult, parse_run
from harness.machines.opensandbox.driver import (
    ADMIN_OPERATIONS,
    OPERATIONS,
    ClientFactory,
    MachineConfig,
    SandboxHandle,
)
from harness.machines.opensandbox.driver import when_enabled as _on
from harness.machines.opensandbox.lifecycle_rules import LifecycleRules
from harness.machines.opensandbox.oracle import OpenSandboxModel, Oracle
from harness.machines.opensandbox.requests import RUN_LABEL, Command, Echo, ExitWith, Json, PrintEnv, Probe
from harness.machines.opensandbox.requests import commands as _commands
from harness.machines.opensandbox.requests import policy_rules as _rules_st
from harness.machines.opensandbox.requests import policy_targets as _targets
from harness.machines.opensandbox.requests import probes as _probes
from harness.machines.opensandbox.run import http_clients, machine_settings, run_machine
from mockserver.admin.client import AdminClient
from mockserver.opensandbox.model.profiles import EGRESS_PORT, EXECD_PORT, RuntimeProfile, make_profile

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
    "run_machine",
]


class OpenSandboxAPIMachine(LifecycleRules):
    """Drive an OpenSandbox server and compare every answer with the model (configure via :func:`make_machine`)."""

    sandboxes = LifecycleRules.sandboxes

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
