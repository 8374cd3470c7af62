"""The TensorLake API machine's steps: the multi-request procedures its rules are made of.

Creating a sandbox and mapping its id, comparing the listing, PATCHing with a rollback check, suspending and
resuming; running commands through the proxy's management API (egress probes judged by
:func:`~harness.machines.tensorlake.probes.expect_probe`); and ingress requests with each kind of credentials,
checked against :meth:`Oracle.admit <harness.machines.tensorlake.oracle.Oracle.admit>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hypothesis.stateful import multiple

from contracts.tensorlake import NetworkConfig
from harness.machines.tensorlake.compare import (
    URL_KEYS,
    ContractViolation,
    Expected,
    Json,
    diff,
    info_shape_problem,
    normalise_info,
)
from harness.machines.tensorlake.driver import LOOPBACK, MachineBase, SandboxHandle
from harness.machines.tensorlake.oracle import Proxied
from harness.machines.tensorlake.probes import RunResult, expect_probe, parse_sse
from mockserver.tensorlake.model import MANAGEMENT_PORT, SESSION_COOKIES
from mockserver.tensorlake.model.auth import parse_cookies
from mockserver.tensorlake.model.gate import resolver_from
from mockserver.tensorlake.model.records import STATUSES

__all__ = ["MachineSteps"]

OTHER_KEY = "sandproof-other-key"
DEFAULT_INGRESS_DOMAIN = "sandbox.localhost"
ORGANIZATION, PROJECT = "org_sandproof", "proj_sandproof"
#: The ``?wait_ms=`` a waiting suspend or resume sends.
WAIT_MS = 3000


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

    def _transition(self, rule: str, sb: SandboxHandle, action: str, wait: bool) -> None:
        wait_ms = WAIT_MS if wait else None
        predict = self.oracle.suspend if action == "suspend" else self.oracle.resume
        expected = predict(sb.model_id, wait_ms)
        before = self._snapshot(rule, sb) if expected.status >= 400 else None
        params = {"wait_ms": str(wait_ms)} if wait_ms else None
        response = self._send(rule, "POST", f"/sandboxes/{sb.target_id}/{action}", params=params)
        data = self._check(rule, response, expected, loose=(200, 202))
        self.book.listing_dirty = True
        if before is not None:
            self._unchanged(rule, sb, before)
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
            self._check(rule, response, proxied.expected)
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
            body = {"api_key": self.key, "organization_id": ORGANIZATION, "project_id": PROJECT}
            response = self.client.post("/_mock/tensorlake/sessions", json=body)
            if response.status_code != 201:
                raise ContractViolation("ingress", f"the admin API did not issue a session: {response.text[:200]!r}")
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
        """Send one proxied request and check it; False when the sandbox is gone or the outcome is unknowable."""
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
            self._check("ingress", response, proxied.expected)
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
        self._check_echo(where, sb, port, path, query, headers, proxied, data)
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
        if not isinstance(data, dict):
            raise ContractViolation("ingress", f"{where}: the port app answered {data!r}")
        for key, want in (("sandbox_id", sb.target_id), ("port", port), ("path", path)):
            if data.get(key) != want:
                raise ContractViolation("ingress", f"{where}: the sandbox saw {key}={data.get(key)!r}, not {want!r}")
        got_query = {k: v[-1] for k, v in parse_qs(str(data.get("query", ""))).items()}
        if got_query != dict(query):
            raise ContractViolation("ingress", f"{where}: the query reached the sandbox as {got_query!r}")
        assert proxied.admission is not None
        forwarded = self.oracle.forwarded(headers, proxied.admission)
        kept = parse_cookies(forwarded.get("cookie"))
        if data.get("cookies") != kept:
            raise ContractViolation(
                "ingress", f"{where}: the sandbox received cookies {data.get('cookies')!r}; expected {kept!r}"
            )
        seen = data["headers"] if isinstance(data.get("headers"), dict) else {}
        if proxied.strips_key is not None and seen.get("authorization") != forwarded.get("authorization"):
            raise ContractViolation(
                "ingress",
                f"{where}: the sandbox received Authorization {seen.get('authorization')!r}; "
                f"expected {forwarded.get('authorization')!r}",
            )
