"""The shred job's cheap first pass over a batch: its line count, its etl time and the event ids
on more than one line, in the JVM, without splitting any JSON (see docs/development.md)."""

from __future__ import annotations

from datetime import datetime

import attrs
import pyarrow as pa
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from events_manifest._snowplow import parsing
from events_manifest._snowplow.batch import any_valid
from events_manifest.iglu import ResolverConfig
from events_manifest.model import from_epoch_seconds
from spark_integration import _enriched as enriched


@attrs.frozen
class BatchScan:
    """What one cheap pass over a batch finds: its line count, its etl time (the earliest
    etl_tstamp of its valid lines, to the second, so a rerun finds the same: `earliest_etl`), and
    the event ids on more than one line, the only ones dedup has to bring together."""

    lines: int
    etl_time: datetime | None
    keys: DataFrame
    """Column `key` (see `enriched.event_key`), each once: up to `BROADCAST_KEYS` a table held by
    the driver, beyond that cached in Spark (`release()` it when done)."""
    shared_count: int

    @property
    def shared_keys(self) -> DataFrame:
        """The shared ids to join the lines with, sent whole to every task when few enough."""
        return F.broadcast(self.keys) if self.shared_count <= BROADCAST_KEYS else self.keys

    def release(self) -> None:
        self.keys.unpersist()


BROADCAST_KEYS = 2_000_000
"""Up to this many shared ids are sent to every task; beyond, Spark joins them its own way."""


def scan_batch(spark: SparkSession, input_path: str | list[str], iglu: ResolverConfig | None = None) -> BatchScan:
    """Count the lines, find the etl time and the shared ids: one job over the input that splits
    no JSON and shuffles only 64-bit keys; the totals are observed on the way.

    The shared ids come back to the driver (8 bytes each): nothing is cached, and Spark's adaptive
    execution sizes the aggregation's partitions, which it does not do for a cached plan. Only
    past `BROADCAST_KEYS` are they scanned again and cached instead.
    """
    shared, totals = _shared_keys(spark, input_path)
    found = shared.limit(BROADCAST_KEYS + 1).toArrow()  # every partition is read unless there are more
    if found.num_rows <= BROADCAST_KEYS:
        return _batch_scan(spark, input_path, totals, spark.createDataFrame(found), found.num_rows, iglu)
    shared, totals = _shared_keys(spark, input_path)
    shared = shared.persist()
    try:
        return _batch_scan(spark, input_path, totals, shared, shared.count(), iglu)
    except BaseException:
        shared.unpersist()
        raise


def _shared_keys(spark: SparkSession, input_path: str | list[str]) -> tuple[DataFrame, Observation]:
    """The keys on more than one line, with the totals observed while they are found."""
    keys = enriched.batch_keys(enriched.load_enriched(spark, input_path))
    per_key = keys.groupBy("key").agg(F.count(F.lit(1)).alias("lines"), F.min("etl_second").alias("etl_second"))
    totals = Observation("batch totals")
    observed = per_key.observe(totals, F.sum("lines").alias("lines"), F.min("etl_second").alias("etl_second"))
    return observed.filter(F.col("lines") > 1).select("key"), totals


def _batch_scan(
    spark: SparkSession,
    input_path: str | list[str],
    totals: Observation,
    keys: DataFrame,
    shared_count: int,
    iglu: ResolverConfig | None,
) -> BatchScan:
    etl = earliest_etl(spark, input_path, totals.get["etl_second"], iglu)
    return BatchScan(totals.get["lines"] or 0, etl, keys, shared_count)


CHECKED_FIRST = 1000
"""How many lines of the earliest etl second are checked in full before all of them are."""


def earliest_etl(
    spark: SparkSession, input_path: str | list[str], candidate: str | None, iglu: ResolverConfig | None = None
) -> datetime | None:
    """The batch etl time: the earliest etl_tstamp, to the second, of the batch's valid lines.

    `candidate` is the earliest second among lines of the right form (`enriched.batch_keys`); its
    lines are checked in full until one is valid (usually the first), else the next second is
    tried. A line that turns out to be a bad row never sets the etl time.
    """
    lines = enriched.load_enriched(spark, input_path)
    while candidate is not None:
        of_second = lines.filter(enriched.line_etl_second() == candidate).select("line")
        first = [row.line for row in of_second.take(CHECKED_FIRST)]  # read in the JVM, checked here
        found = any_valid(first, iglu)
        if not found and len(first) == CHECKED_FIRST:  # all invalid so far: check every line, in Spark
            found = bool(enriched.parse(of_second, iglu).filter("valid").select("valid").take(1))
        if found:
            micros = parsing.epoch_micros(pa.array([f"{candidate}.0".encode()], pa.binary()))[0].as_py()
            return from_epoch_seconds(micros // 1_000_000)
        later = enriched.batch_keys(lines).filter(F.col("etl_second") > candidate)
        candidate = later.agg(F.min("etl_second")).first()[0]  # type: ignore[index]
    return None
