"""The processing table (docs/manifest.md, "Processing table"), the same tests on every sync backend."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from events_manifest import DuplicateStorage, ItemClaimedError, ManifestConfigError, ProcessingManifest, SqliteManifest
from events_manifest._manifest.processing import FAILED, PROCESSED, PROCESSING
from tests.backends import BACKENDS, backend_of


@pytest.fixture(params=BACKENDS)
def manifest(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DuplicateStorage]:
    opened = backend_of(request, request.param, tmp_path).make()
    yield opened
    opened.close()


@pytest.fixture
def table(manifest: DuplicateStorage) -> ProcessingManifest:
    """A table of its own: on a DynamoDB server a processing table lives beside the manifest's, for
    every test of the process."""
    return manifest.processing_manifest(f"processing-{uuid.uuid4().hex[:8]}")


def test_an_item_is_claimed_then_processed_and_never_taken_again(table: ProcessingManifest) -> None:
    claimed = table.claim("s3://bucket/run=1", "shred 1.0")
    assert (claimed.state, claimed.application) == (PROCESSING, "shred 1.0")
    assert table.get("s3://bucket/run=1") == claimed
    with pytest.raises(ItemClaimedError, match=r"\[s3://bucket/run=1\] is processing .*another run is processing it"):
        table.claim("s3://bucket/run=1", "shred 1.0")
    done = table.processed(claimed)
    assert table.get("s3://bucket/run=1") == done and done.state == PROCESSED
    with pytest.raises(ItemClaimedError, match=r"is processed .*nothing to do.*processing release"):
        table.claim("s3://bucket/run=1", "shred 1.0")
    assert table.claim("s3://bucket/run=2", "shred 1.0").item == "s3://bucket/run=2", "other items are free"
    assert [r.item for r in table.items()] == ["s3://bucket/run=1", "s3://bucket/run=2"]


def test_a_failed_item_is_taken_again_and_a_released_one_too(table: ProcessingManifest) -> None:
    first = table.claim("in", "shred")
    failed = table.failed(first, "boom " * 1000)
    assert failed.state == FAILED and failed.detail.startswith("boom") and len(failed.detail) == 1000
    second = table.claim("in", "shred")
    assert second.run_id != first.run_id
    with pytest.raises(Exception, match="changed while run"):
        table.processed(first), "the first run no longer holds it"
    assert table.release("in") == second and table.get("in") is None
    assert table.release("in") is None
    third = table.claim("in", "shred")
    assert table.processed(third).state == PROCESSED


def test_a_table_name_is_checked(manifest: DuplicateStorage) -> None:
    with pytest.raises(ManifestConfigError, match=r"\[a b\] is not a valid DynamoDB table name"):
        manifest.processing_manifest("a b")


def test_the_table_survives_reopening(tmp_path: Path) -> None:
    with SqliteManifest(tmp_path / "m.db") as first:
        first.processing_manifest("processing").processed(first.processing_manifest("processing").claim("in", "x"))
    with SqliteManifest(tmp_path / "m.db") as again:
        assert again.processing_manifest("processing").get("in").state == PROCESSED  # type: ignore[union-attr]
        assert again.processing_manifest("other").get("in") is None, "tables are apart"
