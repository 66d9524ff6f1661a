"""How a manifest reaches Spark's workers: by a URL they open once per process (a SQLite path
resolved where the job started), or pickled; an in-memory manifest, which each worker would hold
apart, refused in one line that says what to use."""

from __future__ import annotations

import pickle
from datetime import datetime
from pathlib import Path

import pytest

from events_manifest import InMemoryManifest, SqliteManifest
from events_manifest._opening.handle import InProcess, ManifestHandle, _close_opened
from events_manifest.errors import ManifestConfigError


def test_a_sqlite_url_is_resolved_here_and_opened_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "relative").mkdir()
    handle = ManifestHandle.of("sqlite://relative/m.db?busy_timeout=5")
    assert handle.url is not None and handle.url.startswith(f"sqlite://{tmp_path}/relative/m.db?")
    assert "busy_timeout=5" in handle.url, "its settings travel with it"
    travelled = pickle.loads(pickle.dumps(handle))
    assert travelled.open() is travelled.open() is handle.open(), "one open manifest per worker process"
    assert handle.describe() == handle.url


def test_an_in_memory_manifest_is_refused_with_what_to_use() -> None:
    for manifest in ("memory://", InMemoryManifest()):
        with pytest.raises(ManifestConfigError, match=r"would not be shared: use sqlite:///path/manifest\.db"):
            ManifestHandle.of(manifest)


def test_a_manifest_object_travels_by_its_url_or_pickled(tmp_path: Path) -> None:
    sqlite = SqliteManifest(tmp_path / "m.db")
    try:
        assert ManifestHandle.of(sqlite).url == sqlite.url
    finally:
        sqlite.close()
    pickled = ManifestHandle.of(_Picklable())
    assert pickled.url is None and pickled.describe() == "a pickled manifest"
    assert isinstance(pickled.open(), _Picklable)
    local = InProcess(InMemoryManifest())
    assert local.open() is local.manifest and local.describe() == "InMemoryManifest"


class _Picklable(InMemoryManifest):
    """A manifest with no URL whose state pickles (as a plugin's may)."""

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_Picklable, ())


def test_what_a_process_opened_through_handles_is_closed_as_it_exits(tmp_path: Path) -> None:
    """`_close_opened` (registered with `atexit`): a SQLite manifest's connection closed in time,
    no `-wal` or `-shm` file is left beside it (a shred job failing on a torn input left both: held
    end to end by tests/integration/test_processes.py)."""
    manifest = ManifestHandle.of(f"sqlite://{tmp_path}/m.db").open()
    assert manifest.put("c6ef3124-b53a-4b13-a233-0088f79dcbcb", "fp", datetime(2026, 1, 1))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["m.db", "m.db-shm", "m.db-wal"]
    _close_opened()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["m.db"]
    assert ManifestHandle.of(f"sqlite://{tmp_path}/m.db").open() is not manifest, "opened anew after"
