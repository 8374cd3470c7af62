"""The TensorLake API machine's steps: the multi-request procedures its rules are made of.

Creating a sandbox and mapping its id, comparing the listing, PATCHing with a rollback check, suspending and
resuming; running commands through the proxy's management API (egress probes judged by
:func:`~harness.machines.tensorlake.probes.expect_probe`, the stream's ``data:`` framing pinned); and a
WebSocket held open across a PATCH. The ingress steps live in :mod:`harness.machines.tensorlake.ingress`. Each
check is a tagged contract of :data:`CONTRACTS` (or of the modules it imports them from).

The exact probe answers and the connection across an update need the mock's DNS table and echo app, so they
run with the admin API only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
from hypothesis.stateful import multiple
from websockets.exceptions import WebSocketException

from contracts.tensorlake import NetworkConfig, PolicyError, classify_entry
from harness.machines.common import add_contract, hold, json_body
from harness.machines.tensorlake.answers import (
    NOT_FOUND,
    REJECTED_TRANSITION_KEEPS_STATE,
    REJECTED_UPDATE_KEEPS_STATE,
    REQUEST_VALIDATION,
    SANDBOX_INFO_SHAPE,
    URL_WHEN_RUNNING,
    Answers,
)
from harness.machines.tensorlake.compare import (
    ANY,
    URL_KEYS,
    Expected,
    Json,
    diff,
    info_shape_problem,
    normalise_info,
)
from harness.machines.tensorlake.driver import LOOPBACK, SUITE, SandboxHandle, Session
from harness.machines.tensorlake.ingress import INGRESS_ADMISSION, WEBSOCKET_UPGRADE, Ingress
from harness.machines.tensorlake.probes import RunResult, expect_probe, parse_sse
from harness.strength import Contract, choice, observed, spec
from harness.strength.observations import capture, published
from mockserver.tensorlake.model import MANAGEMENT_PORT
from mockserver.tensorlake.model.egress import resolver_from
from mockserver.tensorlake.model.records import STATUSES

__all__ = ["ANONYMOUS_CALLS", "CONTRACTS", "Steps", "framing_problem", "spelled_loosely"]

#: The ``?wait_ms=`` a waiting suspend or resume sends.
WAIT_MS = 3000
#: The lifecycle calls the machine sends without a key.
ANONYMOUS_CALLS = ("list", "get", "patch", "delete", "create")
#: What a PATCH without a key asks for: a change every sandbox would show (its policy cleared, a port made public).
ANONYMOUS_PATCH: Json = {"network": None, "exposed_ports": [8080], "allow_unauthenticated_access": True}

# --- contracts --------------------------------------------------------------------------------------------

CONTRACTS: dict[str, Contract] = {}
_WIRE = "tensorlake-wire.md"

CREATE_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "create_answer",
    observed(
        (
            capture(
                "docs/sources/captures/tensorlake-sdk-0.5.161.txt",
                "# --- Sandbox.create(wait=False, name='q1', max_pending_secs=60)",
            ),
            published("tensorlake==0.5.163", "tensorlake/sandbox/client.py", 'payload["sandbox_id"],'),
        ),
        "POST /sandboxes answers a sandbox_id (not id) and a status of the eight; wait:false answers 202 pending",
        note=f"{_WIRE} §3, §4 (CreateSandboxResponse)",
    ),
    "A create is accepted with the model's status and answers a sandbox_id and a known status.",
)
DISTINCT_IDS = add_contract(
    CONTRACTS,
    SUITE,
    "distinct_ids",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- client.get(sid)"),
        "every call names its sandbox by id (GET, PATCH, DELETE /sandboxes/{id})",
        note=f"{_WIRE} §3",
    ),
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
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- client.list()"),
        'GET /sandboxes answers {"sandboxes": [SandboxInfo]} (a bare array fails)',
        note=f"{_WIRE} §3",
    ),
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
    observed(
        capture(
            "docs/sources/captures/tensorlake-sdk-0.5.161.txt",
            "# --- sandbox.update(name='renamed', auto_resume=False)",
        ),
        "PATCH /sandboxes/{id} answers the full SandboxInfo; {} and 204 fail the SDK",
        note=f"{_WIRE} §3, §5",
    ),
    "A well-formed PATCH (network absent, null or a policy; name, flags, ports) is accepted.",
)
TRANSITION_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "transition_answer",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.suspend(wait=False)"),
        "suspend and resume answer 200 once settled and 202 while moving; the SDK then polls",
        note=f"{_WIRE} §3",
    ),
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
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.run('echo', ['hi'])"),
        "/api/v1/processes/run must answer text/event-stream; no exit event fails the SDK",
        note=f"{_WIRE} §8",
    ),
    "A command run streams text/event-stream and ends with an exit event.",
)
RUN_STREAM_FRAMING = add_contract(
    CONTRACTS,
    SUITE,
    "run_stream_framing",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.run('echo', ['hi'])"),
        "the SDK reads standard SSE: each event a `data: <json>` frame ended by a blank line",
        note=f"{_WIRE} §8 and captures/tensorlake-sdk-0.5.161.txt (sandbox.run)",
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
ANONYMOUS_REFUSED = add_contract(
    CONTRACTS,
    SUITE,
    "anonymous_refused",
    spec("tl.auth.sdk-api-key"),
    "A lifecycle call without an Authorization header (list, GET, PATCH, DELETE, create) is refused with 401 or "
    "403 and changes nothing: the sandbox reads as before and no sandbox is created.",
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


class Steps:
    """Run the steps rules share: create, list, PATCH, transitions, commands in a sandbox."""

    def __init__(self, session: Session, answers: Answers, ingress: Ingress) -> None:
        self.session = session
        self.answers = answers
        self.ingress = ingress

    # -- lifecycle steps -----------------------------------------------------------------------------------

    def create(self, rule: str, body: Json) -> Any:
        wire = self.session.wire(body)
        expected, record = self.session.oracle.create(wire)
        response = self.session.send(rule, "POST", "/sandboxes", body=wire)
        self.session.book.listing_dirty = True
        data: Any = None
        if response.is_success:
            try:
                data = response.json()
            except ValueError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("sandbox_id"), str):
                self.session.book.stray.add(data["sandbox_id"])
        stricter = REQUEST_VALIDATION if spelled_loosely(wire) else None
        data = self.answers.check(rule, response, expected, CREATE_ANSWER, stricter=stricter)
        if self.session.book.diverged and record is not None:
            self.session.oracle.delete(record.id)  # the target refused it for a reason of its own: the model forgets it
            self.session.book.retired.add(record.id)
            return multiple()
        if record is None:
            stray = data.get("sandbox_id") if self.session.book.diverged and isinstance(data, dict) else None
            if isinstance(stray, str):
                self.session.client.delete(
                    f"/sandboxes/{stray}"
                )  # accepted for a reason of its own: it must not hold a name
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
            sandbox_id not in self.session.ids,
            rule,
            f"the new sandbox got the id of {self.session.ids.get(sandbox_id)!r}: {sandbox_id}",
        )
        handle = SandboxHandle(f"sb{len(self.session.book.handles) + 1}", sandbox_id, record.id)
        self.session.ids[sandbox_id] = record.id
        self.session.book.handles.append(handle)
        self.session.book.stray.discard(sandbox_id)
        self.session.policy_accepted(record.id)
        hold(
            CREATE_ANSWER,
            data.get("status") in STATUSES,
            rule,
            f"status {data.get('status')!r} is not a sandbox status",
        )
        if isinstance(data.get("ingress_endpoint"), str):
            self.session.book.ingress_endpoint = data["ingress_endpoint"]
        if isinstance(data.get("sandbox_url"), str):
            handle.sandbox_url = data["sandbox_url"]
        hold(
            URL_WHEN_RUNNING,
            data.get("status") != "running" or bool(data.get("sandbox_url")),
            rule,
            "a running sandbox without sandbox_url (the SDK cannot route to it)",
        )
        if self.session.strict:
            want = expected.body if isinstance(expected.body, dict) else {}
            hold(
                CREATE_ANSWER,
                data.get("status") == want.get("status"),
                rule,
                f"POST /sandboxes: {handle.alias} is {data.get('status')!r}, the model says {want.get('status')!r}",
            )
            actual = {k: v for k, v in data.items() if k not in URL_KEYS}
            actual["sandbox_id"] = self.session.id_of(sandbox_id)
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
            self.session.settle(handle)
        return handle

    def compare_listing(self, rule: str) -> None:
        expected = self.session.oracle.list()
        response = self.session.send(rule, "GET", "/sandboxes")
        data = self.answers.check(rule, response, expected, LISTING)
        items = data.get("sandboxes") if isinstance(data, dict) else None
        if not hold(
            LISTING, isinstance(items, list), rule, f"GET /sandboxes has no sandboxes list: {response.text[:300]!r}"
        ):
            return
        assert isinstance(items, list)
        retired = self.session.book.retired
        strays = {self.session.id_of(s) for s in self.session.book.stray}
        listed: dict[str, Json] = {}
        for item in items:
            problem = info_shape_problem(item)
            if not hold(SANDBOX_INFO_SHAPE, problem is None, rule, f"GET /sandboxes: unusable item: {problem}"):
                continue
            view = normalise_info(item, self.session.id_of)
            ident = str(view["id"])
            if ident in retired or ident in strays or (not self.session.strict and ident.startswith("unmapped:")):
                continue  # sandboxes whose state diverged, and (without the admin API) the account's others
            hold(LISTING, ident not in listed, rule, f"GET /sandboxes lists {self.session.alias(ident)} twice")
            self.answers.check_urls(rule, "GET /sandboxes", item)
            self.answers.check_history(rule, "GET /sandboxes", view)
            listed[ident] = view
        want = {str(v["id"]): v for v in expected.body if str(v["id"]) not in retired}
        live = {i for i, v in want.items() if v.get("status") != "terminated"}
        shown = {i for i, v in listed.items() if v.get("status") != "terminated"}
        missing = sorted(self.session.alias(i) for i in live - shown)
        extra = sorted(self.session.alias(i) for i in shown - live)
        hold(
            LISTING,
            not (missing or extra),
            rule,
            f"GET /sandboxes: missing {missing}, unexpected {extra} (the model's view)",
        )
        if self.session.strict:
            gone = sorted(self.session.alias(i) for i in set(want) ^ set(listed))
            hold(LISTING_EXACT, not gone, rule, f"GET /sandboxes: deleted sandboxes listed on one side only: {gone}")
        for ident in live & shown:
            self.answers.compare(rule, "GET /sandboxes", want[ident], listed[ident])

    def patch(self, rule: str, sb: SandboxHandle, wire: Json) -> None:
        expected = self.session.oracle.patch(sb.model_id, wire)
        before = self.answers.snapshot(rule, sb) if expected.status >= 400 else None
        response = self.session.send(rule, "PATCH", f"/sandboxes/{sb.target_id}", body=wire)
        stricter = REQUEST_VALIDATION if spelled_loosely(wire) else None
        data = self.answers.check(rule, response, expected, PATCH_ANSWER, stricter=stricter)
        self.session.book.listing_dirty = True
        if self.session.book.diverged:
            self.session.retire(sb)
            return
        if before is not None:
            self.answers.unchanged(rule, sb, before, REJECTED_UPDATE_KEEPS_STATE)
            return
        if "network" in wire:
            self.session.policy_accepted(sb.model_id)
        self.answers.observe(rule, response, data, expected.body)

    def anonymous(self, rule: str, sb: SandboxHandle, calls: Sequence[str]) -> None:
        """Send lifecycle calls without a key: each is refused as the model's key check refuses one, and ``sb``
        reads as before. A sandbox a create without a key made anyway is deleted before the check fails."""
        expected = self.session.oracle.anonymous()
        if expected is None:
            return
        before = self.answers.snapshot(rule, sb)
        path = f"/sandboxes/{sb.target_id}"
        requests: dict[str, tuple[str, str, Any]] = {
            "list": ("GET", "/sandboxes", ANY),
            "get": ("GET", path, ANY),
            "patch": ("PATCH", path, ANONYMOUS_PATCH),
            "delete": ("DELETE", path, ANY),
            "create": ("POST", "/sandboxes", {}),
        }
        for call in calls:
            method, url, body = requests[call]
            response = self.session.send(rule, method, url, body=body, anonymous=True)
            if call == "create":
                self.session.book.listing_dirty = True
                self.remove_created(rule, response)
            self.answers.check(rule, response, expected, ANONYMOUS_REFUSED, loose=(401, 403), refusal=ANONYMOUS_REFUSED)
            if self.session.book.diverged:
                self.session.retire(sb)
                return
        self.answers.unchanged(rule, sb, before, ANONYMOUS_REFUSED)

    def remove_created(self, rule: str, response: httpx.Response) -> None:
        """Delete the sandbox a create answered with (with the key, else as it was made: without one)."""
        data = json_body(response) if response.is_success else None
        sandbox_id = data.get("sandbox_id") if isinstance(data, dict) else None
        if not isinstance(sandbox_id, str):
            return
        self.session.book.stray.add(sandbox_id)
        url = f"/sandboxes/{sandbox_id}"
        if (
            self.session.send(rule, "DELETE", url).is_success
            or self.session.send(rule, "DELETE", url, anonymous=True).is_success
        ):
            self.session.book.stray.discard(sandbox_id)

    def current(self, rule: str, sb: SandboxHandle) -> Json | None:
        """GET a sandbox like the SDK does before changing its ports; None when the model says 404."""
        expected = self.session.oracle.get(sb.model_id)
        response = self.session.send(rule, "GET", f"/sandboxes/{sb.target_id}")
        data = self.answers.check(rule, response, expected, NOT_FOUND)
        if expected.status != 200:
            return None
        self.answers.observe(rule, response, data, expected.body)
        return data if isinstance(data, dict) else None

    def transition(self, rule: str, sb: SandboxHandle, action: str, wait: bool) -> None:
        wait_ms = WAIT_MS if wait else None
        predict = self.session.oracle.suspend if action == "suspend" else self.session.oracle.resume
        expected = predict(sb.model_id, wait_ms)
        before = self.answers.snapshot(rule, sb) if expected.status >= 400 else None
        params = {"wait_ms": str(wait_ms)} if wait_ms else None
        response = self.session.send(rule, "POST", f"/sandboxes/{sb.target_id}/{action}", params=params)
        loose = () if self.session.strict else (200, 202)
        data = self.answers.check(rule, response, expected, TRANSITION_ANSWER, loose=loose)
        self.session.book.listing_dirty = True
        if self.session.book.diverged:
            self.session.retire(sb)
        elif before is not None:
            self.answers.unchanged(rule, sb, before, REJECTED_TRANSITION_KEEPS_STATE)
        elif self.session.strict:
            self.answers.observe(rule, response, data, expected.body)
        else:
            self.session.settle(sb)

    # -- inside the sandbox: management API and egress probes ----------------------------------------------

    def management(self, sb: SandboxHandle) -> tuple[str, dict[str, str]]:
        """Return the management base URL and routing headers the SDK would use for ``sb``."""
        url = (sb.sandbox_url or str(self.session.client.base_url)).rstrip("/")
        if (urlsplit(url).hostname or "") in LOOPBACK:
            return url, {"host": f"{sb.target_id}.local"}
        return url, {"x-tensorlake-sandbox-id": sb.target_id}

    def run(self, rule: str, sb: SandboxHandle, command: str, args: list[str]) -> RunResult | None:
        """Run a command through the proxy; None when the model says the proxy refuses (checked)."""
        proxied = self.session.oracle.admit(sb.model_id, MANAGEMENT_PORT, self.session.key, {}, {})
        base, headers = self.management(sb)
        response = self.session.send(
            rule,
            "POST",
            base + "/api/v1/processes/run",
            body={"command": command, "args": args, "timeout": 30},
            headers={**headers, "accept": "text/event-stream"},
        )
        if proxied.woke and not self.session.strict:
            self.session.settle(sb)
            if response.status_code != 200:
                return None
        if proxied.expected is not None:
            self.answers.check(rule, response, proxied.expected, MANAGEMENT_API, refusal=INGRESS_ADMISSION)
            return None
        self.answers.check(rule, response, Expected(200), MANAGEMENT_API)
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

    def resolver(self, sb: SandboxHandle) -> str | None:
        """Return the sandbox's resolver from its ``/etc/resolv.conf`` (read once), None if unreachable."""
        known = self.session.book.resolvers.get(sb.model_id)
        if known is not None:
            return known
        result = self.run("egress_probe", sb, "cat", ["/etc/resolv.conf"])
        if result is None:
            return None
        resolver = resolver_from("\n".join(result.stdout))
        self.session.book.resolvers[sb.model_id] = resolver
        return resolver

    def probe(self, sb: SandboxHandle, policy: NetworkConfig | None, resolver: str, tool: str, host: str) -> bool:
        """Run one probe and compare it with the reference; False when the proxy refused (checked)."""
        args = ["hosts", host] if tool == "getent" else ["-s", "-m", "5", f"http://{host}/"]
        result = self.run("egress_probe", sb, tool, args)
        if result is None:
            return False
        want = expect_probe(policy, tool, host, resolver, self.session.oracle.resolve if self.session.strict else None)
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
        if not self.session.strict or want.exit_code is None:
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

    def connection_across_update(self, rule: str, sb: SandboxHandle, wire: Json) -> None:
        """Hold a WebSocket open to an exposed port while PATCHing the sandbox: it must stay open and answer."""
        record = self.session.oracle.lookup(sb.model_id)
        if not self.session.strict or record is None or record.status != "running" or not record.exposed_ports:
            self.patch(rule, sb, wire)
            return
        port = record.exposed_ports[0]
        proxied = self.session.oracle.admit(sb.model_id, port, self.session.key, {}, {})
        url, headers = self.ingress.ingress_url(sb.target_id, port, "/sandproof/echo")
        headers["authorization"] = f"Bearer {self.session.key}"
        where = f"a WebSocket to port {port} of {sb.alias}"
        try:
            ws = self.ingress.open_websocket(url, headers, {})
        except (OSError, WebSocketException) as exc:
            hold(
                WEBSOCKET_UPGRADE,
                proxied.expected is not None,
                rule,
                f"{where} was refused ({type(exc).__name__}: {exc})",
            )
            self.patch(rule, sb, wire)
            return
        with ws:
            opened = hold(WEBSOCKET_UPGRADE, proxied.expected is None, rule, f"{where} opened; the proxy refuses it")
            self.patch(rule, sb, wire)
            after = self.session.oracle.lookup(sb.model_id)
            if (
                opened
                and after is not None
                and after.status == "running"
                and sb.model_id not in self.session.book.retired
            ):
                hold(
                    UPDATE_KEEPS_CONNECTION,
                    self.ingress.echoes(ws, "after-update"),
                    rule,
                    f"{where} no longer answers after PATCH {json.dumps(wire)[:200]}",
                )
