"""The shared core wrapped around a tiny provider, over a real socket and in-process."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from mockserver.admin.client import AdminClient, AdminError
from mockserver.asgi.server import MockServer
from mockserver.core import VirtualClock
from tests.demo_mock import DemoMock


@pytest.fixture(scope="module")
def mock() -> DemoMock:
    return DemoMock(seed=3, clock=VirtualClock("manual"))


@pytest.fixture(scope="module")
def server(mock: DemoMock) -> Iterator[MockServer]:
    with mock.server() as srv:
        yield srv


@pytest.fixture()
def client(mock: DemoMock, server: MockServer) -> Iterator[httpx.Client]:
    mock.reset()
    with httpx.Client(base_url=server.url, timeout=5) as http:
        yield http


@pytest.fixture()
def admin(server: MockServer) -> Iterator[AdminClient]:
    admin = AdminClient(server.url)
    yield admin
    admin.close()


def test_server_binds_a_free_loopback_port(server: MockServer) -> None:
    assert server.url.startswith("http://127.0.0.1:") and server.port > 0


def test_respond_fault_with_headers_then_normal_service(client: httpx.Client, admin: AdminClient) -> None:
    item = client.post("/items", json={"value": 1}).json()["id"]
    admin.add_fault(path="/items/*", sandbox_id=item, status=503, body={"code": "busy"}, headers={"Retry-After": "2"})
    faulted = client.get(f"/items/{item}")
    assert (faulted.status_code, faulted.headers["retry-after"], faulted.json()) == (
        503,
        "2",
        {"code": "busy"},
    )
    assert client.get(f"/items/{item}").status_code == 200


def test_drop_fault_resets_the_connection(client: httpx.Client, mock: DemoMock) -> None:
    mock.faults.add(path="/items/*", action="drop")
    with pytest.raises(httpx.TransportError):
        client.get("/items/x")
    assert client.get("/items/x").status_code == 404


def test_cut_stream_after_chunks(client: httpx.Client, mock: DemoMock) -> None:
    mock.faults.add(path="/stream", action="cut_stream", after_chunks=2)
    received: list[bytes] = []
    with pytest.raises(httpx.TransportError), client.stream("GET", "/stream") as response:
        received.extend(response.iter_bytes())
    assert b"".join(received) in (b"", b"0\n", b"0\n1\n")
    assert client.get("/stream").text == "0\n1\n2\n3\n4\n"


def test_stall_stream_goes_silent(client: httpx.Client, mock: DemoMock) -> None:
    mock.faults.add(path="/stream", action="stall_stream", after_chunks=1, stall_seconds=5)
    with pytest.raises(httpx.ReadTimeout):
        client.get("/stream", timeout=httpx.Timeout(5, read=0.3))


def test_delay_after_still_applies_the_request(client: httpx.Client, mock: DemoMock) -> None:
    mock.faults.add(method="POST", path="/items", action="delay", delay=0.5, delay_phase="after")
    with pytest.raises(httpx.ReadTimeout):
        client.post("/items", json={"value": "late"}, timeout=httpx.Timeout(5, read=0.1))
    time.sleep(0.6)
    assert [v["value"] for v in mock.items.values()] == ["late"]


def test_journal_records_status_body_fault_and_unknown_fields(client: httpx.Client, mock: DemoMock) -> None:
    client.post("/items", json={"value": 1, "surprise": True})
    mock.faults.add(path="/items/nope", status=500)
    client.get("/items/nope")
    client.get("/_mock/journal")
    created, failed = mock.journal.entries()
    assert (created.method, created.status, created.unknown_fields) == ("POST", 201, ("surprise",))
    assert '"surprise"' in created.body and created.sandbox_id in mock.items
    assert (failed.status, failed.fault) == (500, "respond:500")
    assert mock.journal.unknown_fields() == {"POST /items": ["surprise"]}


def test_journal_redacts_credentials(client: httpx.Client, mock: DemoMock) -> None:
    client.get("/items/q", headers={"Authorization": "Bearer secret", "Cookie": "tl.session_token=s"})
    (only,) = mock.journal.entries()
    assert only.headers["authorization"] == "<redacted>" and only.headers["cookie"] == "<redacted>"


def test_bad_bodies_are_rejected_with_codes(client: httpx.Client, mock: DemoMock) -> None:
    bad = client.post("/items", content=b"{nope", headers={"content-type": "application/json"})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_json")
    wrong = client.post("/items", json=[1, 2])
    assert (wrong.status_code, wrong.json()["code"]) == (400, "invalid_type")
    huge = client.post("/items", content=b"x" * (1024 * 1024 + 1))
    assert (huge.status_code, huge.json()["code"]) == (413, "payload_too_large")
    assert mock.items == {}


def test_snapshot_restore_and_rejected_restore_changes_nothing(client: httpx.Client, admin: AdminClient) -> None:
    client.post("/items", json={"value": "kept"})
    snap = admin.snapshot()
    client.post("/items", json={"value": "later"})
    admin.restore(snap)
    assert admin.snapshot() == snap
    with pytest.raises(AdminError):
        admin.restore({"provider": "demo", "state": {"items": "broken"}})
    with pytest.raises(AdminError):
        admin.restore({"provider": "other", "state": {}})
    assert admin.snapshot() == snap


def test_seed_makes_ids_repeat(client: httpx.Client, admin: AdminClient) -> None:
    admin.seed(99)
    first = client.post("/items", json={}).json()["id"]
    admin.seed(99)
    assert client.post("/items", json={}).json()["id"] == first


def test_clock_admin(client: httpx.Client, admin: AdminClient) -> None:
    start = admin.now()
    assert admin.advance(30) == start + 30
    with pytest.raises(AdminError):
        admin.advance(-1)
    with pytest.raises(AdminError):
        admin.set_clock_mode("backwards")


def test_fault_admin_errors_and_listing(client: httpx.Client, admin: AdminClient) -> None:
    rule = admin.add_fault(path="/x", status=418, times=3)
    assert [f["id"] for f in admin.faults()] == [rule["id"]]
    with pytest.raises(AdminError, match="unknown fault rule keys"):
        admin.add_fault(path="/x", colour="red")
    assert client.delete(f"/_mock/faults/{rule['id']}").status_code == 204
    assert client.delete(f"/_mock/faults/{rule['id']}").status_code == 404
    assert admin.faults() == []
    (ended,) = admin.faults(everything=True)
    assert (ended["id"], ended["ended"], ended["fired"]) == (rule["id"], "removed", 0)
    assert client.get("/_mock/faults", params={"all": "1"}).json() == [ended]


def test_a_spent_fault_is_listed_with_how_often_and_when_it_fired(client: httpx.Client, admin: AdminClient) -> None:
    admin.add_fault(path="/x", status=418, times=2, name="teapot")
    statuses = [client.get("/x").status_code for _ in range(3)]
    assert statuses[:2] == [418, 418] and statuses[2] != 418
    assert admin.faults() == []
    (spent,) = admin.faults(everything=True)
    assert (spent["name"], spent["fired"], spent["ended"]) == ("teapot", 2, "spent")
    assert isinstance(spent["last_fired_at"], float)


def test_dns_admin(admin: AdminClient, mock: DemoMock) -> None:
    admin.set_dns({"db.internal": ["10.0.0.5"]}, "nxdomain")
    assert mock.dns.resolve("db.internal") == ["10.0.0.5"]
    assert mock.dns.resolve("other.example") == []
    with pytest.raises(AdminError):
        admin.set_dns({"db.internal": ["nope"]})


def test_in_process_transport() -> None:
    mock = DemoMock(seed=1)

    async def scenario() -> tuple[int, int]:
        async with httpx.AsyncClient(transport=mock.transport(), base_url="http://demo") as http:
            created = await http.post("/items", json={"value": 2})
            fetched = await http.get(f"/items/{created.json()['id']}")
            return created.status_code, fetched.json()["value"]

    assert asyncio.run(scenario()) == (201, 2)


def test_keep_alive_timeout_closes_idle_sockets() -> None:
    mock = DemoMock()
    request = b"GET /items/a HTTP/1.1\r\nHost: x\r\n\r\n"
    with (
        mock.server(timeout_keep_alive=0.2) as srv,
        socket.create_connection(("127.0.0.1", srv.port)) as sock,
    ):
        sock.settimeout(3)
        sock.sendall(request)
        assert _read_response(sock).startswith(b"HTTP/1.1 404")
        started = time.monotonic()
        assert sock.recv(65536) == b""
        assert time.monotonic() - started < 2.5


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(v for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")) if k.lower() == b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return data


def test_generated_requests_do_not_flag_unknown_fields(client: httpx.Client, mock: DemoMock) -> None:
    client.post("/items", json={"value": 1, "fuzzed": True}, headers={"X-Sandproof-Generated": "1"})
    client.post("/items", json={"value": 1, "sdk_field": True})
    assert mock.journal.unknown_fields() == {"POST /items": ["sdk_field"]}


def test_journal_keeps_the_response_and_polls_with_since(client: httpx.Client, mock: DemoMock) -> None:
    made = client.post("/items", json={"value": 1})
    client.get("/stream")
    first, streamed = mock.journal.entries()
    assert first.response_body == made.text and first.response_headers["content-type"] == "application/json"
    assert streamed.response_body == "0\n1\n2\n3\n4\n" and not streamed.response_truncated
    newer = client.get("/_mock/journal", params={"since": first.seq}).json()
    assert [e["path"] for e in newer] == ["/stream"]
    brief = client.get("/_mock/journal", params={"brief": "1", "limit": "1"}).json()
    assert [e["path"] for e in brief] == ["/stream"] and "response_body" not in brief[0] and "headers" not in brief[0]
    full = client.get(f"/_mock/journal/{first.seq}").json()
    assert full["response_body"] == made.text and full["body"] == '{"value":1}'
    assert client.get("/_mock/journal/999999").json()["code"] == "entry_not_found"
    assert client.get("/_mock/journal", params={"since": "x"}).json()["code"] == "invalid_query"


def test_journal_truncates_large_responses_and_redacts_their_credentials() -> None:
    from mockserver.core.journal import RESPONSE_BODY_LIMIT

    big = DemoMock()
    big.faults.add(
        path="/big", status=200, body="x" * (RESPONSE_BODY_LIMIT + 10), headers={"Set-Cookie": "s=1"}, times=None
    )
    with big.server() as srv, httpx.Client(base_url=srv.url) as http:
        assert len(http.get("/big").text) == RESPONSE_BODY_LIMIT + 10
    (only,) = big.journal.entries()
    assert len(only.response_body) == RESPONSE_BODY_LIMIT and only.response_truncated
    assert only.response_headers["set-cookie"] == "<redacted>"


def test_sandboxes_default_to_none_and_the_dashboard_is_served(client: httpx.Client, admin: AdminClient) -> None:
    assert admin.sandboxes() == []
    assert client.get("/_mock/sandboxes").json() == {"provider": "demo", "sandboxes": []}
    page = client.get("/_mock/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/_mock/ui/app.js"' in page.text and "/_mock/ui/app.css" in page.text
    script = client.get("/_mock/ui/app.js")
    assert script.headers["content-type"].startswith("text/javascript") and "/journal?${params}" in script.text
    assert client.get("/_mock/ui/app.css").headers["content-type"].startswith("text/css")
    assert client.get("/_mock/ui/secrets.txt").status_code == 404
    assert client.get("/_mock/ui/..%2Fadmin").status_code == 404
    assert mock_journal_is_empty(client)


def mock_journal_is_empty(client: httpx.Client) -> bool:
    """The dashboard's own requests are admin calls: the journal does not record them."""
    return client.get("/_mock/journal").json() == []


def test_admin_client_filters_and_removes_faults(client: httpx.Client, admin: AdminClient) -> None:
    client.post("/items", json={"value": 1})
    client.get("/items/missing")
    assert [e["path"] for e in admin.journal(status=404)] == ["/items/missing"]
    seq = admin.journal(limit=1)[0]["seq"]
    assert admin.journal(since=seq) == [] and admin.journal_entry(seq)["status"] == 404
    rule = admin.add_fault(path="/items/*", status=503, times=None)
    admin.remove_fault(rule["id"])
    assert admin.faults() == []
    with pytest.raises(AdminError):
        admin.remove_fault(rule["id"])


def test_a_request_faulted_by_a_sandbox_rule_is_filed_under_that_sandbox(client: httpx.Client, mock: DemoMock) -> None:
    item = client.post("/items", json={"value": 1}).json()["id"]
    mock.faults.add(path="/items/*", sandbox_id=item, status=500)
    mock.faults.add(path="/stream", status=500)
    assert client.get(f"/items/{item}").status_code == 500
    assert client.get("/stream").status_code == 500
    assert [e.fault for e in mock.journal.entries(sandbox_id=item)] == [None, "respond:500"]
    streamed = mock.journal.entries(path="/stream")
    assert [(e.fault, e.sandbox_id) for e in streamed] == [("respond:500", None)], mock.journal.calls()
