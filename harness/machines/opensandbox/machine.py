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

import json
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpx
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from harness.machines.common import add_contract, hold, json_body
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
from harness.machines.opensandbox.lifecycle_rules import LifecycleRules
from harness.machines.opensandbox.oracle import OpenSandboxModel, Oracle
from harness.machines.opensandbox.requests import RUN_LABEL, WORDS, Command, Echo, ExitWith, Json, PrintEnv, Probe
from harness.machines.opensandbox.requests import commands as _commands
from harness.machines.opensandbox.requests import policy_rules as _rules_st
from harness.machines.opensandbox.requests import policy_targets as _targets
from harness.machines.opensandbox.requests import probes as _probes
from harness.machines.opensandbox.run import http_clients, machine_settings, run_machine
from harness.strength import Contract, choice, observed, spec
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
    "http_clients",
    "machine_settings",
    "make_machine",
    "parse_run",
    "run_machine",
]

#: How often, and how many seconds apart, a background command's status is polled before its logs are read.
LOG_POLLS = 50
LOG_POLL_SECONDS = 0.05

CONTRACTS: dict[str, Contract] = {}
_WIRE = "opensandbox-wire.md"

ENDPOINT_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "endpoint_answer",
    observed(
        f"{_WIRE} §3 (row 8), §3.1 and the differential run",
        "GET /endpoints/{port} answers a scheme-less host[:port][/path] (the server proxy route with "
        "use_server_proxy) and an optional headers object; bad ports and proxy+expires answer 400",
    ),
    "Endpoints resolve as on the real server: status, code, a scheme-less endpoint, the proxy route, headers.",
)
BACKEND_GATE = add_contract(
    CONTRACTS,
    SUITE,
    "backend_gate",
    observed(
        f"{_WIRE} §3 (row 16), §8", "a port whose backend cannot answer is refused (502 BACKEND_CONNECTION_FAILED)"
    ),
    "A request to execd or the sidecar reaches it exactly when the model's port gate lets it through.",
)
PAUSED_NO_EXECD = add_contract(
    CONTRACTS,
    SUITE,
    "paused_no_execd",
    spec("ng-os.paused-no-execd"),
    "A paused sandbox's execd and sidecar do not answer; after a resume they do.",
)
BACKEND_REFUSAL = add_contract(
    CONTRACTS,
    SUITE,
    "backend_refusal",
    choice("a direct request to a sandbox that is not running answers 502 Bad Gateway by sandproof's choice"),
    "A refused port request carries the model's status and code.",
)
COMMAND_STREAM = add_contract(
    CONTRACTS,
    SUITE,
    "command_stream",
    observed(
        f"{_WIRE} §2.1, §4.1", "POST /command answers text/event-stream (the SDK refuses anything else), init first"
    ),
    "A command answers 200 with text/event-stream and an init event carrying the command id.",
)
EXECD_SSE_FRAMING = add_contract(
    CONTRACTS,
    SUITE,
    "execd_sse_framing",
    observed(
        f"{_WIRE} §4.1 and captures/opensandbox-sdk-direct-mode.txt (run_foreground)",
        "execd writes each event as one bare JSON object followed by a blank line, with no `data:` prefix",
    ),
    "On the wire, execd's stream is bare JSON objects each ended by a blank line, as raw clients read it (the "
    "SDK-level parser, like the SDK, also takes `data:` frames).",
)
COMMAND_RESULT = add_contract(
    CONTRACTS,
    SUITE,
    "command_result",
    observed(f"{_WIRE} §4.1", "the exit code is int(error.evalue), 0 after execution_complete; stdout events in order"),
    "A command's exit code and stdout, as the SDK reads them from the stream, are the model's.",
)
COMMAND_STATUS = add_contract(
    CONTRACTS,
    SUITE,
    "command_status",
    observed(f"{_WIRE} §4.2", "GET /command/status/{id} shows running false and the exit code once it ended"),
    "A finished command's status record says it is not running and gives its exit code.",
)
BACKGROUND_LOGS = add_contract(
    CONTRACTS,
    SUITE,
    "background_logs",
    spec("ng-os.logs-combined"),
    "A background command's logs are one stream holding its stdout and stderr lines in the order written.",
)
PTY_MISSING = add_contract(
    CONTRACTS,
    SUITE,
    "pty_missing",
    spec("ng-os.pty-missing"),
    "Looking up a PTY session that does not exist answers 404.",
)
PTY_MISSING_CODE = add_contract(
    CONTRACTS,
    SUITE,
    "pty_missing_code",
    observed(
        "nemo-gym.md (PTY, F13) and the real execd's answer in issue 12",
        'execd answers a missing PTY session 404 {"code": "CONTEXT_NOT_FOUND"}, which NeMo Gym keys on',
    ),
    "When execd itself answers a missing PTY session (a JSON code, not a bare proxy 404), the code is "
    "CONTEXT_NOT_FOUND.",
)
EGRESS_DECISION = add_contract(
    CONTRACTS,
    SUITE,
    "egress_decision",
    spec(
        "os.policy.default-action",
        "os.policy.default-deny",
        "os.policy.in-order",
        "os.rule.action",
        "os.rule.target",
        "os.lifecycle.empty-allows",
    ),
    "A probe from inside the sandbox gets out exactly when the sandbox's policy allows the host (with the admin "
    "API; without it, a blocked probe must fail).",
)
PROBE_OUTPUT = add_contract(
    CONTRACTS,
    SUITE,
    "probe_output",
    choice("how a blocked probe fails (getent 2, curl 6 printing 000) and what getent prints are the emulator's"),
    "A probe's exact exit code and output are the emulator's.",
)
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
        f"{_WIRE} §5",
        "GET/PATCH/DELETE /policy answer PolicyStatusResponse {status, mode, enforcementMode, policy}; an empty "
        "list is a text/plain 400",
    ),
    "The sidecar's status, error answers and status fields (mode, enforcementMode) are the model's.",
)


def execd_framing_problem(text: str) -> str | None:
    """Return how a command stream's body differs from execd's framing (bare JSON objects, blank line), or None."""
    if not text.endswith("\n\n"):
        return f"the stream does not end with a blank line: {text[-80:]!r}"
    for frame in text[:-2].split("\n\n"):
        if frame.startswith("data:"):
            return f"the frame {frame[:120]!r} has an SSE `data:` prefix; execd sends bare JSON"
        if "\n" in frame:
            return f"the frame {frame[:120]!r} spans several lines; execd sends one JSON object per frame"
        try:
            event = json.loads(frame)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            return f"the frame {frame[:120]!r} is not a JSON object"
    return None


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
        data = self._check(rule, response, expected, ENDPOINT_ANSWER)
        if expected.status != 200 or response.status_code != 200:
            return None
        endpoint = data.get("endpoint") if isinstance(data, dict) else None
        shaped = isinstance(endpoint, str) and bool(endpoint) and "://" not in endpoint
        why = f"endpoint must be a scheme-less host[:port][/path]: {response.text[:200]!r}"
        if not hold(ENDPOINT_ANSWER, shaped, rule, why):
            return None
        assert isinstance(endpoint, str)
        routed = not proxy or endpoint.endswith(f"/sandboxes/{sb.target_id}/proxy/{port}")
        hold(ENDPOINT_ANSWER, routed, rule, f"use_server_proxy endpoint {endpoint!r} is not the server proxy route")
        headers = data.get("headers") or {}
        if not hold(
            ENDPOINT_ANSWER,
            isinstance(headers, dict),
            rule,
            f"endpoint headers must be an object: {response.text[:200]!r}",
        ):
            headers = {}
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

    def _gate(self, rule: str, sb: SandboxHandle, port: int, proxy: bool, response: httpx.Response) -> bool:
        """Check a port request the model refuses before it reaches execd or the sidecar; False when it gets through."""
        gate = self.oracle.backend(sb.model_id, port, proxy)
        if gate is None:
            return False
        record = self.oracle.lookup(sb.model_id)
        paused = record is not None and record.state == "Paused"
        self._check(rule, response, gate, PAUSED_NO_EXECD if paused else BACKEND_GATE, exact=BACKEND_REFUSAL)
        return True

    def _stream(self, rule: str, command: str, response: httpx.Response) -> RunResult | None:
        """Check a command's SSE answer (status, content type, execd's framing); return what the SDK reads from it."""
        self._check(rule, response, Expected(200), COMMAND_STREAM)
        if response.status_code != 200:
            return None
        kind = response.headers.get("content-type", "")
        if not hold(COMMAND_STREAM, "text/event-stream" in kind, rule, f"command stream has content type {kind!r}"):
            return None
        problem = execd_framing_problem(response.text)
        hold(EXECD_SSE_FRAMING, problem is None, rule, f"{command!r}: {problem}", response.text[:500])
        result = parse_run(response.text)
        hold(
            COMMAND_STREAM,
            result.command_id is not None,
            rule,
            f"{command!r}: the stream has no init event with the command id",
            response.text[:500],
        )
        return result

    def _exec(self, rule: str, sb: SandboxHandle, command: Command, proxy: bool) -> None:
        found = self._endpoint(rule, sb, EXECD_PORT, proxy)
        if found is None:
            return
        base, headers = found
        response = self._send(
            rule,
            "POST",
            base + "/command",
            body={"command": command.text},
            headers={**headers, "Accept": "text/event-stream"},
        )
        if self._gate(rule, sb, EXECD_PORT, proxy, response):
            return
        result = self._stream(rule, command.text, response)
        if result is None:
            return
        want_code, want_stdout = self.oracle.run(sb.model_id, command)
        strict = self.config.admin is not None
        if isinstance(command, Probe):
            self._judge_probe(rule, command, result, want_code, want_stdout, strict)
        else:
            hold(
                COMMAND_RESULT,
                result.exit_code == want_code,
                rule,
                f"{command.text!r} exited {result.exit_code}, the model says {want_code} (stderr {result.stderr!r})",
            )
            hold(
                COMMAND_RESULT,
                result.stdout == want_stdout,
                rule,
                f"{command.text!r} printed {result.stdout!r}, the model says {want_stdout!r}",
            )
        if result.command_id is None or (want_stdout is None and not strict):
            return
        status = self._send(rule, "GET", f"{base}/command/status/{result.command_id}", headers=headers)
        data = self._check(rule, status, Expected(200), COMMAND_STATUS)
        record = data if isinstance(data, dict) else {}
        finished = record.get("running") is False and record.get("exit_code") == result.exit_code
        hold(
            COMMAND_STATUS,
            finished,
            rule,
            f"status of {command.text!r} is {record!r}; the stream said finished with exit code {result.exit_code}",
        )

    def _judge_probe(
        self, rule: str, probe: Probe, result: RunResult, want_code: int | None, want_stdout: str | None, strict: bool
    ) -> None:
        """Judge a probe: getting out or not is the policy's decision; how it fails is the emulator's."""
        text = probe.text
        blocked = want_code != 0
        hold(EGRESS_DECISION, not (blocked and result.exit_code == 0), rule, f"{text!r} got out; the policy blocks it")
        if blocked:
            hold(
                PROBE_OUTPUT,
                result.exit_code == want_code,
                rule,
                f"{text!r} exited {result.exit_code}, the model says {want_code}",
            )
            hold(
                PROBE_OUTPUT,
                result.stdout == want_stdout,
                rule,
                f"{text!r} printed {result.stdout!r}, the model says {want_stdout!r}",
            )
            return
        if not strict:
            return  # an allowed probe's outcome depends on the real network
        hold(
            EGRESS_DECISION, result.exit_code == 0, rule, f"{text!r} exited {result.exit_code}; the policy lets it out"
        )
        if probe.tool == "getent" and result.exit_code == 0:
            hold(
                PROBE_OUTPUT, probe.host in result.stdout, rule, f"{text!r} printed no address line: {result.stdout!r}"
            )

    @precondition(_on("run_command"))
    @rule(sb=sandboxes, command=_commands, proxy=st.booleans())
    def run_command(self, sb: SandboxHandle, command: Command, proxy: bool) -> None:
        """Run a command through execd and compare output, exit code and status record with the model."""
        self._exec("run_command", sb, command, proxy)

    @precondition(_on("background_logs"))
    @rule(sb=sandboxes, word=st.sampled_from(WORDS), proxy=st.booleans())
    def background_logs(self, sb: SandboxHandle, word: str, proxy: bool) -> None:
        """Run a background command writing to both streams; its logs are one stream holding both, in order."""
        rule_name = "background_logs"
        found = self._endpoint(rule_name, sb, EXECD_PORT, proxy)
        if found is None:
            return
        base, headers = found
        text = f"echo {word}; echo {word}-err >&2"
        body = {"command": text, "background": True}
        response = self._send(
            rule_name, "POST", base + "/command", body=body, headers={**headers, "Accept": "text/event-stream"}
        )
        if self._gate(rule_name, sb, EXECD_PORT, proxy, response):
            return
        result = self._stream(rule_name, text, response)
        if result is None or result.command_id is None:
            return
        record: dict[str, Any] = {}
        for _ in range(LOG_POLLS):
            status = self._send(rule_name, "GET", f"{base}/command/status/{result.command_id}", headers=headers)
            data = self._check(rule_name, status, Expected(200), COMMAND_STATUS)
            record = data if isinstance(data, dict) else {}
            if record.get("running") is False:
                break
            time.sleep(LOG_POLL_SECONDS)
        done = record.get("running") is False and record.get("exit_code") == 0
        if not hold(COMMAND_STATUS, done, rule_name, f"{text!r} in the background did not finish with 0: {record!r}"):
            return
        logs = self._send(
            rule_name, "GET", f"{base}/command/{result.command_id}/logs", params=[("cursor", 0)], headers=headers
        )
        self._check(rule_name, logs, Expected(200), BACKGROUND_LOGS)
        want = f"{word}\n{word}-err\n"
        hold(BACKGROUND_LOGS, logs.text == want, rule_name, f"the logs of {text!r} are {logs.text!r}, not {want!r}")

    @precondition(_on("pty_missing"))
    @rule(sb=sandboxes, proxy=st.booleans())
    def pty_missing(self, sb: SandboxHandle, proxy: bool) -> None:
        """Look up a PTY session that does not exist: 404, and execd's own answer names CONTEXT_NOT_FOUND."""
        rule_name = "pty_missing"
        found = self._endpoint(rule_name, sb, EXECD_PORT, proxy)
        if found is None:
            return
        base, headers = found
        session = f"sandproof-missing-{self.run_label}"
        response = self._send(rule_name, "GET", f"{base}/pty/{session}", headers=headers)
        if self._gate(rule_name, sb, EXECD_PORT, proxy, response):
            return
        where = f"GET /pty/{session} -> {response.status_code}: {response.text[:200]!r}"
        hold(PTY_MISSING, response.status_code == 404, rule_name, where)
        data = json_body(response)
        code = data.get("code") if isinstance(data, dict) else None
        if code is not None:  # a bare 404 is the proxy's, for a route not registered (the mock's: no PTY)
            hold(
                PTY_MISSING_CODE,
                code == "CONTEXT_NOT_FOUND",
                rule_name,
                f"{where}: execd's code is not CONTEXT_NOT_FOUND",
            )

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
