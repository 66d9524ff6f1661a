"""`events_manifest._jobs.run.JobRun`, the run every tool makes: a normal end finishes it in the
ledger and the processing table and releases its folders; an error records it as failed there,
with a one-line reason, releases them too and comes out unchanged; a processed item is refused
before anything is claimed."""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path

import pytest

from events_manifest import ItemClaimedError, ManifestConfigError, SqliteManifest
from events_manifest._jobs.folders import CLAIM, Layout
from events_manifest._jobs.run import MAX_REASON, JobRun, one_line
from events_manifest._jobs.storage import LocalStorage
from events_manifest._manifest import ledger
from events_manifest._manifest.processing import FAILED, PROCESSED
from events_manifest.model import to_epoch_seconds

ETL = datetime(2026, 11, 1, 6)
"""The manifest's times are naive UTC."""
LAYOUT = Layout("test job", "_job.json", lambda role, name: name.startswith("part-"))


@pytest.fixture
def manifest(tmp_path: Path) -> SqliteManifest:
    return SqliteManifest(tmp_path / "m.db")


def begin(manifest: SqliteManifest | None, tmp_path: Path) -> contextlib.AbstractContextManager[JobRun]:
    """A run of item `batch-1` that writes `tmp_path/out`, recorded in processing table `items`."""
    out = str(tmp_path / "out")
    return JobRun.begin(
        manifest,
        "batch-1",
        "test-app",
        processing_table="items",
        storage=LocalStorage(),
        layout=LAYOUT,
        folders=[(out, "output")],
    )


def test_a_run_that_ends_is_finished_everywhere_and_its_folders_released(
    manifest: SqliteManifest, tmp_path: Path
) -> None:
    published: list[str] = []
    with begin(manifest, tmp_path) as run:
        assert (tmp_path / "out" / CLAIM).exists()
        assert run.start(ETL) == ETL
        [started] = manifest.runs()
        assert (started.state, started.item) == (ledger.STARTED, "batch-1")
        run.commit("2026-11-01T06:00:00Z", lambda: published.append("staged output"))
    assert published == ["staged output"]
    [finished] = manifest.runs()
    assert finished.state == ledger.FINISHED and finished.etl_seconds == to_epoch_seconds(ETL)
    record = manifest.processing_manifest("items").get("batch-1")
    assert record is not None and record.state == PROCESSED
    assert not (tmp_path / "out" / CLAIM).exists()
    with pytest.raises(ItemClaimedError, match=r"\[batch-1\] is processed"):
        JobRun.begin(manifest, "batch-1", "test-app", processing_table="items").__enter__()


def test_a_run_that_fails_is_recorded_with_its_reason_and_the_error_comes_out(
    manifest: SqliteManifest, tmp_path: Path
) -> None:
    def failing() -> None:
        with begin(manifest, tmp_path) as run:
            run.start(ETL)
            raise OSError("disk full\nsecond line")

    with pytest.raises(OSError, match="disk full") as raised:
        failing()
    assert str(raised.value) == "disk full\nsecond line"
    [failed] = manifest.runs()
    assert failed.state == ledger.FAILED
    record = manifest.processing_manifest("items").get("batch-1")
    assert record is not None and (record.state, record.detail) == (FAILED, "OSError: disk full")
    assert not (tmp_path / "out" / CLAIM).exists()
    with begin(manifest, tmp_path) as rerun:  # a failed item may run again, with its etl time
        assert rerun.start(ETL) == ETL


def test_without_a_manifest_nothing_is_recorded_and_a_processing_table_is_refused(tmp_path: Path) -> None:
    with JobRun.begin(None, "batch-1", "test-app") as run:
        assert run.start(ETL) == ETL and run.record is None
    with pytest.raises(ManifestConfigError, match="--processing-manifest-table needs a manifest"):
        begin(None, tmp_path).__enter__()
    assert not (tmp_path / "out").exists()


def test_one_line_keeps_the_type_and_the_first_line_within_its_cap() -> None:
    assert one_line(ValueError("bad value\n  detail")) == "ValueError: bad value"
    assert one_line(KeyError()) == "KeyError"
    long = one_line(RuntimeError("x" * 2000))
    assert len(long) == MAX_REASON and long.startswith("RuntimeError: xxx") and long.endswith("...")
