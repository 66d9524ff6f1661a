"""A streaming dedup's micro-batch etl times (`BatchClock`), on local folders without Spark: one a
batch, the same when Spark replays it after a restart, each after the one before, a record never
replaced."""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta
from pathlib import Path

from events_manifest._dedup.batch_clock import ETL_FOLDER, KEPT, BatchClock
from events_manifest._jobs.storage import LocalStorage

NOON = datetime(2026, 12, 3, 12)
"""Etl times are naive UTC datetimes (`events_manifest.model`)."""
EPOCH = calendar.timegm(NOON.utctimetuple())


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_a_replayed_batch_takes_its_time_again_and_each_batch_comes_after_the_one_before(tmp_path: Path) -> None:
    clock = Clock(NOON)
    first = BatchClock(LocalStorage(), str(tmp_path), clock)
    assert first.etl_time(0) == NOON
    assert first.etl_time(1) == NOON + timedelta(seconds=1), "the clock has not moved on: a second after"
    clock.now = NOON - timedelta(hours=1)  # stepped back
    assert first.etl_time(2) == NOON + timedelta(seconds=2)
    clock.now = NOON + timedelta(minutes=5)
    restarted = BatchClock(LocalStorage(), str(tmp_path), clock)
    assert restarted.etl_time(2) == NOON + timedelta(seconds=2), "replayed after a restart: its own time"
    assert restarted.etl_time(3) == NOON + timedelta(minutes=5)


def test_a_record_is_never_replaced_and_the_oldest_are_pruned(tmp_path: Path) -> None:
    records = tmp_path / ETL_FOLDER
    records.mkdir()
    (records / "7").write_text(f"{EPOCH - 60}\n")  # written before a crash, or by another writer
    clock = BatchClock(LocalStorage(), str(tmp_path), Clock(NOON))
    assert clock.etl_time(7) == NOON - timedelta(minutes=1)
    assert (records / "7").read_text() == f"{EPOCH - 60}\n"
    for batch in range(8, 8 + KEPT):
        clock.etl_time(batch)
    assert sorted(int(p.name) for p in records.iterdir() if not p.name.startswith(".")) == list(range(8, 8 + KEPT))
