"""The OpenSandbox machine's proxy-header rule: what a sandbox's app receives through the server proxy.

:class:`ProxyRules` sends a request (HTTP, or a WebSocket handshake) through ``/v1/sandboxes/{id}/proxy/{port}/``
or the bare ``/sandboxes/{id}/proxy/{port}/`` with the caller's credentials, spoofed forwarding headers, a
header its ``Connection`` header names and a marker header, to :data:`APP_PORT` of a running sandbox. When the
app there reports the request it received (sandproof's echo app: the emulator's, or any app answering the same
JSON, ``{"headers": {...}}``; over a WebSocket in answer to the message ``sandproof:request``), the headers must
be what the real server's proxy passes on, as :func:`mockserver.opensandbox.model.forwarding.proxy_headers`
computes them: the request's own headers, minus the credentials, hop-by-hop and forwarding headers, plus
``X-Forwarded-Proto/-Host/-For`` rebuilt from the connection. The connection's scheme and peer address are what
the server saw, so the check takes them from the answer and requires only their shape: a scheme, one address
(uvicorn, the real server's and the mock's, trusts ``X-Forwarded-For`` from a loopback peer and keeps its last
address; a list passed on verbatim is the spoof the rule prevents).

Where nothing behind the port reports its request (a real server whose sandbox runs no such app: 502, or another
answer), the rule checks nothing; ``harness/contracts/test_opensandbox_api.py`` then skips the ``proxy-headers``
operation with that reason.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect

from harness.machines.common import add_contract, hold, json_body
from harness.machines.opensandbox.driver import SUITE, SandboxHandle
from harness.machines.opensandbox.driver import when_enabled as _on
from harness.machines.opensandbox.execd_rules import ExecdRules
from harness.strength import Contract, observed
from harness.strength.observations import published
from mockserver.opensandbox.model.forwarding import CONNECTION_HEADERS, proxy_headers
from mockserver.opensandbox.routes.echo import REQUEST_MESSAGE

__all__ = [
    "APP_PORT",
    "CONTRACTS",
    "HANDSHAKE",
    "NOTHING_BEHIND",
    "PROXY_HEADERS",
    "REQUEST_MESSAGE",
    "ProxyRules",
    "forwarding_problems",
    "spoofed_headers",
]

#: The sandbox port the rule reaches (the SDK docs' example app port).
APP_PORT = 8080
#: Why the rule checked nothing, for the skip.
NOTHING_BEHIND = (
    f"no app behind port {APP_PORT} of the target's sandboxes reports the request it received "
    "(sandproof's echo app does), so what the proxy forwards cannot be seen"
)
#: Seconds a WebSocket may take to open or answer.
WS_TIMEOUT = 10.0
#: Headers the hop to the app adds or rewrites by itself (the upstream client's own), never judged.
_TRANSPORT = CONNECTION_HEADERS | {"host", "content-length"}
#: The WebSocket handshake's own headers: the proxy's upstream handshake makes fresh ones.
HANDSHAKE = frozenset(
    {"origin", "sec-websocket-extensions", "sec-websocket-key", "sec-websocket-protocol", "sec-websocket-version",
     "user-agent"}
)  # fmt: skip

CONTRACTS: dict[str, Contract] = {}
_SOURCE = (
    "opensandbox-server 1.1.1 source, opensandbox_server/api/proxy.py (harness/specs/opensandbox/server-proxy-1.1.1.txt), "
    "and the real server's proxy in front of an echo app (tests/harness/differential/test_real_proxy_headers.py)"
)

PROXY_HEADERS = add_contract(
    CONTRACTS,
    SUITE,
    "proxy_headers",
    observed(
        published(
            "opensandbox-server==1.1.1",
            "opensandbox_server/api/proxy.py",
            "set(HOP_BY_HOP_HEADERS) | set(SENSITIVE_HEADERS) | set(FORWARDED_HEADERS) | PROXY_CONTROL_HEADERS",
        ),
        "_filter_proxy_headers drops Authorization, Cookie, OPEN-SANDBOX-API-KEY, OpenSandbox-Secure-Access, the "
        "hop-by-hop and Connection-named headers, Host and every client-sent Forwarded/X-Forwarded-*/X-Real-IP; "
        "_set_forwarded_headers then sets X-Forwarded-Proto, -Host and -For from the connection, for HTTP and "
        "WebSocket alike",
        note=_SOURCE,
        sentences=(
            "os.proxy.api-key-header",
            "os.proxy.secure-access-header",
            "os.proxy.sensitive",
            "os.proxy.forwarded",
            "os.proxy.excluded",
            "os.proxy.rebuilt",
            "os.proxy.http-and-websocket",
            "os.proxy.websocket",
        ),
    ),
    "A sandbox's app behind the server proxy (both proxy paths, HTTP and WebSocket) receives none of the caller's "
    "credentials or spoofed forwarding headers, its other headers unchanged, and X-Forwarded-* from the connection.",
)


def spoofed_headers(token: str) -> dict[str, str]:
    """Return the headers the rule adds to its request: credentials, forwarding spoofs and a marker."""
    return {
        "Authorization": f"Bearer sandproof-{token}",
        "Cookie": f"sandproof={token}",
        "OpenSandbox-Secure-Access": f"sandproof-{token}",
        "OpenSandbox-Access-Renew": "skip",
        "Forwarded": "for=198.51.100.7;proto=https",
        "X-Forwarded-For": "198.51.100.7, 198.51.100.8",
        "X-Forwarded-Host": "spoofed.example",
        "X-Forwarded-Port": "4443",
        "X-Real-IP": "198.51.100.7",
        "X-Sandproof-Probe": token,
    }


def _one_address(text: str | None) -> bool:
    try:
        ipaddress.ip_address(str(text).strip())
    except ValueError:
        return False
    return True


def forwarding_problems(
    sent: Mapping[str, str], seen: Mapping[str, str], ignored: frozenset[str] = frozenset()
) -> list[str]:
    """Return how the headers an app ``seen`` differ from the model's forwarding of the headers ``sent``.

    Both map lowercase names to values. The connection's scheme and address are taken from what the app saw
    (``X-Forwarded-Proto``, ``X-Forwarded-For``), whose shape alone is checked; the hop's own headers
    (``Host``, ``Connection``, ``Content-Length``...) and ``ignored`` are not judged.
    """
    proto, client = seen.get("x-forwarded-proto"), seen.get("x-forwarded-for")
    problems = []
    if proto not in ("http", "https"):
        problems.append(f"X-Forwarded-Proto is {proto!r}")
    if not _one_address(client):
        problems.append(f"X-Forwarded-For is {client!r}, not the one address of the connection")
    pairs = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in sent.items()]
    rebuilt = proxy_headers(pairs, proto or "http", client if _one_address(client) else None)
    want = {k.decode("latin-1"): v.decode("latin-1") for k, v in rebuilt}
    for name in sorted((set(sent) | set(want)) - ignored - _TRANSPORT):
        expected, got = want.get(name), seen.get(name)
        if got == expected:
            continue
        if expected is None:
            problems.append(f"the app received {name}: {got!r}; the proxy drops it")
        else:
            problems.append(f"the app received {name}: {got!r}; the proxy passes {expected!r}")
    return problems


class ProxyRules(ExecdRules):
    """Send requests with credentials and spoofed headers through the server proxy to a sandbox's app port."""

    sandboxes = ExecdRules.sandboxes

    def _app_report(self, data: Any) -> dict[str, str] | None:
        """Return the headers an echo app reports it received, or None when the answer is no such report."""
        if not isinstance(data, dict) or not isinstance(data.get("headers"), dict):
            return None
        return {str(k).lower(): str(v) for k, v in data["headers"].items()}

    def _judge_forwarded(
        self, where: str, sent: Mapping[str, str], seen: Mapping[str, str], ignored: frozenset[str]
    ) -> None:
        """Hold the contract on what the app received against the model's forwarding of what was sent."""
        evidence = f"sent {dict(sent)!r}; the app received {dict(seen)!r}"
        problems = forwarding_problems(sent, seen, ignored)
        for problem in problems:
            hold(PROXY_HEADERS, False, "proxy_headers", f"{where}: {problem}", evidence)
        if not problems:
            hold(PROXY_HEADERS, True, "proxy_headers", "")

    def _proxy_http(self, sb: SandboxHandle, path: str, token: str) -> bool:
        """Send one HTTP request through the proxy; judge it when the app reports it; True when it did."""
        headers = {**spoofed_headers(token), "Connection": "keep-alive, X-Sandproof-Hop", "X-Sandproof-Hop": token}
        response = self._send("proxy_headers", "GET", path + "/sandproof/echo?probe=1", headers=headers)
        seen = self._app_report(json_body(response)) if response.status_code == 200 else None
        if seen is None:
            return False
        sent = {k.lower(): v for k, v in response.request.headers.items()}
        self._judge_forwarded(f"GET {path}/sandproof/echo", sent, seen, frozenset())
        return True

    def _proxy_websocket(self, sb: SandboxHandle, path: str, token: str) -> bool:
        """Open a WebSocket through the proxy; judge the handshake the app reports; True when it did."""
        base = urlsplit(str(self.client.base_url).rstrip("/"))
        scheme = "wss" if base.scheme == "https" else "ws"
        url = f"{scheme}://{base.netloc}{base.path}{path}/sandproof/socket"
        own = {k: v for k, v in self.client.headers.items() if k.lower() == "open-sandbox-api-key"}
        headers = {**own, **spoofed_headers(token)}
        try:
            with connect(url, additional_headers=headers, open_timeout=WS_TIMEOUT, close_timeout=WS_TIMEOUT) as ws:
                sent = {k.lower(): v for k, v in ws.request.headers.raw_items()} if ws.request else {}
                ws.send(REQUEST_MESSAGE)
                answer = ws.recv(timeout=WS_TIMEOUT)
        except (WebSocketException, OSError, TimeoutError):
            return False
        try:
            seen = self._app_report(json.loads(answer))
        except ValueError:
            return False
        if seen is None:
            return False
        self._judge_forwarded(f"WebSocket {path}/sandproof/socket", sent, seen, HANDSHAKE)
        return True

    @precondition(_on("proxy_headers"))
    @rule(sb=sandboxes, bare=st.booleans(), websocket=st.booleans())
    def proxy_headers(self, sb: SandboxHandle, bare: bool, websocket: bool) -> None:
        """Reach a running sandbox's app port through the server proxy and check the headers the app received."""
        record = self.oracle.lookup(sb.model_id)
        if record is None or record.state != "Running":
            return
        path = f"{'' if bare else '/v1'}/sandboxes/{sb.target_id}/proxy/{APP_PORT}"
        token = secrets.token_hex(6)
        if websocket:
            self._proxy_websocket(sb, path, token)
        else:
            self._proxy_http(sb, path, token)
