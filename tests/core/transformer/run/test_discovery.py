"""Which input folders are runs: those in the run interval not done yet."""

from __future__ import annotations

from datetime import UTC, datetime

from events_manifest._transformer.config import RunInterval
from events_manifest._transformer.run.discovery import discover, folder_uri


def test_runs_in_the_interval_not_done_and_their_folder_uris() -> None:
    interval = RunInterval(since_timestamp=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 3, tzinfo=UTC))
    names = [
        "run=2026-11-01-00-00-00",
        "run=2026-11-02-00-00-00",
        "run=2026-11-03-00-00-00",
        "run=2026-11-01-x",
        "other",
        "_tmp",
    ]
    found = discover(names, ["run=2026-11-02-00-00-00"], interval, datetime.now(UTC))
    assert found.to_process == ("other", "run=2026-11-01-x") and found.done == ("run=2026-11-02-00-00-00",)
    assert folder_uri("s3a://bucket/out/run=1") == "s3://bucket/out/run=1/"
    assert folder_uri("gcs://b/x/") == "gs://b/x/" and folder_uri("file:/tmp/x") == "file:/tmp/x/"
