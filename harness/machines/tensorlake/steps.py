"""The TensorLake API machine's steps: the multi-request procedures its rules are made of.

Creating a sandbox and mapping its id, comparing the listing, PATCHing with a rollback check, suspending and
resuming; running commands through the proxy's management API (egress probes judged by
:func:`~harness.machines.tensorlake.probes.expect_probe`, the stream's ``data:`` framing pinned); and ingress
requests, HTTP and WebSocket, with each kind of credentials, checked against
:meth:`Oracle.admit <harness.machines.tensorlake.oracle.Oracle.admit>`. Each check is a tagged contract of
:data:`CONTRACTS` (or of :mod:`harness.machines.tensorlake.driver`).

WebSocket requests, what reaches the sandbox's app and the exact probe answers need the mock's echo app and
DNS table, so they run with the admin API only; a real deployment has no app on its user ports.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from hypothesis.stateful import multiple
from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection, connect

from contracts.tensorlake import NetworkConfig, PolicyError, classify_entry
from harness.machines.common import add_contract, hold
from harness.machines.tensorlake.compare import URL_KEYS, Expected, Json, diff, info_shape_problem, normalise_info
from harness.machines.tensorlake.driver import (
    ADMIN_API,
    LOOPBACK,
    NOT_FOUND,
    REJECTED_TRANSITION_KEEPS_STATE,
    REJECTED_UPDATE_KEEPS_STATE,
    REQUEST_VALIDATION,
    SANDBOX_INFO_SHAPE,
    SUITE,
    URL_WHEN_RUNNING,
    MachineBase,
    SandboxHandle,
)
from harness.machines.tensorlake.oracle import Proxied
from harness.machines.tensorlake.probes import RunResult, expect_probe, parse_sse
from harness.strength import Contract, choice, observed, spec
from mockserver.tensorlake.model import MANAGEMENT_PORT, SESSION_COOKIES
from mockserver.tensorlake.model.auth import parse_cookies
from mockserver.tensorlake.model.gate import resolver_from
from mockserver.tensorlake.model.records import STATUSES

__all__ = ["CONTRACTS", "MachineSteps", "framing_problem", "spelled_loosely"]

OTHER_KEY = "sandproof-other-key"
DEFAULT_INGRESS_DOMAIN = "sandbox.localhost"
ORGANIZATION, PROJECT = "org_sandproof", "proj_sandproof"
#: The ``?wait_ms=`` a waiting suspend or resume sends.
WAIT_MS = 3000
#: Seconds a WebSocket may take to open or answer.
WS_TIMEOUT = 10.0
#: Refusal statuses of the proxy that mean the same (which one is sandproof's choice).
PROXY_REFUSALS = (401, 403, 404)

# --- contracts --------------------------------------------------------------------------------------------

CONTRACTS: dict[str, Contract] = {}
_WIRE = "tensorlake-wire.md"

CREATE_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "create_answer",
    observed(
        f"{_WIRE} §3, §4 (CreateSandboxResponse)",
        "POST /sandboxes answers a sandbox_id (not id) and a status of the eight; wait:false answers 202 pending",
    ),
    "A create is accepted with the model's status and answers a sandbox_id and a known status.",
)
DISTINCT_IDS = add_contract(
    CONTRACTS,
    SUITE,
    "distinct_ids",
    observed(f"{_WIRE} §3", "every call names its sandbox by id (GET, PATCH, DELETE /sandboxes/{id})"),
    "A new sandbox never gets the id of another one.",
)
CREATE_RESPONSE_EXACT = add_contract(
    CONTRACTS,
    SUITE,
    "create_response_exact",
    choice("the create answer's other fields (name, pending_reason, ...) follow sandproof's model"),
    "With the admin API, the whole create answer (URLs left out) is the model's.",
)
LISTING = add_contract(
    CONTRACTS,
    SUITE,
    "listing",
    observed(f"{_WIRE} §3", 'GET /sandboxes answers {"sandboxes": [SandboxInfo]} (a bare array fails)'),
    "The listing holds every live sandbox the model holds, once, and no other live one.",
)
LISTING_EXACT = add_contract(
    CONTRACTS,
    SUITE,
    "listing_exact",
    choice("the docs let a deleted sandbox be dropped or shown terminated; sandproof's model drops it"),
    "With the admin API, the listing holds exactly the model's sandboxes, deleted ones included or not alike.",
)
PATCH_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "patch_answer",
    observed(f"{_WIRE} §3, §5", "PATCH /sandboxes/{id} answers the full SandboxInfo; {} and 204 fail the SDK"),
    "A well-formed PATCH (network absent, null or a policy; name, flags, ports) is accepted.",
)
TRANSITION_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "transition_answer",
    observed(f"{_WIRE} §3", "suspend and resume answer 200 once settled and 202 while moving; the SDK then polls"),
    "Suspend and resume are accepted as the model accepts them, 200 or 202 as it settles.",
)
MANAGEMENT_API = add_contract(
    CONTRACTS,
    SUITE,
    "management_api",
    spec("tl.ingress.sandbox-url", "tl.ingress.management-url", "tl.ports.9501-routable"),
    "The sandbox_url the target returned reaches the sandbox's management API (port 9501) with the project key.",
)
RUN_STREAM = add_contract(
    CONTRACTS,
    SUITE,
    "run_stream",
    observed(f"{_WIRE} §8", "/api/v1/processes/run must answer text/event-stream; no exit event fails the SDK"),
    "A command run streams text/event-stream and ends with an exit event.",
)
RUN_STREAM_FRAMING = add_contract(
    CONTRACTS,
    SUITE,
    "run_stream_framing",
    observed(
        f"{_WIRE} §8 and captures/tensorlake-sdk-0.5.161.txt (sandbox.run)",
        "the SDK reads standard SSE: each event a `data: <json>` frame ended by a blank line",
    ),
    "On the wire, every run event is a standard SSE frame: `data:` lines holding a JSON object, then a blank line.",
)
EGRESS_DECISION = add_contract(
    CONTRACTS,
    SUITE,
    "egress_decision",
    spec(
        "tl.allow.example",
        "tl.allow.deny-precedence",
        "tl.allow.wildcard-apex",
        "tl.dns.in-short",
        "tl.table.allow-out",
        "tl.table.deny-out",
        "tl.deny.combine",
    ),
    "A probe from inside the sandbox gets out or not as the policy decides: a blocked one fails and prints "
    "nothing; with the admin API an allowed one succeeds.",
)
PROBE_OUTPUT = add_contract(
    CONTRACTS,
    SUITE,
    "probe_output",
    choice("how a blocked or failed probe exits (curl 6 or 7, getent 2) and what getent prints are the emulator's"),
    "With the admin API, a probe's exact exit code and printed addresses are the emulator's.",
)
INGRESS_ADMISSION = add_contract(
    CONTRACTS,
    SUITE,
    "ingress_admission",
    spec(
        "tl.ports.exposed-only",
        "tl.ports.unauth-does-not-expose",
        "tl.ingress.authenticated",
        "tl.ingress.unauthenticated",
        "tl.auth.management-needs-auth",
        "tl.auth.exposed-private",
        "tl.auth.project-key",
        "tl.unauth.both-conditions",
        "tl.unauth.management-never-public",
        "tl.unauth.auto-resume",
        "tl.cookie.session",
        "tl.cookie.project-query",
        "tl.table.exposed-ports",
        "tl.table.allow-unauthenticated-access",
    ),
    "The proxy forwards or refuses each request as the model's proxy does: exposed ports only, auth unless public, "
    "the management port never public, the key or a session cookie with its project, a suspended sandbox woken.",
)
MANAGEMENT_HEALTH = add_contract(
    CONTRACTS,
    SUITE,
    "management_health",
    observed(f"{_WIRE} §8", 'GET /api/v1/health on the management API answers {"healthy": bool}'),
    'With the admin API, the management API\'s health answer is {"healthy": true}.',
)
INGRESS_ROUTING = add_contract(
    CONTRACTS,
    SUITE,
    "ingress_routing",
    spec("tl.ingress.port-url", "tl.ingress.by-name"),
    "With the admin API, a request for <port>-<id or name> reaches that sandbox's app on that port.",
)
PATH_QUERY_KEPT = add_contract(
    CONTRACTS,
    SUITE,
    "path_query_kept",
    spec("tl.ingress.path-query"),
    "With the admin API, the sandbox's app sees the request's path and query string as sent.",
)
COOKIE_STRIPPED = add_contract(
    CONTRACTS,
    SUITE,
    "cookie_stripped",
    spec("tl.cookie.stripped"),
    "With the admin API, the app receives the request's cookies without the platform session cookie.",
)
PROJECT_KEY_STRIPPED = add_contract(
    CONTRACTS,
    SUITE,
    "project_key_stripped",
    choice("the docs do not say whether the proxy passes Authorization on; sandproof strips the project key"),
    "With the admin API, the app does not receive the caller's Authorization: Bearer <project key>.",
)
WEBSOCKET_UPGRADE = add_contract(
    CONTRACTS,
    SUITE,
    "websocket_upgrade",
    spec("tl.ingress.websocket", "tl.auth.grpc-websocket"),
    "With the admin API, a WebSocket to a user port opens (and echoes) exactly when the same HTTP request is "
    "forwarded: the same authenticated routing model (gRPC is not checked: see tl.ingress.grpc).",
)
UPDATE_KEEPS_CONNECTION = add_contract(
    CONTRACTS,
    SUITE,
    "update_keeps_connection",
    spec("tl.update.established", "tl-sdk.established"),
    "With the admin API, a WebSocket open to a sandbox's exposed port stays open and answers across a PATCH of its "
    "policy (an established inbound connection; outbound ones need a runtime with real sockets).",
)


def spelled_loosely(body: Any) -> bool:
    """Tell whether a request's policy has an entry in a spelling only sandproof's choices accept (case, dots...)."""
    network = body.get("network") if isinstance(body, dict) else None
    if not isinstance(network, dict):
        return False
    for where in ("allow_out", "deny_out"):
        entries = network.get(where)
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, str):
                continue
            try:
                _, canonical = classify_entry(entry, where)
            except PolicyError:
                continue
            if canonical != entry:
                return True
    return False


def framing_problem(text: str) -> str | None:
    """Return what makes a run stream's body not standard SSE ``data:`` frames of JSON objects, or None."""
    if text and not text.endswith("\n\n"):
        return f"the stream does not end with a blank line: {text[-80:]!r}"
    for block in text.split("\n\n"):
        if not block.strip("\n"):
            continue
        payload = []
        for line in block.strip("\n").split("\n"):
            field, colon, value = line.partition(":")
            if not line.startswith(":") and (not colon or field not in ("data", "event", "id", "retry")):
                return f"the line {line[:120]!r} is not an SSE field (a frame is `data: <json>`)"
            if field == "data":
                payload.append(value.removeprefix(" "))
        try:
            event = json.loads("\n".join(payload)) if payload else None
        except ValueError:
            event = None
        if not isinstance(event, dict):
            return f"the frame {block[:120]!r} carries no JSON object in its data lines"
    return None


class MachineSteps(MachineBase):
    """Run the steps rules share: create, list, PATCH, transitions, commands in a sandbox, ingress requests."""

    # -- lifecycle steps -----------------------------------------------------------------------------------

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
        stricter = REQUEST_VALIDATION if spelled_loosely(wire) else None
        data = self._check(rule, response, expected, CREATE_ANSWER, stricter=stricter)
        if self.book.diverged and record is not None:
            self.oracle.delete(record.id)  # the target refused it for a reason of its own: the model forgets it
            self.book.retired.add(record.id)
            return multiple()
        if record is None:
            stray = data.get("sandbox_id") if self.book.diverged and isinstance(data, dict) else None
            if isinstance(stray, str):
                self.client.delete(f"/sandboxes/{stray}")  # accepted for a reason of its own: it must not hold a name
            return multiple()
        sandbox_id = data.get("sandbox_id") if isinstance(data, dict) else None
        hold(
            CREATE_ANSWER,
            isinstance(sandbox_id, str),
            rule,
            f"{response.status_code} without a sandbox_id: {response.text[:300]!r}",
        )
        assert isinstance(data, dict) and isinstance(sandbox_id, str)
        hold(
            DISTINCT_IDS,
            sandbox_id not in self.ids,
            rule,
            f"the new sandbox got the id of {self.ids.get(sandbox_id)!r}: {sandbox_id}",
        )
        handle = SandboxHandle(f"sb{len(self.book.handles) + 1}", sandbox_id, record.id)
        self.ids[sandbox_id] = record.id
        self.book.handles.append(handle)
        self.book.stray.discard(sandbox_id)
        self._policy_accepted(record.id)
        hold(
            CREATE_ANSWER,
            data.get("status") in STATUSES,
            rule,
            f"status {data.get('status')!r} is not a sandbox status",
        )
        if isinstance(data.get("ingress_endpoint"), str):
            self.book.ingress_endpoint = data["ingress_endpoint"]
        if isinstance(data.get("sandbox_url"), str):
            handle.sandbox_url = data["sandbox_url"]
        hold(
            URL_WHEN_RUNNING,
            data.get("status") != "running" or bool(data.get("sandbox_url")),
            rule,
            "a running sandbox without sandbox_url (the SDK cannot route to it)",
        )
        if self.strict:
            want = expected.body if isinstance(expected.body, dict) else {}
            hold(
                CREATE_ANSWER,
                data.get("status") == want.get("status"),
                rule,
                f"POST /sandboxes: {handle.alias} is {data.get('status')!r}, the model says {want.get('status')!r}",
            )
            actual = {k: v for k, v in data.items() if k not in URL_KEYS}
            actual["sandbox_id"] = self._id_of(sandbox_id)
            found = diff(expected.body, actual)
            hold(
                CREATE_RESPONSE_EXACT,
                found is None,
                rule,
                f"POST /sandboxes: {handle.alias} differs from the model at {found}",
            )
        else:
            hold(
                CREATE_ANSWER,
                body.get("wait") is not False or data.get("status") in ("pending", "running"),
                rule,
                f"wait:false answered status {data.get('status')!r}",
            )
            self._settle(handle)
        return handle

    def _compare_listing(self, rule: str) -> None:
        expected = self.oracle.list()
        response = self._send(rule, "GET", "/sandboxes")
        data = self._check(rule, response, expected, LISTING)
        items = data.get("sandboxes") if isinstance(data, dict) else None
        if not hold(
            LISTING, isinstance(items, list), rule, f"GET /sandboxes has no sandboxes list: {response.text[:300]!r}"
        ):
            return
        assert isinstance(items, list)
        retired = self.book.retired
        strays = {self._id_of(s) for s in self.book.stray}
        listed: dict[str, Json] = {}
        for item in items:
            problem = info_shape_problem(item)
            if not hold(SANDBOX_INFO_SHAPE, problem is None, rule, f"GET /sandboxes: unusable item: {problem}"):
                continue
            view = normalise_info(item, self._id_of)
            ident = str(view["id"])
            if ident in retired or ident in strays or (not self.strict and ident.startswith("unmapped:")):
                continue  # sandboxes whose state diverged, and (without the admin API) the account's others
            hold(LISTING, ident not in listed, rule, f"GET /sandboxes lists {self._alias(ident)} twice")
            self._check_urls(rule, "GET /sandboxes", item)
            self._check_history(rule, "GET /sandboxes", view)
            listed[ident] = view
        want = {str(v["id"]): v for v in expected.body if str(v["id"]) not in retired}
        live = {i for i, v in want.items() if v.get("status") != "terminated"}
        shown = {i for i, v in listed.items() if v.get("status") != "terminated"}
        missing = sorted(self._alias(i) for i in live - shown)
        extra = sorted(self._alias(i) for i in shown - live)
        hold(
            LISTING,
            not (missing or extra),
            rule,
            f"GET /sandboxes: missing {missing}, unexpected {extra} (the model's view)",
        )
        if self.strict:
            gone = sorted(self._alias(i) for i in set(want) ^ set(listed))
            hold(LISTING_EXACT, not gone, rule, f"GET /sandboxes: deleted sandboxes listed on one side only: {gone}")
        for ident in live & shown:
            self._compare(rule, "GET /sandboxes", want[ident], listed[ident])

    def _patch(self, rule: str, sb: SandboxHandle, wire: Json) -> None:
        expected = self.oracle.patch(sb.model_id, wire)
        before = self._snapshot(rule, sb) if expected.status >= 400 else None
        response = self._send(rule, "PATCH", f"/sandboxes/{sb.target_id}", body=wire)
        stricter = REQUEST_VALIDATION if spelled_loosely(wire) else None
        data = self._check(rule, response, expected, PATCH_ANSWER, stricter=stricter)
        self.book.listing_dirty = True
        if self.book.diverged:
            self._retire(sb)
            return
        if before is not None:
            self._unchanged(rule, sb, before, REJECTED_UPDATE_KEEPS_STATE)
            return
        if "network" in wire:
            self._policy_accepted(sb.model_id)
        self._observe(rule, response, data, expected.body)

    def _current(self, rule: str, sb: SandboxHandle) -> Json | None:
        """GET a sandbox like the SDK does before changing its ports; None when the model says 404."""
        expected = self.oracle.get(sb.model_id)
        response = self._send(rule, "GET", f"/sandboxes/{sb.target_id}")
        data = self._check(rule, response, expected, NOT_FOUND)
        if expected.status != 200:
            return None
        self._observe(rule, response, data, expected.body)
        return data if isinstance(data, dict) else None

    def _transition(self, rule: str, sb: SandboxHandle, action: str, wait: bool) -> None:
        wait_ms = WAIT_MS if wait else None
        predict = self.oracle.suspend if action == "suspend" else self.oracle.resume
        expected = predict(sb.model_id, wait_ms)
        before = self._snapshot(rule, sb) if expected.status >= 400 else None
        params = {"wait_ms": str(wait_ms)} if wait_ms else None
        response = self._send(rule, "POST", f"/sandboxes/{sb.target_id}/{action}", params=params)
        loose = () if self.strict else (200, 202)
        data = self._check(rule, response, expected, TRANSITION_ANSWER, loose=loose)
        self.book.listing_dirty = True
        if self.book.diverged:
            self._retire(sb)
        elif before is not None:
            self._unchanged(rule, sb, before, REJECTED_TRANSITION_KEEPS_STATE)
        elif self.strict:
            self._observe(rule, response, data, expected.body)
        else:
            self._settle(sb)

    # -- inside the sandbox: management API and egress probes ----------------------------------------------

    def _management(self, sb: SandboxHandle) -> tuple[str, dict[str, str]]:
        """Return the management base URL and routing headers the SDK would use for ``sb``."""
        url = (sb.sandbox_url or str(self.client.base_url)).rstrip("/")
        if (urlsplit(url).hostname or "") in LOOPBACK:
            return url, {"host": f"{sb.target_id}.local"}
        return url, {"x-tensorlake-sandbox-id": sb.target_id}

    def _run(self, rule: str, sb: SandboxHandle, command: str, args: list[str]) -> RunResult | None:
        """Run a command through the proxy; None when the model says the proxy refuses (checked)."""
        proxied = self.oracle.admit(sb.model_id, MANAGEMENT_PORT, self.key, {}, {})
        base, headers = self._management(sb)
        response = self._send(
            rule,
            "POST",
            base + "/api/v1/processes/run",
            body={"command": command, "args": args, "timeout": 30},
            headers={**headers, "accept": "text/event-stream"},
        )
        if proxied.woke and not self.strict:
            self._settle(sb)
            if response.status_code != 200:
                return None
        if proxied.expected is not None:
            self._check(rule, response, proxied.expected, MANAGEMENT_API, refusal=INGRESS_ADMISSION)
            return None
        self._check(rule, response, Expected(200), MANAGEMENT_API)
        if response.status_code != 200:
            return None
        kind = response.headers.get("content-type", "")
        if not hold(RUN_STREAM, "text/event-stream" in kind, rule, f"{command}: the run stream is {kind!r}"):
            return None
        problem = framing_problem(response.text)
        hold(RUN_STREAM_FRAMING, problem is None, rule, f"{command} {' '.join(args)}: {problem}", response.text[:500])
        result = parse_sse(response.text)
        hold(
            RUN_STREAM,
            result.exit_code is not None or result.signal is not None,
            rule,
            f"{command} {' '.join(args)}: the stream has no exit event",
            response.text[:500],
        )
        return result

    def _resolver(self, sb: SandboxHandle) -> str | None:
        """Return the sandbox's resolver from its ``/etc/resolv.conf`` (read once), None if unreachable."""
        known = self.book.resolvers.get(sb.model_id)
        if known is not None:
            return known
        result = self._run("egress_probe", sb, "cat", ["/etc/resolv.conf"])
        if result is None:
            return None
        resolver = resolver_from("\n".join(result.stdout))
        self.book.resolvers[sb.model_id] = resolver
        return resolver

    def _probe(self, sb: SandboxHandle, policy: NetworkConfig | None, resolver: str, tool: str, host: str) -> bool:
        """Run one probe and compare it with the reference; False when the proxy refused (checked)."""
        args = ["hosts", host] if tool == "getent" else ["-s", "-m", "5", f"http://{host}/"]
        result = self._run("egress_probe", sb, tool, args)
        if result is None:
            return False
        want = expect_probe(policy, tool, host, resolver, self.oracle.resolve if self.strict else None)
        text = f"{tool} {' '.join(args)} (policy {None if policy is None else policy.to_json()}, resolver {resolver})"
        rule = "egress_probe"
        hold(
            EGRESS_DECISION, not (want.blocked and result.exit_code == 0), rule, f"{text} got out; the policy blocks it"
        )
        hold(
            EGRESS_DECISION,
            not (want.blocked and result.stdout),
            rule,
            f"{text} is blocked but printed {result.stdout!r}",
        )
        if not self.strict or want.exit_code is None:
            return True
        hold(
            EGRESS_DECISION,
            want.exit_code != 0 or result.exit_code == 0,
            rule,
            f"{text} exited {result.exit_code}; the policy lets it out",
        )
        hold(
            PROBE_OUTPUT,
            result.exit_code == want.exit_code,
            rule,
            f"{text} exited {result.exit_code}, the reference says {want.exit_code}",
        )
        if tool == "getent" and want.addresses is not None:
            printed = sorted(tuple(line.split()[:2]) for line in result.stdout if line.split())
            expected = sorted((address, host) for address in want.addresses)
            hold(PROBE_OUTPUT, printed == expected, rule, f"{text} printed {result.stdout!r}, expected {expected!r}")
        return True

    # -- ingress ---------------------------------------------------------------------------------------------

    def _session_token(self) -> str:
        """Return a valid session token (minted through the admin API), or a bogus one without it."""
        if self.config.admin is None:
            return "sandproof-bogus-session"
        if self.book.session is None:
            body = {"api_key": self.key, "organization_id": ORGANIZATION, "project_id": PROJECT}
            response = self.client.post("/_mock/tensorlake/sessions", json=body)
            if not hold(
                ADMIN_API,
                response.status_code == 201,
                "ingress",
                f"the admin API did not issue a session: {response.text[:200]!r}",
            ):
                return "sandproof-bogus-session"  # the oracle knows no session either: both refuse it
            token = str(response.json()["token"])
            self.oracle.add_session(token, body)
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

    def _ingress_once(self, sb: SandboxHandle, port: int, auth: str, by_name: bool) -> bool:
        """Send one proxied request (and a WebSocket) and check them; False when the sandbox is gone or unknowable."""
        record = self.oracle.lookup(sb.model_id)
        named = by_name and record is not None and record.name is not None
        label_model = record.name if named and record is not None and record.name else sb.model_id
        label_target = label_model if named else sb.target_id
        key, cookies, query = self._credentials(auth)
        proxied = self.oracle.admit(label_model, port, key, cookies, query)
        path = "/api/v1/health" if port == MANAGEMENT_PORT else "/sandproof/echo"
        url, headers = self._ingress_url(label_target, port, path)
        headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
        response = self._send("ingress", "GET", url, params=query, headers=headers, anonymous=True)
        if proxied.woke and not self.strict:
            self._settle(sb)
            return False
        where = f"{auth} request for port {port} of {sb.alias}{' by name' if named else ''}"
        if proxied.expected is not None:
            self._check(
                "ingress",
                response,
                proxied.expected,
                INGRESS_ADMISSION,
                loose=PROXY_REFUSALS,
                refusal=INGRESS_ADMISSION,
            )
            if self.strict and port != MANAGEMENT_PORT:
                self._websocket_once(where, label_model, port, url, headers, query)
            return record is not None
        if not self.strict:
            hold(
                INGRESS_ADMISSION,
                response.status_code not in PROXY_REFUSALS,
                "ingress",
                f"{where} was refused ({response.status_code}); it must pass",
                f"GET {url} -> {response.status_code}: {response.text[:300]}",
            )
            return True
        data = self._check("ingress", response, Expected(200), INGRESS_ADMISSION)
        if response.status_code != 200:
            return True
        if port == MANAGEMENT_PORT:
            hold(
                MANAGEMENT_HEALTH,
                data == {"healthy": True},
                "ingress",
                f"{where}: the management API answered {data!r}",
            )
            return True
        self._check_echo(where, sb, port, path, query, headers, proxied, data)
        self._websocket_once(where, label_model, port, url, headers, query)
        return True

    def _check_echo(
        self,
        where: str,
        sb: SandboxHandle,
        port: int,
        path: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        proxied: Proxied,
        data: Any,
    ) -> None:
        """Check what reached the sandbox's echo app: right sandbox and port, path and query kept, the session
        cookie and the project key removed as the model's proxy removes them."""
        rule = "ingress"
        if not hold(INGRESS_ROUTING, isinstance(data, dict), rule, f"{where}: the port app answered {data!r}"):
            return
        for key, want in (("sandbox_id", sb.target_id), ("port", port)):
            hold(
                INGRESS_ROUTING,
                data.get(key) == want,
                rule,
                f"{where}: the sandbox saw {key}={data.get(key)!r}, not {want!r}",
            )
        hold(
            PATH_QUERY_KEPT,
            data.get("path") == path,
            rule,
            f"{where}: the sandbox saw path {data.get('path')!r}, not {path!r}",
        )
        got_query = {k: v[-1] for k, v in parse_qs(str(data.get("query", ""))).items()}
        hold(
            PATH_QUERY_KEPT, got_query == dict(query), rule, f"{where}: the query reached the sandbox as {got_query!r}"
        )
        assert proxied.admission is not None
        forwarded = self.oracle.forwarded(headers, proxied.admission)
        kept = parse_cookies(forwarded.get("cookie"))
        hold(
            COOKIE_STRIPPED,
            data.get("cookies") == kept,
            rule,
            f"{where}: the sandbox received cookies {data.get('cookies')!r}; expected {kept!r}",
        )
        seen = data["headers"] if isinstance(data.get("headers"), dict) else {}
        if proxied.strips_key is not None:
            hold(
                PROJECT_KEY_STRIPPED,
                seen.get("authorization") == forwarded.get("authorization"),
                rule,
                f"{where}: the sandbox received Authorization {seen.get('authorization')!r}; "
                f"expected {forwarded.get('authorization')!r}",
            )

    # -- WebSockets ------------------------------------------------------------------------------------------

    def _open_websocket(self, url: str, headers: Mapping[str, str], query: Mapping[str, str]) -> ClientConnection:
        """Open a WebSocket to ``url`` with the request's headers (routed by Host on loopback); raise when refused."""
        parts = urlsplit(url)
        sent = {k: v for k, v in headers.items() if k != "host" and v}
        suffix = f"?{urlencode(dict(query))}" if query else ""
        host = headers.get("host") or parts.netloc
        sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=WS_TIMEOUT)
        try:
            return connect(
                f"ws://{host}{parts.path}{suffix}", sock=sock, additional_headers=sent, open_timeout=WS_TIMEOUT
            )
        except BaseException:
            sock.close()
            raise

    def _websocket_once(
        self, where: str, label: str, port: int, url: str, headers: Mapping[str, str], query: Mapping[str, str]
    ) -> None:
        """Open a WebSocket with the HTTP request's credentials: it opens and echoes exactly when the proxy forwards."""
        key = headers.get("authorization", "").removeprefix("Bearer ") or None
        proxied = self.oracle.admit(label, port, key, parse_cookies(headers.get("cookie")), query)
        if proxied.woke:
            return  # the HTTP request should have woken it already: the two disagree, which the states show
        try:
            ws = self._open_websocket(url, headers, query)
        except (OSError, WebSocketException) as exc:
            hold(
                WEBSOCKET_UPGRADE,
                proxied.expected is not None,
                "ingress",
                f"{where}: the WebSocket was refused ({type(exc).__name__}: {exc}); the same request is forwarded",
            )
            return
        with ws:
            if not hold(
                WEBSOCKET_UPGRADE,
                proxied.expected is None,
                "ingress",
                f"{where}: the WebSocket opened; the proxy refuses the same request ({proxied.expected})",
            ):
                return
            hold(WEBSOCKET_UPGRADE, self._echoes(ws, "sandproof"), "ingress", f"{where}: the WebSocket does not echo")

    @staticmethod
    def _echoes(ws: ClientConnection, message: str) -> bool:
        """Tell whether the echo app answers ``message`` on ``ws``."""
        try:
            ws.send(message)
            return ws.recv(timeout=WS_TIMEOUT) == message
        except (OSError, TimeoutError, WebSocketException):
            return False

    def _connection_across_update(self, rule: str, sb: SandboxHandle, wire: Json) -> None:
        """Hold a WebSocket open to an exposed port while PATCHing the sandbox: it must stay open and answer."""
        record = self.oracle.lookup(sb.model_id)
        if not self.strict or record is None or record.status != "running" or not record.exposed_ports:
            self._patch(rule, sb, wire)
            return
        port = record.exposed_ports[0]
        proxied = self.oracle.admit(sb.model_id, port, self.key, {}, {})
        url, headers = self._ingress_url(sb.target_id, port, "/sandproof/echo")
        headers["authorization"] = f"Bearer {self.key}"
        where = f"a WebSocket to port {port} of {sb.alias}"
        try:
            ws = self._open_websocket(url, headers, {})
        except (OSError, WebSocketException) as exc:
            hold(
                WEBSOCKET_UPGRADE,
                proxied.expected is not None,
                rule,
                f"{where} was refused ({type(exc).__name__}: {exc})",
            )
            self._patch(rule, sb, wire)
            return
        with ws:
            opened = hold(WEBSOCKET_UPGRADE, proxied.expected is None, rule, f"{where} opened; the proxy refuses it")
            self._patch(rule, sb, wire)
            after = self.oracle.lookup(sb.model_id)
            if opened and after is not None and after.status == "running" and sb.model_id not in self.book.retired:
                hold(
                    UPDATE_KEEPS_CONNECTION,
                    self._echoes(ws, "after-update"),
                    rule,
                    f"{where} no longer answers after PATCH {json.dumps(wire)[:200]}",
                )
