"""SQLite manifest: the embedded, persistent default for one machine.

Several processes may share one file: every batch runs in one `BEGIN IMMEDIATE` transaction and
the check-and-set is a single conditional upsert, so each pair is accepted once per etl time.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import attrs

from events_manifest._manifest import liveness
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import Run
from events_manifest._manifest.processing import ItemRecord, ProcessingManifest
from events_manifest.errors import ManifestConfigError, ManifestRequestError, ManifestUnavailableError
from events_manifest.model import DEFAULT_TTL, EventId, ManifestEntry, PutBatch, check_fingerprint, normalize_event_id

APPLICATION_ID = 0x45564D46  # "EVMF": marks a file as an events manifest
SCHEMA_VERSION = 4
"""1: the entries; 2: and the run ledger; 3: and each run's owner and sign of life; 4: and the
input each run read and where it wrote (an older file gains what it lacks when opened)."""
T = TypeVar("T")
PAGE_SIZE = 16384
"""For new files: batches of random ids touch fewer, larger pages (30% faster than 4 KiB)."""

_CREATE = """
CREATE TABLE events_manifest (
    event_id    TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    etl_time    INTEGER NOT NULL,
    ttl         INTEGER NOT NULL,
    PRIMARY KEY (event_id, fingerprint)
) WITHOUT ROWID
"""

_CREATE_RUNS = """
CREATE TABLE IF NOT EXISTS events_manifest_runs (
    etl_time    INTEGER NOT NULL PRIMARY KEY,
    item        TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    owner       TEXT    NOT NULL DEFAULT '',
    alive_at    INTEGER,
    source      TEXT    NOT NULL DEFAULT '',
    output      TEXT    NOT NULL DEFAULT ''
)
"""

_RUNS = (
    "SELECT etl_time, item, state, started_at, finished_at, owner, alive_at, source, output FROM events_manifest_runs"
)
_LAYOUT = {
    "events_manifest": ("event_id", "fingerprint", "etl_time", "ttl"),
    "events_manifest_runs": (
        "etl_time",
        "item",
        "state",
        "started_at",
        "finished_at",
        "owner",
        "alive_at",
        "source",
        "output",
    ),
}
"""The columns of each table of a manifest file, in order."""
_UPGRADES = {
    2: (
        "ALTER TABLE events_manifest_runs ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE events_manifest_runs ADD COLUMN alive_at INTEGER",
    ),
    3: (
        "ALTER TABLE events_manifest_runs ADD COLUMN source TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE events_manifest_runs ADD COLUMN output TEXT NOT NULL DEFAULT ''",
    ),
}
"""What a file of each older schema version lacks (version 1 has no ledger: it is created whole)."""

# The manifest contract (docs/manifest.md) in one statement: insert, or overwrite a rerun or an expired entry.
_PUT = """
INSERT INTO events_manifest (event_id, fingerprint, etl_time, ttl) VALUES (?, ?, ?, ?)
ON CONFLICT (event_id, fingerprint) DO UPDATE SET etl_time = excluded.etl_time, ttl = excluded.ttl
WHERE events_manifest.etl_time = excluded.etl_time OR events_manifest.ttl <= excluded.etl_time
"""

_LOOKUP = "SELECT etl_time, ttl FROM events_manifest WHERE event_id = ? AND fingerprint = ?"

_ENTRIES = "SELECT event_id, fingerprint, etl_time, ttl FROM events_manifest WHERE event_id IN ({})"


class _NotAllAccepted(Exception):
    """A batch's pairs were not all accepted: roll back, then answer each one."""


class SqliteManifest(DuplicateStorage):
    """A manifest in one SQLite file (WAL mode), safe across threads and processes.

    `busy_timeout` bounds how long a put waits for another process's transaction;
    `cache_mib` is the page cache per connection (large batches of random ids need it).
    A committed batch survives a crash of the process; with `durable` it also survives a power
    loss (synchronous=FULL, slower; see docs/benchmarks.md). With `read_only` nothing is written,
    not even a new file: a path without a manifest is an error.
    Picklable: a copy sent to another process opens its own connection.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: timedelta = DEFAULT_TTL,
        busy_timeout: timedelta = timedelta(seconds=60),
        cache_mib: int = 64,
        durable: bool = False,
        read_only: bool = False,
    ) -> None:
        super().__init__(ttl=ttl)
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._cache_mib = cache_mib
        self._durable = durable
        self.read_only = read_only
        self._lock = threading.Lock()
        self._conn = self._open()
        self._pid = os.getpid()

    def __repr__(self) -> str:
        return f"SqliteManifest({str(self.path)!r}, ttl={self.ttl})"

    @property
    def url(self) -> str:
        """The `manifest_from_url` form of this manifest, options included."""
        options = f"ttl={self._ttl_seconds}s&cache_mib={self._cache_mib}"
        if self._busy_timeout != timedelta(seconds=60):
            options += f"&busy_timeout={max(int(self._busy_timeout.total_seconds()), 1)}"
        return f"sqlite://{self.path.resolve()}?{options}" + ("&durable=true" if self._durable else "")

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ttl": self.ttl,
            "busy_timeout": self._busy_timeout,
            "cache_mib": self._cache_mib,
            "durable": self._durable,
            "read_only": self.read_only,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        path = state.pop("path")
        self.__init__(path, **state)  # type: ignore[misc]

    def _open(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise ManifestConfigError(f"SQLite manifest path [{self.path}] is a directory: give a file path")
        if not self.path.parent.exists():
            raise ManifestConfigError(
                f"SQLite manifest path [{self.path}]: folder {self.path.parent} does not exist, create it first"
            )
        if self.read_only and not self.path.is_file():
            raise ManifestUnavailableError(f"no manifest at {self.path}: nothing to read there")
        try:
            conn = sqlite3.connect(
                self.path.resolve().as_uri() + "?mode=ro" if self.read_only else self.path,
                uri=self.read_only,
                timeout=self._busy_timeout.total_seconds(),
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as e:
            raise ManifestUnavailableError(f"cannot open SQLite manifest [{self.path}]: {e}") from None
        try:
            self._prepare(conn)
        except sqlite3.OperationalError as e:
            conn.close()
            if not _locked(e):
                raise ManifestUnavailableError(f"cannot open SQLite manifest [{self.path}]: {e}") from None
            raise self._locked() from None
        except sqlite3.DatabaseError as e:
            conn.close()
            raise ManifestConfigError(
                f"[{self.path}] is not an events manifest ({e}): choose another path, nothing was written"
            ) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Check that the file is a manifest, creating the table in a new or empty file."""
        conn.execute(f"PRAGMA cache_size = -{int(self._cache_mib) * 1024}")
        if self.read_only:
            self._check_read_only(conn)
            return
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # takes effect only in a new, empty file
        conn.execute("BEGIN IMMEDIATE")
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id == 0:
                tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                if tables:
                    raise ManifestConfigError(
                        f"[{self.path}] is a SQLite database but not an events manifest "
                        f"(it holds {', '.join(sorted(tables))}): choose another path, nothing was written"
                    )
                conn.execute(_CREATE)
                conn.execute(_CREATE_RUNS)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif app_id != APPLICATION_ID:
                raise ManifestConfigError(
                    f"[{self.path}] belongs to another application (application_id {app_id:#x}): choose another path"
                )
            else:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise ManifestConfigError(
                        f"[{self.path}] was written by a newer events-manifest (schema {version}): upgrade the library"
                    )
                if version < SCHEMA_VERSION:
                    for older in range(version, SCHEMA_VERSION) if version >= 2 else ():
                        for statement in _UPGRADES[older]:
                            conn.execute(statement)
                    conn.execute(_CREATE_RUNS)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._check_layout(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {'FULL' if self._durable else 'NORMAL'}")
        conn.execute("PRAGMA wal_autocheckpoint = 10000")

    def _check_read_only(self, conn: sqlite3.Connection) -> None:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise ManifestConfigError(f"[{self.path}] is not an events manifest (application_id {app_id:#x})")
        if version != SCHEMA_VERSION:
            advice = "any run on it upgrades it" if version < SCHEMA_VERSION else "upgrade the library"
            raise ManifestConfigError(
                f"[{self.path}] is an events manifest of schema {version}, this version reads schema "
                f"{SCHEMA_VERSION}: {advice}"
            )
        self._check_layout(conn)

    def _check_layout(self, conn: sqlite3.Connection) -> None:
        """Refuse a file whose tables are not the ones this version writes (another tool's, or a
        file edited by hand), naming what it holds instead of failing on a missing column later."""
        for table, wanted in _LAYOUT.items():
            found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            if found != list(wanted):
                raise ManifestConfigError(
                    f"[{self.path}] is a SQLite file of another layout: its table {table} has the columns "
                    f"({', '.join(found) or 'none'}), an events manifest's has ({', '.join(wanted)}). Choose another "
                    "path; nothing was written"
                )

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ManifestUnavailableError(f"SqliteManifest({str(self.path)!r}) is closed")
        if self._pid != os.getpid():  # forked: never share the parent's connection
            self._conn, self._pid = self._open(), os.getpid()
        return self._conn

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        ttl = self._ttl_seconds
        try:
            self._transaction(lambda conn: self._accept_all(conn, batch, ttl))
            return [True] * len(batch)
        except _NotAllAccepted:  # rolled back: each pair's answer, in a transaction of its own
            return self._transaction(lambda conn: self._upsert_each(conn, batch, ttl))

    @staticmethod
    def _accept_all(conn: sqlite3.Connection, batch: PutBatch, ttl: int) -> None:
        """The common case, every pair accepted (new, or a rerun's): the batch in one statement,
        each row of which changes one row when accepted. Raises `_NotAllAccepted` otherwise, so
        that the transaction rolls back (cheaper than a savepoint, which copies every page the
        batch touches)."""
        before = conn.total_changes
        conn.executemany(_PUT, ((*key, etl, etl + ttl) for key, etl in zip(batch.keys, batch.etl_seconds, strict=True)))
        if conn.total_changes - before != len(batch):
            raise _NotAllAccepted

    @staticmethod
    def _upsert_each(conn: sqlite3.Connection, batch: PutBatch, ttl: int) -> list[bool | ManifestRequestError]:
        results: list[bool | ManifestRequestError] = []
        append, execute = results.append, conn.execute
        for event_id, fingerprint, etl in batch.rows():
            before = conn.total_changes
            execute(_PUT, (event_id, fingerprint, etl, etl + ttl))
            append(conn.total_changes != before)
        return results

    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        key = (normalize_event_id(event_id), check_fingerprint(fingerprint))
        with self._lock:
            row = self._connection().execute(_LOOKUP, key).fetchone()
        return None if row is None else ManifestEntry(*key, *row)

    def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        found: list[ManifestEntry] = []
        with self._lock:
            conn = self._connection()
            for start in range(0, len(event_ids), 500):
                chunk = event_ids[start : start + 500]
                rows = conn.execute(_ENTRIES.format(", ".join("?" * len(chunk))), chunk)
                found += (ManifestEntry(*row) for row in rows)
        return found

    def processing_manifest(self, table: str, *, create: bool = True) -> ProcessingManifest:
        return SqliteProcessingManifest(self, table, create=create and not self.read_only)

    def _runs(self) -> list[Run]:
        with self._lock:
            return [Run(*row) for row in self._connection().execute(_RUNS)]

    def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        etl = (new or expected).etl_seconds  # type: ignore[union-attr]
        return self._transaction(lambda conn: self._swap_run_in(conn, etl, expected, new))

    @staticmethod
    def _swap_run_in(conn: sqlite3.Connection, etl: int, expected: Run | None, new: Run | None) -> bool:
        row = conn.execute(_RUNS + " WHERE etl_time = ?", (etl,)).fetchone()
        if (None if row is None else Run(*row)) != expected:
            return False
        conn.execute("DELETE FROM events_manifest_runs WHERE etl_time = ?", (etl,))
        if new is not None:
            conn.execute(f"INSERT INTO events_manifest_runs VALUES ({', '.join('?' * 9)})", attrs.astuple(new))
        return True

    def _delete_entries(self, etl_seconds: int) -> int:
        return self._transaction(
            lambda conn: conn.execute("DELETE FROM events_manifest WHERE etl_time = ?", (etl_seconds,)).rowcount
        )

    def _transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` in one immediate transaction, under the lock; a SQLite failure is the manifest's."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN" if self.read_only else "BEGIN IMMEDIATE")
                try:
                    result = work(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                if isinstance(e, sqlite3.OperationalError) and _locked(e):
                    raise self._locked() from e
                raise ManifestUnavailableError(f"SQLite manifest [{self.path}]: {e}") from e
        return result

    def _locked(self) -> ManifestUnavailableError:
        """Another process held the file's lock for longer than the busy timeout: say who, if this
        host tells."""
        files = [str(self.path), f"{self.path}-wal", f"{self.path}-journal"]
        found = liveness.holders(*files)
        by = f" by {', '.join(found[:3])}" if found else " by another process"
        return ManifestUnavailableError(
            f"SQLite manifest [{self.path}] is locked{by}: it held the lock for over "
            f"{self._busy_timeout.total_seconds():g} s; nothing was stored. Run again once it has ended"
        )

    def close(self) -> None:
        super().close()
        with self._lock:
            if self._conn is not None:
                # What was written into the file itself, whoever keeps it open (a Spark job's Python
                # workers do until they are killed; the file's last connection to close does it alone):
                # a copy of the file alone holds it. A manifest that wrote nothing (a refused run) leaves
                # the file's bytes as they were; PASSIVE never waits for another process.
                if self._conn.total_changes:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self._conn.close()
                self._conn = None  # type: ignore[assignment]


def _locked(error: sqlite3.OperationalError) -> bool:
    return error.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(error)


class SqliteProcessingManifest(ProcessingManifest):
    """A processing table in the manifest's SQLite file (created if missing)."""

    def __init__(self, manifest: SqliteManifest, table: str, *, create: bool = True) -> None:
        super().__init__(table)
        self._manifest = manifest
        self._select = f'SELECT {_ITEM_COLUMNS} FROM "{self.table}"'
        if create:
            manifest._transaction(lambda conn: conn.execute(_CREATE_ITEMS.format(table=self.table)))
        else:
            with manifest._lock:
                found = manifest._connection().execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,))
                if found.fetchone() is None:
                    raise ManifestConfigError(f"the manifest [{manifest.path}] holds no processing table {table}")

    def _get(self, item: str) -> ItemRecord | None:
        return self._manifest._transaction(lambda conn: self._get_in(conn, item))

    def _get_in(self, conn: sqlite3.Connection, item: str) -> ItemRecord | None:
        row = conn.execute(self._select + " WHERE item = ?", (item,)).fetchone()
        return None if row is None else ItemRecord(*row)

    def _items(self) -> list[ItemRecord]:
        return self._manifest._transaction(lambda conn: [ItemRecord(*row) for row in conn.execute(self._select)])

    def _swap(self, expected: ItemRecord | None, new: ItemRecord | None) -> bool:
        item = (new or expected).item  # type: ignore[union-attr]

        def swap(conn: sqlite3.Connection) -> bool:
            if self._get_in(conn, item) != expected:
                return False
            conn.execute(f'DELETE FROM "{self.table}" WHERE item = ?', (item,))
            if new is not None:
                conn.execute(f'INSERT INTO "{self.table}" VALUES (?, ?, ?, ?, ?, ?, ?)', attrs.astuple(new))
            return True

        return self._manifest._transaction(swap)


_ITEM_COLUMNS = "item, state, run_id, application, owner, updated_at, detail"
_CREATE_ITEMS = """
CREATE TABLE IF NOT EXISTS "{table}" (
    item        TEXT    NOT NULL PRIMARY KEY,
    state       TEXT    NOT NULL,
    run_id      TEXT    NOT NULL,
    application TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    updated_at  INTEGER NOT NULL,
    detail      TEXT    NOT NULL
)
"""
