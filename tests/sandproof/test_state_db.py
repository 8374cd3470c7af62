"""The SQLite state store: restart loses nothing, a request writes only what it changed, JSON files import."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockserver.asgi.commit import CommitBeforeSend
from mockserver.asgi.server import MockServer
from mockserver.serve import build_mocks
from mockserver.service import HttpMock
from mockserver.state_db import IMPORTED_SUFFIX, StateStore, is_sqlite
from mockserver.state_file import save_state

TL = {"authorization": "Bearer k"}
OSB = {"OPEN-SANDBOX-API-KEY": "k"}
BODY = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep"], "resourceLimits": {}, "metadata": {"team": "a"}}


def _mocks(seed: int | None = None) -> dict[str, HttpMock]:
    return build_mocks(seed=seed, clock_mode="manual", api_keys=["k"])


@contextmanager
def _served(path: Path, mocks: dict[str, HttpMock]) -> Iterator[tuple[StateStore, dict[str, httpx.Client]]]:
    """Open a store on ``mocks`` and serve them wrapped as ``sandproof serve`` does; the store is not closed."""
    store = StateStore(path, mocks)
    store.open()
    servers = {n: MockServer(CommitBeforeSend(m.app, store.commit, m.touched_by_request)) for n, m in mocks.items()}
    for server in servers.values():
        server.start()
    clients = {n: httpx.Client(base_url=s.url, headers=TL if n == "tensorlake" else OSB) for n, s in servers.items()}
    try:
        yield store, clients
    finally:
        for client in clients.values():
            client.close()
        for server in servers.values():
            server.stop()


def _snapshots(mocks: dict[str, HttpMock]) -> dict[str, Any]:
    return {name: mock.snapshot() for name, mock in mocks.items()}


def test_a_restart_on_the_same_file_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first = _mocks(seed=5)
    with _served(path, first) as (_store, c):
        tl = c["tensorlake"].post("/sandboxes", json={"name": "kept"}).json()["sandbox_id"]
        c["tensorlake"].post("/sandboxes", json={"name": "gone"})
        assert c["tensorlake"].delete("/sandboxes/gone").status_code == 200
        osb = c["opensandbox"].post("/v1/sandboxes", json=BODY).json()["id"]
        assert c["opensandbox"].patch(f"/v1/sandboxes/{osb}/metadata", json={"team": "b"}).status_code == 200
        direct = f"/direct/{osb}/44772/files/upload"
        files = {"metadata": (None, json.dumps({"path": "/tmp/note.txt"})), "file": ("note.txt", b"hello")}
        assert c["opensandbox"].post(direct, files=files).status_code == 200
        assert c["opensandbox"].post("/_mock/dns", json={"db.internal": ["10.0.0.9"]}).status_code == 200
        assert c["tensorlake"].post("/_mock/clock/advance", json={"seconds": 42}).status_code == 200
        assert c["tensorlake"].post("/_mock/tensorlake/timings", json={"suspend": 3}).status_code == 200
    # no close: as after a SIGKILL, the database is all the next process gets
    second = _mocks(seed=5)
    with _served(path, second) as (_store, c):
        assert _snapshots(second) == _snapshots(first)
        # the seeded id generator continues where it stood: no id is handed out twice
        assert [m.ids.dump() for m in second.values()] == [m.ids.dump() for m in first.values()]
        assert c["tensorlake"].get("/sandboxes/kept").json()["id"] == tl
        assert c["tensorlake"].get("/sandboxes/gone").status_code == 404
        download = c["opensandbox"].get(f"/direct/{osb}/44772/files/download", params={"path": "/tmp/note.txt"})
        assert download.content == b"hello"


def test_a_request_writes_only_the_records_it_changed(tmp_path: Path) -> None:
    mocks = _mocks()
    with _served(tmp_path / "state.db", mocks) as (store, c):
        ids = [c["opensandbox"].post("/v1/sandboxes", json=BODY).json()["id"] for _ in range(40)]
        before = store.rows_written
        c["opensandbox"].patch(f"/v1/sandboxes/{ids[7]}/metadata", json={"team": "c"})
        assert store.rows_written - before == 1  # one sandbox row: not its files, not the 39 others
        before = store.rows_written
        c["opensandbox"].get(f"/v1/sandboxes/{ids[3]}")
        c["opensandbox"].get("/v1/sandboxes")
        assert store.rows_written == before  # reads write nothing


def test_the_database_holds_the_change_when_the_client_sees_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    mocks = _mocks()
    with _served(path, mocks) as (_store, c):
        sid = c["opensandbox"].post("/v1/sandboxes", json=BODY).json()["id"]
        with sqlite3.connect(path) as reader:
            keys = {row[0] for row in reader.execute("SELECT key FROM records WHERE kind = 'sandbox'")}
        assert sid in keys


def test_restore_and_reset_replace_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    donor = _mocks()["opensandbox"]
    with donor.server() as server:
        httpx.post(f"{server.url}/v1/sandboxes", json=BODY, headers=OSB).raise_for_status()
    snapshot = donor.snapshot()
    mocks = _mocks()
    with _served(path, mocks) as (_store, c):
        c["opensandbox"].post("/v1/sandboxes", json=BODY)
        assert c["opensandbox"].post("/_mock/restore", json=snapshot).status_code == 200
    again = _mocks()
    with _served(path, again):
        assert again["opensandbox"].snapshot()["state"] == snapshot["state"]
    with _served(path, _mocks()) as (_store, c):
        assert c["opensandbox"].post("/_mock/reset").status_code == 200
    empty = _mocks()
    with _served(path, empty):
        assert empty["opensandbox"].snapshot()["state"]["sandboxes"] == []


def test_an_old_json_state_file_is_imported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    old = _mocks()
    with old["tensorlake"].server() as server:
        httpx.post(f"{server.url}/sandboxes", json={"name": "from-json"}, headers=TL).raise_for_status()
    save_state(path, old)
    mocks = _mocks()
    store = StateStore(path, mocks)
    message = store.open()
    store.close()
    assert message is not None and "imported" in message
    assert is_sqlite(path) and (tmp_path / f"state.json{IMPORTED_SUFFIX}").exists()
    assert mocks["tensorlake"].snapshot()["state"] == old["tensorlake"].snapshot()["state"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json", f"state.json{IMPORTED_SUFFIX}"]
    reopened = _mocks()
    assert StateStore(path, reopened).open() is not None
    assert reopened["tensorlake"].snapshot()["state"] == old["tensorlake"].snapshot()["state"]


def test_a_file_that_is_not_state_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a state file")
    with pytest.raises(ValueError):
        StateStore(path, _mocks()).open()
    assert path.read_text() == "not a state file"


def test_a_failed_write_answers_503_and_is_retried(tmp_path: Path) -> None:
    mocks = _mocks()
    with _served(tmp_path / "state.db", mocks) as (store, c):
        real = store._write
        calls = {"n": 0}

        def failing(writes: Any, unsaved: Any) -> int:
            calls["n"] += 1
            if calls["n"] == 1:
                raise OSError("disk full")
            return real(writes, unsaved)

        store._write = failing  # type: ignore[method-assign]
        refused = c["opensandbox"].post("/v1/sandboxes", json=BODY)
        assert refused.status_code == 503 and refused.json()["code"] == "state_not_saved"
        c["opensandbox"].get("/v1/sandboxes")  # the next commit writes what the failed one held
    again = _mocks()
    with _served(tmp_path / "state.db", again):
        assert len(again["opensandbox"].snapshot()["state"]["sandboxes"]) == 1


def _all_answer(c: dict[str, httpx.Client]) -> None:
    """Every request on both mocks is served and saved: a read and a write on each."""
    assert c["tensorlake"].get("/sandboxes").status_code == 200
    assert c["tensorlake"].post("/sandboxes", json={}).status_code == 200
    assert c["opensandbox"].get("/v1/sandboxes").status_code == 200
    assert c["opensandbox"].post("/v1/sandboxes", json=BODY).status_code == 202


def test_a_lone_surrogate_is_refused_and_the_store_keeps_serving(tmp_path: Path) -> None:
    """The reported case: ``{"image": "\\ud800"}`` once stopped both mocks with 503 until a restart."""
    mocks = _mocks()
    with _served(tmp_path / "state.db", mocks) as (store, c):
        refused = c["tensorlake"].post("/sandboxes", content=b'{"image": "\\ud800"}')
        assert refused.status_code == 400 and refused.json()["code"] == "invalid_json"
        _all_answer(c)
        assert not store.pending()


def test_a_record_holding_a_lone_surrogate_is_written_and_loads_back(tmp_path: Path) -> None:
    """Past the door's check (here: set on the model), a surrogate is written with ASCII escapes, not a failure."""
    path = tmp_path / "state.db"
    mocks = _mocks(seed=3)
    with _served(path, mocks) as (_store, c):
        sid = c["tensorlake"].post("/sandboxes", json={"name": "odd"}).json()["sandbox_id"]
        model: Any = mocks["tensorlake"].persistent()
        sandbox = model.sandboxes[sid]
        sandbox.image = "\ud800"
        model.changed(sandbox)
        assert c["tensorlake"].post("/_mock/clock/advance", json={"seconds": 1}).status_code == 200
        _all_answer(c)
    again = _mocks(seed=3)
    with _served(path, again):
        loaded: Any = again["tensorlake"].persistent()
        assert loaded.sandboxes[sid].image == "\ud800"


def test_a_record_that_is_not_json_fails_its_own_request_only(tmp_path: Path) -> None:
    """A row the encoder rejects is left out (the database keeps its last version) and is not retried."""
    path = tmp_path / "state.db"
    mocks = _mocks(seed=4)
    with _served(path, mocks) as (store, c):
        osb = c["opensandbox"].post("/v1/sandboxes", json=BODY).json()["id"]
        model: Any = mocks["opensandbox"].persistent()
        real_rows = model.rows

        def poisoned(keys: Any) -> Any:
            for row in real_rows(keys):
                yield type(row)(row.kind, row.key, {"bad": object()}) if row.key == osb else row

        model.rows = poisoned
        refused = c["opensandbox"].patch(f"/v1/sandboxes/{osb}/metadata", json={"team": "z"})
        assert refused.status_code == 503 and refused.json()["code"] == "state_not_saved"
        _all_answer(c)  # every other request is served and saved; the bad row is not retried
        assert not store.pending()
        saved = len(mocks["opensandbox"].snapshot()["state"]["sandboxes"])
    again = _mocks(seed=4)
    with _served(path, again):
        sandboxes = {s["id"]: s for s in again["opensandbox"].snapshot()["state"]["sandboxes"]}
        assert len(sandboxes) == saved
        assert sandboxes[osb]["spec"]["metadata"] == {"team": "a"}  # its last saved version
