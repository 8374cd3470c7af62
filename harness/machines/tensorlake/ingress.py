"""The TensorLake API machine's ingress steps: proxied requests, HTTP and WebSocket, with each kind of credentials.

Each request is checked against :meth:`Oracle.admit <harness.machines.tensorlake.oracle.Oracle.admit>`: the
proxy forwards or refuses it as the model's proxy does (exposure, public access, bearer keys, session cookies
with and without the project query, the wake of a suspended sandbox). With the admin API the machine also
checks what reaches the sandbox's echo app (its sandbox and port, path and query kept, the platform cookie
and the project key removed) and opens a WebSocket with the same credentials, which must open and echo
exactly when the HTTP request is forwarded and whose handshake reaches the app with the same headers removed;
a real deployment has no app on its user ports.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection, connect

from harness.machines.common import add_contract, hold
from harness.machines.tensorlake.answers import Answers
from harness.machines.tensorlake.compare import Expected
from harness.machines.tensorlake.driver import ADMIN_API, LOOPBACK, SUITE, SandboxHandle, Session
from harness.machines.tensorlake.oracle import Proxied
from harness.strength import Contract, choice, observed, spec
from harness.strength.observations import capture, published
from mockserver.tensorlake.model import MANAGEMENT_PORT, SESSION_COOKIES
from mockserver.tensorlake.model.auth import parse_cookies
from mockserver.tensorlake.routes.echo import REQUEST_MESSAGE

__all__ = ["CONTRACTS", "INGRESS_ADMISSION", "WEBSOCKET_UPGRADE", "Ingress"]

OTHER_KEY = "sandproof-other-key"
DEFAULT_INGRESS_DOMAIN = "sandbox.localhost"
ORGANIZATION, PROJECT = "org_sandproof", "proj_sandproof"
#: Seconds a WebSocket may take to open or answer.
WS_TIMEOUT = 10.0
#: Refusal statuses of the proxy that mean the same (which one is sandproof's choice).
PROXY_REFUSALS = (401, 403, 404)

#: The contracts this module checks, by name.
CONTRACTS: dict[str, Contract] = {}
_WIRE = "tensorlake-wire.md"

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
    observed(
        (
            capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.health()"),
            published("tensorlake==0.5.163", "tensorlake/sandbox/models.py", 'HEALTHY = "healthy"'),
        ),
        'GET /api/v1/health on the management API answers {"healthy": bool}',
        note=f"{_WIRE} §8",
    ),
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


class Ingress:
    """Send proxied requests (HTTP and WebSocket) with each kind of credentials and check them."""

    def __init__(self, session: Session, answers: Answers) -> None:
        self.session = session
        self.answers = answers

    # -- ingress ---------------------------------------------------------------------------------------------

    def session_token(self) -> str:
        """Return a valid session token (minted through the admin API), or a bogus one without it."""
        if self.session.config.admin is None:
            return "sandproof-bogus-session"
        if self.session.book.session is None:
            body = {"api_key": self.session.key, "organization_id": ORGANIZATION, "project_id": PROJECT}
            response = self.session.client.post("/_mock/tensorlake/sessions", json=body)
            if not hold(
                ADMIN_API,
                response.status_code == 201,
                "ingress",
                f"the admin API did not issue a session: {response.text[:200]!r}",
            ):
                return "sandproof-bogus-session"  # the oracle knows no session either: both refuse it
            token = str(response.json()["token"])
            self.session.oracle.add_session(token, body)
            self.session.book.session = token
        return self.session.book.session

    def credentials(self, auth: str) -> tuple[str | None, dict[str, str], dict[str, str]]:
        """Return (bearer key, cookies, query) for an ingress auth mode."""
        cookies = {"app": "1"}
        query = {"x": "1"}
        project = {"organizationId": ORGANIZATION, "projectId": PROJECT}
        if auth == "key":
            return self.session.key, {**cookies, SESSION_COOKIES[0]: "stale"}, query
        if auth == "other-key":
            return OTHER_KEY, cookies, query
        if auth == "session":
            return None, {SESSION_COOKIES[0]: self.session_token(), **cookies}, {**query, **project}
        if auth == "legacy-session":
            return None, {**cookies, SESSION_COOKIES[1]: self.session_token()}, {**query, **project}
        if auth == "session-no-project":
            return None, {**cookies, SESSION_COOKIES[0]: self.session_token()}, query
        return None, cookies, query

    def ingress_url(self, label: str, port: int, path: str) -> tuple[str, dict[str, str]]:
        endpoint = urlsplit(self.session.book.ingress_endpoint or "")
        domain = endpoint.hostname or DEFAULT_INGRESS_DOMAIN
        host = label if port == MANAGEMENT_PORT else f"{port}-{label}"
        base = str(self.session.client.base_url).rstrip("/")
        parts = urlsplit(base)
        if (parts.hostname or "") in LOOPBACK:
            suffix = f":{endpoint.port or parts.port}" if (endpoint.port or parts.port) else ""
            return base + path, {"host": f"{host}.{domain}{suffix}"}
        return f"{endpoint.scheme or parts.scheme}://{host}.{domain}{path}", {}

    def ingress_once(self, sb: SandboxHandle, port: int, auth: str, by_name: bool) -> bool:
        """Send one proxied request (and a WebSocket) and check them; False when the sandbox is gone or unknowable."""
        record = self.session.oracle.lookup(sb.model_id)
        named = by_name and record is not None and record.name is not None
        label_model = record.name if named and record is not None and record.name else sb.model_id
        label_target = label_model if named else sb.target_id
        key, cookies, query = self.credentials(auth)
        proxied = self.session.oracle.admit(label_model, port, key, cookies, query)
        path = "/api/v1/health" if port == MANAGEMENT_PORT else "/sandproof/echo"
        url, headers = self.ingress_url(label_target, port, path)
        headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
        response = self.session.send("ingress", "GET", url, params=query, headers=headers, anonymous=True)
        if proxied.woke and not self.session.strict:
            self.session.settle(sb)
            return False
        where = f"{auth} request for port {port} of {sb.alias}{' by name' if named else ''}"
        if proxied.expected is not None:
            self.answers.check(
                "ingress",
                response,
                proxied.expected,
                INGRESS_ADMISSION,
                loose=PROXY_REFUSALS,
                refusal=INGRESS_ADMISSION,
            )
            if self.session.strict and port != MANAGEMENT_PORT:
                self.websocket_once(where, label_model, port, url, headers, query)
            return record is not None
        if not self.session.strict:
            hold(
                INGRESS_ADMISSION,
                response.status_code not in PROXY_REFUSALS,
                "ingress",
                f"{where} was refused ({response.status_code}); it must pass",
                f"GET {url} -> {response.status_code}: {response.text[:300]}",
            )
            return True
        data = self.answers.check("ingress", response, Expected(200), INGRESS_ADMISSION)
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
        self.check_echo(where, sb, port, path, query, headers, proxied, data)
        self.websocket_once(where, label_model, port, url, headers, query)
        return True

    def check_echo(
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
        forwarded = self.session.oracle.forwarded(headers, proxied.admission)
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

    def open_websocket(self, url: str, headers: Mapping[str, str], query: Mapping[str, str]) -> ClientConnection:
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

    def websocket_once(
        self, where: str, label: str, port: int, url: str, headers: Mapping[str, str], query: Mapping[str, str]
    ) -> None:
        """Open a WebSocket with the HTTP request's credentials: it opens and echoes exactly when the proxy forwards."""
        key = headers.get("authorization", "").removeprefix("Bearer ") or None
        proxied = self.session.oracle.admit(label, port, key, parse_cookies(headers.get("cookie")), query)
        if proxied.woke:
            return  # the HTTP request should have woken it already: the two disagree, which the states show
        try:
            ws = self.open_websocket(url, headers, query)
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
            hold(WEBSOCKET_UPGRADE, self.echoes(ws, "sandproof"), "ingress", f"{where}: the WebSocket does not echo")
            if self.session.strict and proxied.admission is not None:
                self.check_handshake(f"{where} (WebSocket)", ws, headers, proxied)

    def check_handshake(self, where: str, ws: ClientConnection, headers: Mapping[str, str], proxied: Proxied) -> None:
        """Check what reached the echo app with the WebSocket handshake: the cookies and Authorization the
        model's proxy passes on (the session cookie and the project key removed), as for an HTTP request."""
        try:
            ws.send(REQUEST_MESSAGE)
            data = json.loads(ws.recv(timeout=WS_TIMEOUT))
        except (OSError, TimeoutError, WebSocketException, ValueError) as exc:
            hold(WEBSOCKET_UPGRADE, False, "ingress", f"{where}: the echo app did not report the handshake: {exc}")
            return
        seen = data.get("headers") if isinstance(data, dict) else None
        if not hold(WEBSOCKET_UPGRADE, isinstance(seen, dict), "ingress", f"{where}: the echo app answered {data!r}"):
            return
        assert isinstance(seen, dict) and proxied.admission is not None
        forwarded = self.session.oracle.forwarded(
            {k: v for k, v in headers.items() if k != "host" and v}, proxied.admission
        )
        kept = parse_cookies(forwarded.get("cookie"))
        hold(
            COOKIE_STRIPPED,
            parse_cookies(seen.get("cookie")) == kept,
            "ingress",
            f"{where}: the sandbox received cookies {seen.get('cookie')!r}; expected {kept!r}",
        )
        if proxied.strips_key is not None:
            hold(
                PROJECT_KEY_STRIPPED,
                seen.get("authorization") == forwarded.get("authorization"),
                "ingress",
                f"{where}: the sandbox received Authorization {seen.get('authorization')!r}; "
                f"expected {forwarded.get('authorization')!r}",
            )

    @staticmethod
    def echoes(ws: ClientConnection, message: str) -> bool:
        """Tell whether the echo app answers ``message`` on ``ws``."""
        try:
            ws.send(message)
            return ws.recv(timeout=WS_TIMEOUT) == message
        except (OSError, TimeoutError, WebSocketException):
            return False
