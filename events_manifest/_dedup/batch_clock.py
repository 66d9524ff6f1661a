"""The etl time of each micro-batch of a streaming dedup, recorded once in its checkpoint folder:
a batch Spark replays after a crash is a rerun of the same etl time, so the manifest takes its puts
again (docs/spark-dedup.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import attrs

from events_manifest._jobs.storage import Storage, join
from events_manifest.model import from_epoch_seconds, to_epoch_seconds

ETL_FOLDER = "events_manifest_etl"
"""The records' folder under the query's checkpoint: a file a batch id, holding its epoch seconds."""
KEPT = 100
"""How many of the latest batches keep their record (Spark replays the last one only)."""


@attrs.frozen
class BatchClock:
    """Each micro-batch's etl time, in `<checkpoint>/events_manifest_etl/<batch id>`: the current
    time, or one second after the previous batch's if the clock has not moved on (every batch its
    own etl time). A record is created once, never replaced: a batch whose record exists (written
    before a crash, or by a racing writer) takes the time it holds."""

    storage: Storage
    checkpoint: str
    now: Callable[[], datetime] = lambda: datetime.now(UTC)

    def etl_time(self, batch_id: int) -> datetime:
        path, previous = self._record(batch_id), self._record(batch_id - 1)
        floor = to_epoch_seconds(self._read(previous)) + 1 if self.storage.exists(previous) else 0
        seconds = max(to_epoch_seconds(self.now()), floor)
        taken = self.storage.record_once(path, f"{seconds}\n")
        self.storage.delete(self._record(batch_id - KEPT))
        return from_epoch_seconds(int(taken.strip()))

    def _record(self, batch_id: int) -> str:
        return join(self.checkpoint, ETL_FOLDER, str(batch_id))

    def _read(self, path: str) -> datetime:
        return from_epoch_seconds(int(self.storage.read_text(path).strip()))
