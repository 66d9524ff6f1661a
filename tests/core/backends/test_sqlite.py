"""SQLite specifics: persistence, refusing files that are not manifests, pickling to other processes."""

from __future__ import annotations

import multiprocessing
import pickle
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from events_manifest import ManifestConfigError, SqliteManifest

ETL = datetime(2017, 1, 26, 0, 1, 25)
ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
OTHER = "0b1e6a5e-2a6f-4c1e-9d2e-5f3c2b9a7d10"


def test_entries_survive_reopening(tmp_path: Path) -> None:
    with SqliteManifest(tmp_path / "m.db") as m:
        assert m.put(ID, "f", ETL)
    with SqliteManifest(tmp_path / "m.db") as m:
        assert m.put(ID, "f", datetime(2017, 2, 1)) is False


def test_text_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my precious notes\n" * 100)
    with pytest.raises(ManifestConfigError, match=r"is not an events manifest \(file is not a database\)"):
        SqliteManifest(path)
    assert path.read_bytes() == b"my precious notes\n" * 100


def test_other_sqlite_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    before = path.read_bytes()
    with pytest.raises(ManifestConfigError, match=r"is a SQLite database but not an events manifest .it holds users"):
        SqliteManifest(path)
    assert path.read_bytes() == before


def test_foreign_application_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA application_id = 1234")
    with pytest.raises(ManifestConfigError, match="belongs to another application"):
        SqliteManifest(path)


def test_bad_paths_are_named(tmp_path: Path) -> None:
    with pytest.raises(ManifestConfigError, match="is a directory"):
        SqliteManifest(tmp_path)
    with pytest.raises(ManifestConfigError, match="does not exist, create it first"):
        SqliteManifest(tmp_path / "missing" / "m.db")


def _put_in_child(manifest: SqliteManifest, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    out.put(manifest.put(ID, "f", datetime(2017, 3, 1)))


def test_pickled_manifest_opens_its_own_connection(tmp_path: Path) -> None:
    manifest = SqliteManifest(tmp_path / "m.db")
    assert manifest.put(ID, "f", ETL)
    copy = pickle.loads(pickle.dumps(manifest))
    assert copy.put(ID, "f", datetime(2017, 2, 1)) is False
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_put_in_child, args=(manifest, out))
    child.start()
    assert out.get(timeout=60) is False
    child.join(timeout=30)
    assert manifest.put(ID, "f", ETL), "the parent's connection still works after the fork"


def test_url_round_trips_the_options(tmp_path: Path) -> None:
    from datetime import timedelta

    from events_manifest import manifest_from_url

    manifest = SqliteManifest(tmp_path / "m.db", ttl=timedelta(days=3), cache_mib=8, durable=True)
    again = manifest_from_url(manifest.url)
    assert isinstance(again, SqliteManifest)
    assert (again.path, again.ttl, again.url) == (manifest.path, timedelta(days=3), manifest.url)


def test_the_file_alone_holds_every_put_once_closed_though_another_process_keeps_it_open(tmp_path: Path) -> None:
    """A job's puts, made through its driver's manifest and through Spark's Python workers (which
    keep their connection until they are killed), are in the file itself once the driver closes
    its manifest, not only in SQLite's `-wal` beside it: a copy of the file alone (as a user backs
    up one file) holds every put."""
    manifest = SqliteManifest(tmp_path / "m.db")
    worker = pickle.loads(pickle.dumps(manifest))  # a worker's own connection, kept open
    assert worker.put(ID, "f", ETL)
    assert manifest.put(OTHER, "f", ETL)
    manifest.close()
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy/m.db").write_bytes((tmp_path / "m.db").read_bytes())
    with SqliteManifest(tmp_path / "copy/m.db") as copy:
        assert copy.put(ID, "f", datetime(2017, 2, 1)) is False, "the worker's put is in the file"
        assert copy.put(OTHER, "f", datetime(2017, 2, 1)) is False, "the driver's put is in the file"
    worker.close()
