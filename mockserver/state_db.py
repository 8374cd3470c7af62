"""Keep the mocks' state in SQLite (WAL): one row per record, each request's changes in one transaction.

``sandproof serve --state-file PATH`` keeps every mock's state in the database at ``PATH``:

* a table ``records (mock, kind, key, seq, body)``: one row per sandbox, per sandbox's file tree, per
  snapshot, session or telemetry event (the kinds are the models', see their ``rows``), and three rows per
  mock for the core: ``clock``, ``dns`` and ``ids`` (the id generator, so a seeded server keeps handing out
  new ids after a restart). ``seq`` is the order a record first appeared, the order a load replays;
* :meth:`StateStore.commit` takes the keys each model store marked since the last commit
  (:class:`~mockserver.core.changes.ChangeLog`), serialises those records only, and writes them in one
  transaction; a record that is gone is deleted. A replaced state (reset, restore) rewrites its mock's rows;
* the HTTP wrapper (:class:`mockserver.asgi.commit.CommitBeforeSend`) commits before a response's first
  byte goes out, and again before a streamed body ends, so an acknowledged change is on disk.

One record can never stop the store. The mocks refuse text that is not Unicode at the door
(:mod:`mockserver.core.jsontext`), but a value holding a lone surrogate that got in anyway is written with
ASCII escapes (``\\ud800``), which load back as the same value. A record that cannot be written as JSON at
all is left out of the transaction: every other row is written, the database keeps that record's last
saved version, its key is not retried, and :meth:`StateStore.commit` raises :class:`UnsavedRecords` so the
request that changed it is refused (503 ``state_not_saved``) while every other request is served and saved.
A failed write of the database itself (a full disk) is different: the changes stay marked and the next
commit retries them.

What is durable: what ``/_mock/snapshot`` returns (sandboxes with their files, snapshots, sessions, timings,
clock, DNS) plus the id generator. Fault rules, the journal, queued create outcomes and the accepted API keys
are a test's instrumentation, not the provider's state, and start afresh (as they are not in a snapshot). A
command still running when the server stops comes back as killed; output a background command writes after
its request was answered is written with the next request that acts on its sandbox.

Durability: a committed transaction survives the server process being killed at any moment (SIGKILL
included): WAL with ``synchronous=NORMAL`` has handed every committed page to the operating system. An
operating-system crash or power loss may lose the last transactions (``synchronous="FULL"`` closes that gap
at the cost of an fsync per request). Restart replays nothing: the rows are the state.

A ``PATH`` holding an old JSON state file (:mod:`mockserver.state_file`) is imported on start: the JSON is
kept beside it as ``PATH.json-imported`` and ``PATH`` becomes the database.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mockserver.core.changes import Persistent, Row, Taken
from mockserver.core.mock import MockCore
from mockserver.state_file import load_state

__all__ = ["IMPORTED_SUFFIX", "SCHEMA_VERSION", "StateStore", "UnsavedRecords", "is_sqlite"]

SCHEMA_VERSION = 1
IMPORTED_SUFFIX = ".json-imported"
CORE = "core"
_MAGIC = b"SQLite format 3\x00"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    mock TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (mock, kind, key)
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_UPSERT = (
    "INSERT INTO records (mock, kind, key, seq, body) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (mock, kind, key) DO UPDATE SET body = excluded.body"
)
_DELETE = "DELETE FROM records WHERE mock = ? AND kind = ? AND key = ?"
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":")).encode
Upsert = tuple[str, str, str, int, str]


class UnsavedRecords(RuntimeError):
    """Some changed records could not be written as JSON: the rest of the commit was written, these were not."""

    def __init__(self, keys: list[tuple[str, str, str]], reason: str) -> None:
        shown = ", ".join(f"{mock}/{kind}/{key}" for mock, kind, key in keys[:5])
        super().__init__(f"{len(keys)} record(s) could not be written ({shown}): {reason}")
        self.keys = keys


def is_sqlite(path: Path) -> bool:
    """Tell whether ``path`` holds a SQLite database (an empty or missing file does not)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(_MAGIC)) == _MAGIC
    except FileNotFoundError:
        return False


@dataclass
class _Tracked:
    """One mock, its model store, and the core values last written."""

    name: str
    mock: MockCore
    model: Persistent
    clock: object = None
    dns: int = -1
    ids: int | None = None
    rewrite: bool = field(default=False)


class StateStore:
    """The SQLite database that holds the state of the served mocks."""

    def __init__(
        self,
        path: Path,
        mocks: Mapping[str, MockCore],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        self.path = path
        self.synchronous = synchronous
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._seq = itertools.count(1)
        self._tracked: list[_Tracked] = []
        for name, mock in mocks.items():
            model = mock.persistent()
            if model is None:
                raise ValueError(f"mock {name!r} has no state model a database can keep")
            self._tracked.append(_Tracked(name, mock, model))
        #: Rows written and transactions committed since :meth:`open` (for tests and benchmarks).
        self.rows_written = 0
        self.transactions = 0
        self._unsaved_reason = ""

    # -- opening -----------------------------------------------------------------------------------

    def open(self) -> str | None:
        """Load the state from the database (importing an old JSON file first); return what was done.

        Afterwards every change the models mark is collected for :meth:`commit`. Raises ValueError (nothing
        started) when the file holds neither a sandproof database nor a sandproof JSON state.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = self._staging()
        for leftover in (staging, *_companions(staging)):
            leftover.unlink(missing_ok=True)
        backup = self.path.with_name(self.path.name + IMPORTED_SUFFIX)
        if not self.path.exists() and backup.exists():
            return self._import(backup, backup)  # an import stopped between its two renames
        if self.path.exists() and self.path.stat().st_size and not is_sqlite(self.path):
            return self._import(self.path, backup)
        self._conn = self._connect(self.path)
        loaded = self._load()
        for tracked in self._tracked:
            tracked.model.changes.enabled = True
            tracked.rewrite = not loaded
        self.commit()
        return f"restored state from {self.path}" if loaded else None

    def _staging(self) -> Path:
        return self.path.with_name(f".{self.path.name}.importing")

    def _connect(self, path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.executescript(_SCHEMA)
            found = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
            if found is None:
                conn.execute("INSERT INTO meta (name, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif found[0] != str(SCHEMA_VERSION):
                raise ValueError(f"{path} holds sandproof state schema {found[0]}, this version reads {SCHEMA_VERSION}")
            top = conn.execute("SELECT MAX(seq) FROM records").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise ValueError(f"{path} is not a sandproof state database: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        self._seq = itertools.count((top or 0) + 1)
        return conn

    def _load(self) -> bool:
        """Load every mock that has rows; return whether any had."""
        assert self._conn is not None
        loaded = False
        for tracked in self._tracked:
            cursor = self._conn.execute(
                "SELECT kind, key, body FROM records WHERE mock = ? ORDER BY seq", (tracked.name,)
            )
            rows = [Row(kind, key, json.loads(body)) for kind, key, body in cursor]
            if not rows:
                continue
            core = {row.key: row.body for row in rows if row.kind == CORE}
            tracked.model.load_rows(row for row in rows if row.kind != CORE)
            _load_core(tracked.mock, core)
            tracked.model.changes.take()
            self._remember_core(tracked)
            loaded = True
        return loaded

    def _import(self, source: Path, backup: Path) -> str:
        """Import a JSON state file into a new database at :attr:`path`, keeping the JSON as ``backup``."""
        if not load_state(source, {t.name: t.mock for t in self._tracked}):
            raise ValueError(f"{source} holds no sandproof state")
        staging = self._staging()
        self._conn = self._connect(staging)
        for tracked in self._tracked:
            tracked.model.changes.enabled = True
            tracked.rewrite = True
        self.commit()
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._conn.close()
        if source != backup:
            os.replace(source, backup)
        os.replace(staging, self.path)
        for leftover in _companions(staging):
            leftover.unlink(missing_ok=True)
        self._conn = self._connect(self.path)
        return f"imported the JSON state of {source.name} into {self.path} (the JSON is kept as {backup.name})"

    # -- writing -----------------------------------------------------------------------------------

    def pending(self) -> bool:
        """Tell whether something changed that :meth:`commit` would write."""
        for tracked in self._tracked:
            mock = tracked.mock
            if (
                tracked.rewrite
                or tracked.model.changes.pending()
                or mock.clock.token is not tracked.clock
                or mock.dns.version != tracked.dns
                or mock.ids.version != tracked.ids
            ):
                return True
        return False

    def commit(self) -> int:
        """Write every change marked since the last commit in one transaction; return the rows written.

        On a failed write the changes stay marked, so the next commit retries them, and the error propagates.
        """
        with self._lock:
            if self._conn is None:
                raise RuntimeError("the state store is not open")
            writes: list[tuple[_Tracked, Taken, list[Row], list[Row]]] = []
            for tracked in self._tracked:
                taken = tracked.model.changes.take()
                everything = taken.everything or tracked.rewrite
                if everything:
                    rows = list(tracked.model.all_rows())
                elif taken.keys:
                    rows = list(tracked.model.rows(sorted(taken.keys)))
                else:
                    rows = []
                core = self._core_rows(tracked, force=everything)
                if everything or rows or core:
                    writes.append((tracked, Taken(everything, taken.keys), rows, core))
            if not writes:
                return 0
            unsaved: list[tuple[str, str, str]] = []
            try:
                count = self._write(writes, unsaved)
            except BaseException:
                for tracked, taken, _rows, _core in writes:
                    tracked.model.changes.give_back(taken)
                    tracked.rewrite = tracked.rewrite or taken.everything
                    tracked.clock, tracked.dns, tracked.ids = None, -1, None
                raise
            for tracked, _taken, _rows, _core in writes:
                tracked.rewrite = False
            if unsaved:
                raise UnsavedRecords(unsaved, self._unsaved_reason)
            return count

    def _write(
        self,
        writes: Iterable[tuple[_Tracked, Taken, list[Row], list[Row]]],
        unsaved: list[tuple[str, str, str]],
    ) -> int:
        """Write the rows in one transaction; a row that is not JSON goes to ``unsaved`` and is left out."""
        assert self._conn is not None
        upserts: list[Upsert] = []
        deletes: list[tuple[str, str, str]] = []
        wipe: list[str] = []
        for tracked, taken, rows, core in writes:
            if taken.everything:
                wipe.append(tracked.name)
            for row in (*rows, *core):
                if row.body is None:
                    deletes.append((tracked.name, row.kind, row.key))
                    continue
                try:
                    text = _dumps(row.body)
                except (TypeError, ValueError, RecursionError) as exc:  # not JSON: this record only is left out
                    unsaved.append((tracked.name, row.kind, row.key))
                    self._unsaved_reason = f"{type(exc).__name__}: {exc}"
                    continue
                upserts.append((tracked.name, row.kind, row.key, next(self._seq), text))
        try:
            self._transaction(wipe, deletes, upserts)
        except UnicodeEncodeError:  # a lone surrogate in some row: write those rows with ASCII escapes
            self._transaction(wipe, deletes, [_as_ascii(upsert) for upsert in upserts])
        self.rows_written += len(upserts) + len(deletes)
        self.transactions += 1
        return len(upserts) + len(deletes)

    def _transaction(self, wipe: list[str], deletes: list[tuple[str, str, str]], upserts: list[Upsert]) -> None:
        assert self._conn is not None
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for name in wipe:
                conn.execute("DELETE FROM records WHERE mock = ?", (name,))
            if deletes:
                conn.executemany(_DELETE, deletes)
            if upserts:
                conn.executemany(_UPSERT, upserts)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _core_rows(self, tracked: _Tracked, *, force: bool) -> list[Row]:
        """Return the core rows (clock, DNS, ids) that moved since they were last written."""
        mock = tracked.mock
        rows: list[Row] = []
        token = mock.clock.token
        if force or token is not tracked.clock:
            tracked.clock = token
            rows.append(Row(CORE, "clock", {**mock.clock.dump(), "wall": time.time()}))
        version = mock.dns.version
        if force or version != tracked.dns:
            tracked.dns = version
            rows.append(Row(CORE, "dns", mock.dns.dump()))
        version = mock.ids.version
        if force or version != tracked.ids:
            tracked.ids = version
            rows.append(Row(CORE, "ids", mock.ids.dump()))
        return rows

    def _remember_core(self, tracked: _Tracked) -> None:
        tracked.clock = tracked.mock.clock.token
        tracked.dns = tracked.mock.dns.version
        tracked.ids = tracked.mock.ids.version

    # -- closing -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Write what is left, fold the WAL into the database and close it (its ``-wal``/``-shm`` go away)."""
        if self._conn is None:
            return
        try:
            self.commit()
            with self._lock:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            with self._lock:
                self._conn.close()
                self._conn = None
            for tracked in self._tracked:
                tracked.model.changes.enabled = False


def _as_ascii(upsert: Upsert) -> Upsert:
    """Return an upsert whose body text is UTF-8-encodable: re-encoded with ASCII escapes when it is not."""
    mock, kind, key, seq, text = upsert
    if text.isascii():
        return upsert
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return (mock, kind, key, seq, _dumps_ascii(json.loads(text)))
    return upsert


def _companions(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def _load_core(mock: MockCore, core: Mapping[str, Any]) -> None:
    """Restore a mock's clock, DNS table and id generator from their rows (a wall clock keeps running)."""
    try:
        if "clock" in core:
            clock = dict(core["clock"])
            wall = clock.pop("wall", None)
            if (
                clock.get("mode") == "wall"
                and isinstance(wall, int | float)
                and isinstance(clock.get("now"), int | float)
            ):
                clock["now"] = float(clock["now"]) + max(0.0, time.time() - float(wall))
            mock.clock.load(clock)
        if "dns" in core:
            mock.dns.load(dict(core["dns"]))
        if "ids" in core:
            mock.load_ids(dict(core["ids"]))
    except (TypeError, KeyError) as exc:
        raise ValueError(f"malformed core state: {exc}") from exc
