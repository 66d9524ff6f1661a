"""The cheap first pass over a batch or run, for the shred job and the transformer: its etl time and
the event ids on more than one line, in the JVM, without splitting any JSON (see
docs/development.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from events_manifest._snowplow.face import ETL_TSTAMP, EVENT_ID, any_valid, parsing
from events_manifest._transformer.face import CANONICAL_ID, CANONICAL_TIMESTAMP, LENIENT_ID, LENIENT_TIMESTAMP
from events_manifest.iglu import ResolverConfig
from events_manifest.model import from_epoch_seconds
from spark_integration._spark import enriched
from spark_integration._spark.api import from_arrow, observation, to_arrow


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


def scan_batch(lines: DataFrame, iglu: ResolverConfig | None = None) -> BatchScan:
    """Count the `lines` (`enriched.load_enriched`), find the etl time and the shared ids: one job
    over the input that splits no JSON and shuffles only 64-bit keys; the totals are observed on
    the way.

    The shared ids come back to the driver (8 bytes each): nothing is cached, and Spark's adaptive
    execution sizes the aggregation's partitions, which it does not do for a cached plan. Only
    past `BROADCAST_KEYS` are they scanned again and cached instead.
    """
    shared, totals = _shared_keys(lines)
    found = to_arrow(shared.limit(BROADCAST_KEYS + 1))  # every partition is read unless there are more
    if found.num_rows <= BROADCAST_KEYS:
        return _batch_scan(lines, totals, from_arrow(lines.sparkSession, found), found.num_rows, iglu)
    shared, totals = _shared_keys(lines)
    shared = shared.persist()
    try:
        return _batch_scan(lines, totals, shared, shared.count(), iglu)
    except BaseException:
        shared.unpersist()
        raise


def _shared_keys(lines: DataFrame) -> tuple[DataFrame, Observation]:
    """The keys on more than one line, with the totals observed on the lines while they are found:
    their count, their earliest etl second (see `enriched.batch_keys`) and a line of that second."""
    keys = enriched.batch_keys(lines)
    totals = observation("batch totals")
    observed = keys.observe(
        totals,
        F.count(F.lit(1)).alias("lines"),
        F.min("etl_second").alias("etl_second"),
        F.min_by("line", "etl_second").alias("line_of_second"),
    )
    per_key = observed.groupBy("key").agg(F.count(F.lit(1)).alias("lines"))  # counts only: a hash aggregation
    return per_key.filter(F.col("lines") > 1).select("key"), totals


def _batch_scan(
    lines: DataFrame,
    totals: Observation,
    keys: DataFrame,
    shared_count: int,
    iglu: ResolverConfig | None,
) -> BatchScan:
    found = totals.get
    etl = earliest_etl(lines, found["etl_second"], iglu, found["line_of_second"])
    return BatchScan(found["lines"] or 0, etl, keys, shared_count)


CHECKED_FIRST = 1000
"""How many lines of the earliest etl second are checked in full before all of them are."""


def earliest_etl(
    lines: DataFrame,
    candidate: str | None,
    iglu: ResolverConfig | None = None,
    line_of_candidate: str | None = None,
) -> datetime | None:
    """The batch etl time: the earliest etl_tstamp, to the second, of the batch's valid `lines`
    (`enriched.load_enriched`). `candidate` is a second at or before it (the scan's, see
    `enriched.batch_keys`), and `line_of_candidate` one of its lines if the scan kept one; from
    there on, only seconds of lines of the valid form (`enriched.line_etl_second`) are read, and
    a line that turns out to be a bad row never sets the etl time (see `earliest_second`).
    """
    found = earliest_second(
        lines,
        candidate,
        enriched.line_etl_second(),
        F.col("line"),
        lambda first: any_valid(first, iglu),
        lambda of_second: bool(enriched.parse(of_second, iglu).filter("valid").select("valid").take(1)),
        line_of_candidate,
    )
    if found is None:
        return None
    micros = parsing.epoch_micros(pa.array([f"{found}.0".encode()], pa.binary()))[0].as_py()
    return from_epoch_seconds(micros // 1_000_000)


def earliest_second(
    lines: DataFrame,
    candidate: str | None,
    second: Column,
    line: Column,
    any_good: Callable[[list[Any]], bool],
    any_good_in_spark: Callable[[DataFrame], bool],
    line_of_candidate: Any = None,
) -> str | None:
    """The earliest second (`yyyy-MM-dd HH:mm:ss`, column `second` of `lines`), from `candidate`
    on, at which one of the lines is good: a second's lines (column `line`) are checked on the
    driver (`any_good`) until one is good (usually the first), then, if the first
    `CHECKED_FIRST` are all bad, every one in Spark (`any_good_in_spark`, given column `line`
    only); else the next second is tried. None when no line is good. `line_of_candidate`, a
    line of `candidate`'s second found already, is checked first: when good, nothing is read."""
    if candidate is not None and line_of_candidate is not None and any_good([line_of_candidate]):
        return candidate
    while candidate is not None:
        of_second = lines.filter(second == candidate).select(line.alias("line"))
        first = [row.line for row in of_second.take(CHECKED_FIRST)]  # read in the JVM, checked here
        found = any_good(first)
        if not found and len(first) == CHECKED_FIRST:  # all bad so far: check every line, in Spark
            found = any_good_in_spark(of_second)
        if found:
            return candidate
        later = lines.select(second.alias("second")).filter(F.col("second") > candidate)
        candidate = later.agg(F.min("second")).first()[0]  # type: ignore[index]
    return None


@attrs.frozen
class RunScan:
    """What the transformer's scan of a run finds (see `scan_run`)."""

    keys: DataFrame | None
    """Column `key` (see `enriched.event_key`): the ids on more than one line, each once, few
    enough to send to every task; None when every line must be shuffled instead."""
    earliest: str | None
    """The earliest etl second (`yyyy-MM-dd HH:mm:ss`) among lines whose etl_tstamp has
    `event.CANONICAL_TIMESTAMP`'s shape, a candidate for the batch etl time (`_transformer.rows._run_etl`)."""
    line_of_earliest: bytes | None = None
    """A line of that second, as its bytes (see `earliest_second`)."""


def scan_run(lines: DataFrame) -> RunScan:
    """The transformer's scan of a run's `lines` (column `line`): one job in the JVM over the
    first 7 fields, shuffling only 64-bit keys.

    A good event's id is its event_id field in lower case (`event.CANONICAL_ID`) and its etl time
    is ordered by the text of its etl_tstamp (`event.CANONICAL_TIMESTAMP`), on every line enrichers write.
    A line with a field the reader takes in another shape (`event.LENIENT_ID`, an id such as
    `1-2-3-4-5`; `event.LENIENT_TIMESTAMP`, such as `2026-11-01T06:00:00`) would escape both:
    with one, or more shared ids than `BROADCAST_KEYS`, `keys` is None."""
    fields = enriched.head_fields(enriched.head())
    event_id, etl = F.get(fields, EVENT_ID), F.get(fields, ETL_TSTAMP)
    other_id = ~event_id.rlike(CANONICAL_ID) & event_id.rlike(LENIENT_ID)  # the usual id: one pattern
    other_time = ~etl.rlike(CANONICAL_TIMESTAMP) & etl.rlike(LENIENT_TIMESTAMP)
    keyed = lines.select(
        "line",
        enriched.event_key().alias("key"),
        etl_second(etl).alias("etl_second"),
        F.coalesce(other_id | other_time, F.lit(False)).alias("other"),
    )
    totals = observation("run scan")
    found = _more_than_once(
        keyed.observe(
            totals,
            F.min("etl_second").alias("etl_second"),
            F.min_by(enriched.line_bytes(), "etl_second").alias("line"),
            F.count_if("other").alias("other"),
        )
    )
    if found.num_rows > BROADCAST_KEYS:
        return RunScan(None, None)
    spark, seen = lines.sparkSession, totals.get
    line = None if seen["line"] is None else bytes(seen["line"])
    return RunScan(None if seen["other"] else from_arrow(spark, found), seen["etl_second"], line)


def shared_ids(parsed: DataFrame) -> DataFrame | None:
    """The ids of more than one good event of a parsed run (`PARSED` rows, column `key`), each
    once; None past `BROADCAST_KEYS`."""
    found = _more_than_once(parsed.filter("good"))
    return None if found.num_rows > BROADCAST_KEYS else from_arrow(parsed.sparkSession, found)


def _more_than_once(keyed: DataFrame) -> pa.Table:
    """The keys (column `key`) on more than one row of `keyed`, each once, up to one past
    `BROADCAST_KEYS`: every partition is read unless there are more."""
    shared = keyed.groupBy("key").agg(F.count(F.lit(1)).alias("lines")).filter(F.col("lines") > 1)
    return to_arrow(shared.select("key").limit(BROADCAST_KEYS + 1))


def etl_time(seconds: int | None) -> datetime | None:
    """A batch etl time of epoch seconds; None (the run then takes now) for none, or one a
    datetime cannot hold (a year before 1)."""
    try:
        return None if seconds is None else from_epoch_seconds(seconds)
    except (ValueError, OverflowError):
        return None


def etl_second(etl: Column) -> Column:
    """An etl_tstamp's second (`yyyy-MM-dd HH:mm:ss`), where its text orders it (`event.CANONICAL_TIMESTAMP`)."""
    return F.when(etl.rlike(CANONICAL_TIMESTAMP), F.substring(etl, 1, 19))
