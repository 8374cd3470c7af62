"""The OpenSandbox machine's port rules: endpoints, execd (commands, background logs, PTY) and egress probes.

:class:`ExecdRules` resolves a sandbox port like the SDK (direct or through the server proxy), checks what the
model's port gate refuses (a paused sandbox has no execd), runs commands and checks their stream on the wire
(execd's bare JSON frames; the SDK-level :func:`~harness.machines.opensandbox.compare.parse_run` stays
lenient), their result and status record, a background command's combined logs, the lookup of a PTY session
that does not exist, and egress probes, whose getting out is the policy's decision and whose exact failure is
the emulator's. :class:`~harness.machines.opensandbox.machine.OpenSandboxAPIMachine` adds the sidecar's
policy rules and the admin rules.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from harness.machines.common import add_contract, hold, json_body
from harness.machines.opensandbox.compare import Expected, RunResult, parse_run
from harness.machines.opensandbox.driver import SUITE, SandboxHandle
from harness.machines.opensandbox.driver import when_enabled as _on
from harness.machines.opensandbox.lifecycle_rules import LifecycleRules
from harness.machines.opensandbox.requests import WORDS, Command, Probe
from harness.machines.opensandbox.requests import commands as _commands
from harness.machines.opensandbox.requests import probes as _probes
from harness.strength import Contract, choice, observed, spec
from harness.strength.observations import REAL_RUN, capture, published
from mockserver.opensandbox.model.profiles import EGRESS_PORT, EXECD_PORT

__all__ = ["CONTRACTS", "ExecdRules", "execd_framing_problem"]

#: How often, and how many seconds apart, a background command's status is polled before its logs are read.
LOG_POLLS = 50
LOG_POLL_SECONDS = 0.05


#: The contracts this module checks, by name.
CONTRACTS: dict[str, Contract] = {}
_WIRE = "opensandbox-wire.md"

ENDPOINT_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "endpoint_answer",
    observed(
        REAL_RUN,
        "GET /endpoints/{port} answers a scheme-less host[:port][/path] (the server proxy route with "
        "use_server_proxy) and an optional headers object; bad ports and proxy+expires answer 400",
        note=f"{_WIRE} §3 (row 8), §3.1 and the differential run",
    ),
    "Endpoints resolve as on the real server: status, code, a scheme-less endpoint, the proxy route, headers.",
)
BACKEND_GATE = add_contract(
    CONTRACTS,
    SUITE,
    "backend_gate",
    observed(
        (
            REAL_RUN,
            published(
                "opensandbox-server==1.1.1", "opensandbox_server/api/proxy.py", '"code": "BACKEND_CONNECTION_FAILED",'
            ),
        ),
        "a port whose backend cannot answer is refused (502 BACKEND_CONNECTION_FAILED)",
        note=f"{_WIRE} §3 (row 16), §8",
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
        capture(
            "docs/sources/captures/opensandbox-sdk-fault-reactions.txt",
            "Expected response header Content-Type to contain 'text/event-stream', got 'application/json'",
        ),
        "POST /command answers text/event-stream (the SDK refuses anything else), init first",
        note=f"{_WIRE} §2.1, §4.1",
    ),
    "A command answers 200 with text/event-stream and an init event carrying the command id.",
)
EXECD_SSE_FRAMING = add_contract(
    CONTRACTS,
    SUITE,
    "execd_sse_framing",
    observed(
        (
            capture("docs/sources/captures/opensandbox-sdk-direct-mode.txt", "### run_foreground"),
            published(
                "opensandbox==1.1.1",
                "opensandbox/adapters/converter/command_execution.py",
                "event_dict = json.loads(data)",
            ),
        ),
        "execd writes each event as one bare JSON object followed by a blank line, with no `data:` prefix",
        note=f"{_WIRE} §4.1 and captures/opensandbox-sdk-direct-mode.txt (run_foreground)",
    ),
    "On the wire, execd's stream is bare JSON objects each ended by a blank line, as raw clients read it (the "
    "SDK-level parser, like the SDK, also takes `data:` frames).",
)
COMMAND_RESULT = add_contract(
    CONTRACTS,
    SUITE,
    "command_result",
    observed(
        published(
            "opensandbox==1.1.1",
            "opensandbox/adapters/converter/event_node.py",
            'value: str | None = Field(default=None, alias="evalue")',
        ),
        "the exit code is int(error.evalue), 0 after execution_complete; stdout events in order",
        note=f"{_WIRE} §4.1",
    ),
    "A command's exit code and stdout, as the SDK reads them from the stream, are the model's.",
)
COMMAND_STATUS = add_contract(
    CONTRACTS,
    SUITE,
    "command_status",
    observed(
        capture(
            "docs/sources/captures/opensandbox-sdk-fault-reactions.txt",
            "status 200 but running=true: OK -> CommandStatus(id='x', content=None, running=True, exit_code=None",
        ),
        "GET /command/status/{id} shows running false and the exit code once it ended",
        note=f"{_WIRE} §4.2",
    ),
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
        published(
            "nemo-gym==0.7.0",
            "nemo_gym/sandbox/providers/opensandbox/provider.py",
            'return response.status == 404 and "CONTEXT_NOT_FOUND" in await response.text()',
        ),
        'execd answers a missing PTY session 404 {"code": "CONTEXT_NOT_FOUND"}, which NeMo Gym keys on',
        note="nemo-gym.md (PTY, F13) and the real execd's answer in issue 12",
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


class ExecdRules(LifecycleRules):
    """Resolve ports, run commands through execd and probe egress, comparing every answer with the model."""

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
