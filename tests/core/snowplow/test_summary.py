"""What a shred run did, in numbers: built from its batches' counts, balanced when every input line
is accounted for, printed as a table and saved as JSON that reads back."""

from __future__ import annotations

from events_manifest._snowplow import shred_output
from events_manifest._snowplow.summary import BUCKET_COUNTS, ShredSummary

PLACES = {"etl_time": "2026-11-01 06:00:00", "manifest": "sqlite:///m.db", "input_path": "in", "output_path": "out"}


def _summary(input_lines: int, **counts: int) -> ShredSummary:
    found = dict.fromkeys(shred_output.COUNTS, 0) | counts
    return ShredSummary.of(input_lines, found, {"com.acme/x/jsonschema/1": 3}, bad_path="bad", seconds=1.25, **PLACES)


def test_a_run_is_balanced_when_every_line_is_kept_bad_or_dropped() -> None:
    counts = {"kept": 5, "bad": 1, "manifest_error": 1, "in_batch_duplicate": 2, "cross_batch_duplicate": 1}
    summary = _summary(10, **counts, synthetic=2, synthetic_across=1, **{BUCKET_COUNTS["2"]: 4})
    assert summary.balanced
    assert (summary.bad_rows, summary.manifest_errors) == (2, 1), "a manifest error is a bad row, counted apart"
    assert not _summary(11, **counts).balanced
    assert summary.events_per_event_id == {"1": 0, "2": 4, "3-10": 0, "11-100": 0, ">100": 0}


def test_the_table_and_the_json_show_the_same_counts() -> None:
    summary = _summary(3, kept=2, in_batch_duplicate=1)
    table = summary.table()
    assert table.splitlines()[0] == "Shred run: in -> out (1.2 s)"
    assert "manifest sqlite:///m.db" in table and "check: input = kept + bad + dropped duplicates: yes" in table
    assert "         3  com.acme/x/jsonschema/1" in table
    assert ShredSummary.from_json(summary.to_json()) == summary
    assert [name for name, _ in summary.counts()][:3] == ["input lines", "kept events", "bad rows"]
