"""Dedup a Structured Streaming DataFrame through the manifest, one micro-batch at a time.

Each micro-batch gets an etl time recorded in the query's checkpoint folder before its first put,
and is a run of its own in the manifest's ledger (item `stream CHECKPOINT#BATCH`), finished once
its sink has its rows. When Spark replays a batch from the checkpoint (after a crash), the batch
reuses that etl time, so the manifest accepts its puts as a rerun: nothing lost, and (with an
idempotent sink) nothing doubled. The manifest remembers across restarts and beyond any
watermark, up to its ttl.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

from events_manifest import DuplicateStorage
from events_manifest._dedup.face import BatchClock, Expiry
from events_manifest._opening.face import ManifestHandle
from spark_integration._dedup.dataframe import DedupResult, deduplicate
from spark_integration._spark.storage import HadoopStorage


def deduplicate_stream(
    stream: DataFrame,
    *,
    key: Sequence[str],
    manifest: str | DuplicateStorage,
    checkpoint_location: str,
    sink: Callable[[DataFrame, int], None],
    fingerprint: Sequence[str] | None = None,
    expiry: Expiry | None = None,
    rejects: Callable[[DedupResult, int], None] | None = None,
    trigger: dict[str, Any] | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Start a query that writes each micro-batch's unique rows with `sink(df, batch_id)`.

    `sink` should be idempotent per batch id (overwrite a folder named by it, or use a table
    format's transaction id): a replayed batch hands it the same rows again. `rejects`, if given,
    sees the whole `DedupResult` (duplicates, expired, errors) of each batch. `trigger` is passed
    to `DataStreamWriter.trigger`, e.g. `{"availableNow": True}` or `{"processingTime": "1 minute"}`.
    """
    handle = ManifestHandle.of(manifest)
    handle.open()  # a missing table or an unusable file fails here, before the query starts
    clock = BatchClock(HadoopStorage(stream.sparkSession), checkpoint_location)

    def each_batch(batch: DataFrame, batch_id: int) -> None:
        etl_time = clock.etl_time(batch_id)
        item = f"stream {checkpoint_location}#{batch_id}"  # a replayed batch: a rerun, on purpose, same etl time
        with deduplicate(batch, key, fingerprint, handle, etl_time, expiry, item=item, rerun=True) as result:
            sink(result.unique, batch_id)
            if rejects is not None:
                rejects(result, batch_id)

    writer = stream.writeStream.foreachBatch(each_batch).option("checkpointLocation", checkpoint_location)
    if trigger:
        writer = writer.trigger(**trigger)
    if query_name:
        writer = writer.queryName(query_name)
    return writer.start()
