"""Reading enriched events (SPEC §4) into Spark, and the cheap per-line keys of the batch scan.

Lines are checked one Arrow batch at a time in Python (`fields` for the fields, `sdj` for the
JSON columns, both called by `udfs`); the scan reads only the first 7 fields, in the JVM.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_integration.fields import (
    COLLECTOR_TSTAMP,
    ETL_TSTAMP,
    EVENT_ID,
    TSTAMP_PATTERN,
    UUID_PATTERN,
)
from spark_integration.udfs import checked_lines


def load_enriched(spark: SparkSession, path: str | list[str]) -> DataFrame:
    """Enriched TSV lines (a folder, file or glob; gzip too) with their position in the input.

    Columns: `line`, `file`, `position` (byte offset of the split, then the row within it): the
    order of (file, position) is the order of lines in the files whatever the partitioning.
    """
    return (
        spark.read.option("lineSep", "\n")
        .text(path)
        .select(
            F.col("value").alias("line"),
            F.input_file_name().alias("file"),
            F.struct(F.input_file_block_start().alias("block"), F.monotonically_increasing_id().alias("row")).alias(
                "position"
            ),
        )
    )


def epoch_micros(column: Column) -> Column:
    """UTC `yyyy-MM-dd HH:mm:ss[.SSSSSS]` text as epoch microseconds (null when it does not parse).

    The pattern fixes the shape; the cast (Spark's fast path, no formatter) checks the calendar.
    """
    parsed = F.concat(column, F.lit("Z")).try_cast("timestamp")
    return F.when(column.rlike(TSTAMP_PATTERN), F.unix_micros(parsed))


def parse(lines: DataFrame) -> DataFrame:
    """Each line (column `line`) split, padded and checked, its JSON columns too (SPEC §4), one
    Arrow batch at a time in Python. Adds `event_id`, `fingerprint`, `collector_tstamp`, `etl_us`,
    `collector_us`, `errors` (every message for the line), `valid` (no errors), `entities` and the
    atomic-events line around the event id (`atomic_before`, `atomic_after`).
    """
    checked = lines.withColumn("checked", checked_lines(F.col("line")))
    return checked.select(*lines.columns, "checked.*").withColumn("valid", F.size("errors") == 0)


def head(line: str = "line") -> Column:
    """The first 7 fields of a line, cut at its 7th tab (the whole line when shorter); the rest is
    never looked at."""
    return F.substring_index(line, "\t", EVENT_ID + 1)


def head_key(head: Column) -> Column:
    """A 64-bit hash of a `head`'s last field, cut from its end: the event id (field 6) on a line
    of 7 fields or more. A shorter line, never an enriched event (they have 108 or more), hashes
    whatever field ends it: it is a bad row whichever way it is decided. Longs group and join
    faster than ids; two ids of one hash only cost a shuffle."""
    return F.xxhash64(F.substring_index(head, "\t", -1))


def event_key(line: str = "line") -> Column:
    """`head_key` of a line."""
    return head_key(head(line))


def batch_keys(lines: DataFrame) -> DataFrame:
    """Each line's `key` (see `event_key`) and `etl_us`, at a fraction of `parse`'s cost: `etl_us`
    where the line's event_id is a UUID and its two timestamps parse (a corrupted line cannot move
    the batch etl time), else null. The head is split once (a hundred-odd bytes decoded): cheaper
    than cutting three fields out of it by tab positions, which the JVM does a byte at a time."""
    first = lines.select(head().alias("head"))
    fields = F.split("head", "\t")
    event_id = F.get(fields, EVENT_ID)  # null past the line's end
    well_formed = event_id.rlike(UUID_PATTERN) & epoch_micros(F.get(fields, COLLECTOR_TSTAMP)).isNotNull()
    return first.select(
        head_key(F.col("head")).alias("key"),
        F.when(well_formed, epoch_micros(F.get(fields, ETL_TSTAMP))).alias("etl_us"),
    )


def with_keys(lines: DataFrame, keys: DataFrame, *, among: bool) -> DataFrame:
    """The lines whose key (see `event_key`) is among `keys` (column `key`, each once), or with
    `among=False` those whose key is not: a semi or anti join, which keeps nothing of `keys`."""
    keyed = lines.withColumn("key", event_key()).join(keys.select("key"), "key", "left_semi" if among else "left_anti")
    return keyed.drop("key")
