"""Generic dedup over Arrow batches, for an engine that brings a batch's rows together itself (the
Spark dedup): the Python deduplicator's own `Identify` and `Classifier`, a batch at a time.

1. `IdentifyRows` gives each row its event id, fingerprint, expiry value or error;
2. the engine sorts the rows by (event id, fingerprint), then input position, and finds the
   batch's latest expiry value;
3. `ClassifyRows` decides each row in that order, the manifest asked once per Arrow batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs
import pyarrow as pa

from events_manifest._dedup.engine import Classifier, Expiry, Identified, Identify, Seen
from events_manifest._opening.handle import ManifestHandle
from events_manifest.errors import ManifestRequestError
from events_manifest.model import from_epoch_seconds

EVENT_ID, FINGERPRINT, SECONDS, ERROR = "_dedup_id", "_dedup_fingerprint", "_dedup_seconds", "_dedup_error"
OUTCOME, REASON = "_dedup_outcome", "_dedup_reason"
IDENTIFIED = pa.schema(
    [(EVENT_ID, pa.string()), (FINGERPRINT, pa.string()), (SECONDS, pa.float64()), (ERROR, pa.string())]
)
"""What `IdentifyRows` adds to each row."""
CLASSIFIED = pa.schema([(OUTCOME, pa.string()), (REASON, pa.string())])
"""What `ClassifyRows` adds to each row (in place of `IDENTIFIED`)."""


@attrs.frozen
class IdentifyRows:
    """Rows (their `columns`, as records) identified by `identify`, a batch at a time."""

    identify: Identify
    columns: tuple[str, ...]

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            found = [self.identify(record) for record in batch.select(list(self.columns)).to_pylist()]
            added = [pa.array([getattr(f, name) for f in found], field.type) for name, field in _FIELDS]
            yield pa.RecordBatch.from_arrays([*batch.columns, *added], schema=_joined(batch.schema, IDENTIFIED))


_FIELDS = list(zip(("event_id", "fingerprint", "seconds", "error"), IDENTIFIED, strict=True))
"""Each `Identified` attribute and its column, in `Identified`'s order."""
_NAMES = [(field.name, name) for name, field in _FIELDS]


@attrs.frozen
class ClassifyRows:
    """Identified rows, sorted by pair then input position, decided in that order: each batch's
    puts in one manifest call (with `manifest`; without, every new pair is unique). `latest` is
    the batch's latest expiry value. The rows come out with `columns` and `CLASSIFIED`."""

    manifest: ManifestHandle | None
    etl_seconds: int
    expiry: Expiry | None
    latest: float | None
    columns: tuple[str, ...]

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        classifier = Classifier(self.expiry, Seen(sorted_pairs=True), latest=self.latest)
        etl_time = from_epoch_seconds(self.etl_seconds)
        for batch in batches:
            columns = [batch.column(name).to_pylist() for name, _ in _NAMES]
            identified = [Identified(*row) for row in zip(*columns, strict=True)]
            chunk = classifier.prepare(list(range(len(identified))), identified)
            answers: list[bool | ManifestRequestError] = [True] * len(chunk.waiting)
            if self.manifest is not None and chunk.waiting:
                answers = self.manifest.open().try_put_many(chunk.items(etl_time))
            decisions = classifier.finish(chunk, answers)
            outcome = pa.array([d.outcome.value for d in decisions], pa.string())
            reason = pa.array([d.reason for d in decisions], pa.string())
            kept = batch.select(list(self.columns))
            yield pa.RecordBatch.from_arrays([*kept.columns, outcome, reason], schema=_joined(kept.schema, CLASSIFIED))


def _joined(first: pa.Schema, second: pa.Schema) -> pa.Schema:
    return pa.schema([*first, *second])
