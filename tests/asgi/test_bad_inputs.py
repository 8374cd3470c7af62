"""The bad-input table: every route of both mocks, fed text that is not Unicode, non-finite numbers, huge paths,
cut bodies and undecodable bytes, answers without a 5xx or a hang and leaves nothing it cannot show.

The routes come from the mocks' own apps (:mod:`.route_tables`), so a new route is in the table at once. For
each route the classes that apply are sent, one request each, on a fresh sandbox:

* **body** (routes of a method with a body that parse JSON, found by sending ``{``): a lone surrogate in a
  value, in a key and an array (escaped), as raw UTF-8 bytes; ``NaN``, ``-Infinity`` and ``1e999``. Each must be a 4xx that changes nothing: none of them can be kept (spec: RFC 8259 has no
  non-finite numbers, and JSON text is Unicode, RFC 8259 §8.2);
* **cut body** (every route of a method with a body): the client sends part of a ``Content-Length`` or a
  chunked body and closes its side. The connection must end (a 4xx or closed) without waiting, and the
  state stay as it was;
* **path parameter**: each parameter replaced by the UTF-8 bytes of a surrogate and ``%FF``, and by a
  5,000-byte name;
* **query**: ``path`` set to a surrogate's bytes and ``%FF``, and to 10,000 components; a files or
  directories route must refuse the last (ENAMETOOLONG, as the kernel would): TensorLake with a 4xx,
  OpenSandbox with execd's documented 500 ``RUNTIME_ERROR``, as real execd reports every OS error;
* **header**: a header of undecodable bytes.

Every answer is below 500 (501 is a documented route the mock does not serve), every refusal leaves the state
(the mock's snapshot) exactly as it was, and after every request the snapshot is still encodable as UTF-8
JSON: nothing the service would then fail to show was stored. The table runs on the emulator, and on
``--runtime linux`` where the runtime can run, for the routes that reach a sandbox's files and processes
(OpenSandbox's through the direct endpoint; there, of the body classes, one surrogate and ``NaN``: a body is refused by the same parser before any
runtime code, and a linux snapshot reads the sandbox's files, so each request costs more).

The requests are ASGI calls on the app (a cut body: its first part, then ``http.disconnect``, as uvicorn
hands on a connection closed mid-body); :func:`test_a_cut_body_over_a_socket_ends_the_connection` checks
the same over a real socket.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import httpx
import pytest
from starlette.types import Message

from mockserver.core import jsontext
from mockserver.core.clock import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.sandbox import filesystem
from mockserver.service import HttpMock
from mockserver.tensorlake import TensorLakeMock

from .route_tables import PARAM, fill, leaves, starlettes

WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})
TL_KEY = {"authorization": "Bearer sandproof-key"}
OSB_CREATE = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep", "infinity"], "resourceLimits": {}}
OSB_CREATE["networkPolicy"] = {"defaultAction": "deny", "egress": []}

#: (name, raw JSON body): each must be refused with a 4xx by a route that parses JSON.
BODIES: list[tuple[str, bytes]] = [
    ("surrogate in a value", b'{"name": "\\ud800", "image": {"uri": "\\ud800"}, "path": "\\ud800"}'),
    ("surrogates in a key and an array", b'{"\\udfff": ["ok", "\\ud800\\ud800"], "metadata": {"\\ud800": "v"}}'),
    ("surrogate as raw UTF-8", b'{"name": "\xed\xa0\x80", "command": "echo \xed\xb0\x80"}'),
    ("NaN", b'{"timeout": NaN, "signal": NaN}'),
    ("-Infinity", b'[{"timeout": -Infinity}]'),
    ("1e999", b'{"timeout": 1e999}'),
]
HUGE_PATH = "/tmp/" + "a/" * 10_000 + "f"
#: (name, query value already percent-encoded).
QUERIES = [("surrogate and undecodable bytes", "/tmp/%ED%A0%80%FF"), ("10,000 components", HUGE_PATH)]
#: (name, path-parameter value already percent-encoded).
SEGMENTS = [("surrogate and undecodable bytes", "%ED%A0%80%FF"), ("5,000-byte name", "a" * 5_000)]
FILE_ROUTE = re.compile(r"/(files|directories)\b")


@dataclass(frozen=True)
class Endpoint:
    """One method of one route, and whether it is reached through a sandbox's Host (TensorLake's management)."""

    method: str
    template: str
    in_sandbox: bool = False

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _tensorlake_endpoints() -> list[Endpoint]:
    found: list[Endpoint] = []
    for app in starlettes(TensorLakeMock().app):
        in_sandbox = any(getattr(r, "path", "").startswith("/api/v1/") for r in app.routes)
        found += [Endpoint(m, t, in_sandbox) for m, t in leaves(app.routes)]
    return found


def _opensandbox_endpoints() -> list[Endpoint]:
    return [Endpoint(m, t) for app in starlettes(OpenSandboxMock().app) for m, t in leaves(app.routes)]


ENDPOINTS = {"tensorlake": _tensorlake_endpoints(), "opensandbox": _opensandbox_endpoints()}


def _reaches_runtime(provider: str, endpoint: Endpoint) -> bool:
    """Tell whether a route works on a sandbox's files or processes (what the linux runtime serves).

    OpenSandbox's execd and sidecar routes are reached three ways (``/direct/{id}/{port}`` and the server
    proxy with and without ``/v1``) that hand the request to the same service: the linux run takes the direct one.
    """
    if provider == "tensorlake":
        return endpoint.in_sandbox
    return bool(re.match(r"/direct/\{sandbox_id\}/(44772|18080)/", endpoint.template))


def _table() -> Iterator[Any]:
    for provider, endpoints in ENDPOINTS.items():
        for endpoint in endpoints:
            yield pytest.param(provider, "emulator", endpoint, id=f"emulator {provider} {endpoint}")
            if _reaches_runtime(provider, endpoint):
                marks = [pytest.mark.runtime("linux")]
                yield pytest.param(provider, "linux", endpoint, id=f"linux {provider} {endpoint}", marks=marks)


@dataclass
class Served:
    """A served mock, a client, and the sandbox the cases use (fresh per route on the emulator)."""

    provider: str
    runtime: str
    mock: HttpMock
    loop: asyncio.AbstractEventLoop
    client: httpx.AsyncClient
    sandbox_id: str = ""
    checked: dict[str, int] = field(default_factory=dict)
    last: Any = None  # the state after the last request

    def fresh(self) -> dict[str, str]:
        """Start a route's cases: the emulator from a reset with one new sandbox; linux keeps its one sandbox."""
        if self.runtime == "emulator" or not self.sandbox_id:
            if self.runtime == "emulator":
                self.mock.reset()
            self.sandbox_id = self._create()
        sid = self.sandbox_id
        self.last = self.state()
        return {"sid": sid, "sandbox_id": sid, "ns": "default", "stream": "stdout", "ref": "1", "rule_id": "1"}

    def run(self, call: Coroutine[Any, Any, Any]) -> Any:
        """Run one call to the app on this mock's loop; a hang fails after 20 s instead of passing."""
        return self.loop.run_until_complete(asyncio.wait_for(call, 20))

    def _create(self) -> str:
        """Create a sandbox and list its root once, so that a sandbox's files built on first use are there."""
        if self.provider == "tensorlake":
            created = self.run(self.client.post("/sandboxes", json={}, headers=TL_KEY))
            assert created.status_code == 200, created.text
            sid = str(created.json()["sandbox_id"])
            host = {**TL_KEY, "host": f"{sid}.sandbox.localhost"}
            listed = self.run(self.client.get("/api/v1/files/list", params={"path": "/"}, headers=host))
        else:
            created = self.run(self.client.post("/v1/sandboxes", json=OSB_CREATE))
            assert created.status_code == 202, created.text
            sid = str(created.json()["id"])
            listed = self.run(self.client.get(f"/direct/{sid}/44772/directories/list", params={"path": "/"}))
        assert listed.status_code == 200, listed.text
        return sid

    def headers(self, endpoint: Endpoint) -> dict[str, str]:
        """Return the headers that reach the route (TensorLake's key; its sandbox's Host for management)."""
        if self.provider == "opensandbox":
            return {}
        return {**TL_KEY, "host": f"{self.sandbox_id}.sandbox.localhost"} if endpoint.in_sandbox else TL_KEY

    def state(self) -> Any:
        """Return the mock's state as its snapshot shows it (the clock apart: a linux mock's runs on)."""
        snapshot = self.mock.snapshot()
        json.dumps(snapshot, ensure_ascii=False, allow_nan=False).encode("utf-8")  # raises if poisoned
        return {"dns": snapshot["dns"], "state": snapshot["state"]}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[tuple[str, str], Served]]:
    """Serve each (provider, runtime) on first use; close all at the end of the module."""
    made: dict[tuple[str, str], Served] = {}
    yield made
    for served in made.values():
        served.run(served.client.aclose())
        close: Callable[[], None] | None = getattr(served.mock, "close", None)
        if close is not None:
            close()
        served.loop.close()
    counts = [f"{k[0]}/{k[1]}: {sum(s.checked.values())}" for k, s in made.items()]
    print("bad-input requests sent:", ", ".join(counts))


def _served(servers: dict[tuple[str, str], Served], provider: str, runtime: str) -> Served:
    key = (provider, runtime)
    if key not in servers:
        clock = VirtualClock("manual") if runtime == "emulator" else None
        mock: HttpMock
        if provider == "tensorlake":
            mock = TensorLakeMock(seed=11, clock=clock, runtime=runtime)  # type: ignore[arg-type]
        else:
            mock = OpenSandboxMock(seed=11, clock=clock, runtime=runtime)  # type: ignore[arg-type]
        loop = asyncio.new_event_loop()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=mock.app), base_url="http://testserver")
        servers[key] = Served(provider, runtime, mock, loop, client)
    return servers[key]


def _check(
    served: Served,
    what: str,
    send: Callable[[], int | None],
    *,
    refuse: bool = False,
    gateway: bool = False,
    os_error: bool = False,
) -> int | None:
    """Send one bad request; check no 5xx, a refusal where ``refuse``, the state unchanged by one, none poisoned.

    ``gateway``: the request names a sandbox endpoint that does not exist, whose documented answer is the
    gateway's 502 (OpenSandbox's direct endpoint: nothing listens at the address of no sandbox).
    ``os_error``: the refusal may be execd's documented 500 ``RUNTIME_ERROR`` for what the kernel refuses.
    """
    before = served.last
    status = send()
    after = served.last = served.state()
    served.checked[what.split(":")[0]] = served.checked.get(what.split(":")[0], 0) + 1
    refusals = set(range(400, 500)) | ({500} if os_error else set())
    expected_5xx = {501} | ({502} if gateway else set()) | ({500} if os_error else set())
    assert status is None or status < 500 or status in expected_5xx, f"{what}: answered {status}"
    if refuse:
        assert status in refusals, f"{what}: answered {status}, not a refusal"
    if status in refusals:
        assert after == before, f"{what}: answered {status} but changed the state"
    return status


async def _call(
    app: Any, method: str, target: str, headers: dict[str, str], body: bytes | None, *, cut: str = ""
) -> int | None:
    """Call the app as the server would, and return the status it answered (None: it answered nothing).

    ``cut`` (``"content-length"`` or ``"chunked"``): the client sent only the body's first part and closed, so
    the app gets that part, then ``http.disconnect``, as uvicorn hands on a connection closed mid-body.
    """
    path, _, query = target.partition("?")
    head = {"host": "testserver", "content-type": "application/json", **headers}
    if cut == "chunked":
        head["transfer-encoding"] = "chunked"
    elif cut or body:
        head["content-length"] = str(len(body or b"") + (40 if cut else 0))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote_to_bytes(path).decode("utf-8", "replace"),  # as uvicorn decodes it
        "raw_path": path.encode("latin-1"),
        "root_path": "",
        "query_string": query.encode("latin-1"),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in head.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    parts: list[Message] = [{"type": "http.request", "body": body or b"", "more_body": bool(cut)}]
    statuses: list[int] = []

    async def receive() -> Message:
        if parts:
            return parts.pop(0)
        if cut:
            return {"type": "http.disconnect"}
        await asyncio.sleep(3600)  # a client that stays: the app must not wait for more
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(int(message["status"]))

    try:
        await app(scope, receive, send)
    except Exception:  # what escapes the app is the server's 500 (after the app's own, if it sent one)
        return statuses[0] if statuses else 500
    return statuses[0] if statuses else None


@pytest.mark.parametrize(("provider", "runtime", "endpoint"), list(_table()))
def test_bad_input_is_refused_and_stores_nothing(
    servers: dict[tuple[str, str], Served], provider: str, runtime: str, endpoint: Endpoint
) -> None:
    _sweep(_served(servers, provider, runtime), endpoint)


def _sweep(served: Served, endpoint: Endpoint) -> None:
    """Send every bad-input class that applies to ``endpoint`` and check each answer (see the module)."""
    values = served.fresh()
    headers = served.headers(endpoint)
    method, template = endpoint.method, endpoint.template
    path = fill(template, values)
    app = served.mock.app

    def request(
        target: str, content: bytes | None = None, extra: dict[str, str] | None = None, cut: str = ""
    ) -> Callable[[], int | None]:
        return lambda: served.run(_call(app, method, target, {**headers, **(extra or {})}, content, cut=cut))

    if method in WITH_BODY:
        reads_json = _check(served, f"body: malformed {endpoint}", request(path, b"{")) in range(400, 500)
        if reads_json:
            for name, body in BODIES if served.runtime == "emulator" else BODIES[:1] + BODIES[3:4]:
                _check(served, f"body: {name} {endpoint}", request(path, body), refuse=True)
        for cut in ("content-length", "chunked"):
            _check(served, f"cut body: {cut} {endpoint}", request(path, b'{"image": {"uri": "py', cut=cut))
    for name, converter in [(m.group(1), m.group(2)) for m in PARAM.finditer(template)]:
        if converter == "int":
            continue
        for label, value in SEGMENTS:
            target = fill(template, {**values, name: value})
            gateway = template.startswith("/direct/{sandbox_id}") and name == "sandbox_id"
            _check(served, f"path parameter: {name} {label} {endpoint}", request(target), gateway=gateway)
    for label, value in QUERIES:
        refuse = bool(FILE_ROUTE.search(template)) and label.startswith("10,000")
        os_error = refuse and served.provider == "opensandbox"
        _check(
            served, f"query: path {label} {endpoint}", request(f"{path}?path={value}"), refuse=refuse, os_error=os_error
        )
    bad_header = {"x-sandproof-probe": "\xed\xa0\x80\xff"}  # sent as these four bytes (latin-1)
    _check(served, f"header: undecodable {endpoint}", request(path, extra=bad_header))


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_cut_body_over_a_socket_ends_the_connection(chunked: bool) -> None:
    """A client that sends part of a create body and closes its side gets the connection closed, not a wait."""
    mock = OpenSandboxMock(seed=3, clock=VirtualClock("manual"))
    with mock.server() as server:
        url = urlsplit(server.url)
        part = b'{"image": {"uri": "python:3.11"}, "entrypo'
        framing = (
            f"transfer-encoding: chunked\r\n\r\n{len(part) + 40:x}\r\n"
            if chunked
            else f"content-length: {len(part) + 40}\r\n\r\n"
        )
        head = f"POST /v1/sandboxes HTTP/1.1\r\nhost: {url.netloc}\r\ncontent-type: application/json\r\n{framing}"
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=10) as sock:
            sock.sendall(head.encode() + part)
            sock.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := sock.recv(65536):  # a server that waits fails this with a timeout
                answer += chunk
        assert answer == b"" or answer.split(b" ", 2)[1].startswith(b"4"), answer[:200]
        assert mock.snapshot()["state"]["sandboxes"] == []


def _endpoint(provider: str, method: str, template: str) -> Endpoint:
    return next(e for e in ENDPOINTS[provider] if (e.method, e.template) == (method, template))


def test_the_table_fails_a_parser_that_keeps_lone_surrogates(
    servers: dict[tuple[str, str], Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wrong implementation the issue found: a surrogate in ``image.uri`` accepted and stored."""
    monkeypatch.setattr(jsontext, "check_text", lambda value: None)
    with pytest.raises(AssertionError, match="surrogate"):
        _sweep(_served(servers, "opensandbox", "emulator"), _endpoint("opensandbox", "POST", "/v1/sandboxes"))


def test_the_table_fails_a_parser_that_keeps_nan(
    servers: dict[tuple[str, str], Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's own ``json.loads``, which reads ``NaN`` and ``Infinity`` as floats."""
    monkeypatch.setattr(jsontext, "_DECODER", json.JSONDecoder())
    with pytest.raises(AssertionError, match="NaN"):
        _sweep(_served(servers, "tensorlake", "emulator"), _endpoint("tensorlake", "POST", "/sandboxes"))


def test_the_table_fails_a_filesystem_without_path_limits(
    servers: dict[tuple[str, str], Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without PATH_MAX and NAME_MAX the in-memory filesystem stores a file 10,000 directories deep."""
    monkeypatch.setattr(filesystem, "PATH_MAX", 10**9)
    monkeypatch.setattr(filesystem, "NAME_MAX", 10**9)
    with pytest.raises(AssertionError, match="10,000 components"):
        _sweep(_served(servers, "tensorlake", "emulator"), _endpoint("tensorlake", "PUT", "/api/v1/files"))


def test_an_upload_whose_metadata_holds_a_lone_surrogate_is_refused(servers: dict[tuple[str, str], Served]) -> None:
    """The multipart upload parses its metadata parts with the same parser: a surrogate path writes nothing."""
    served = _served(servers, "opensandbox", "emulator")
    sid = served.fresh()["sandbox_id"]
    before = served.state()
    files = {"metadata": (None, b'{"path": "/tmp/\\ud800.txt"}'), "file": ("x.txt", b"data")}
    answer = served.run(served.client.post(f"/direct/{sid}/44772/files/upload", files=files))
    assert answer.status_code == 400 and answer.json()["code"] == "INVALID_FILE_METADATA", answer.text
    assert served.state() == before
