"""Reading enriched events into Spark, and the cheap per-line keys of the batch scan.

Lines are checked one Arrow batch at a time in Python (`fields` for the fields, `sdj` for the
JSON columns, both called by `udfs`); the scan reads only the first 7 fields, in the JVM.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from events_manifest._snowplow.face import COLLECTOR_TSTAMP, ETL_TSTAMP, EVENT_ID, TSTAMP_PATTERN, UUID_PATTERN
from events_manifest.iglu import ResolverConfig
from spark_integration._spark.storage import HadoopStorage
from spark_integration._spark.udfs import checked_lines


def load_enriched(spark: SparkSession, path: str | list[str]) -> DataFrame:
    """Enriched TSV lines (a folder, file or glob; gzip too) with their position in the input.

    Lines end as Hadoop's text input ends them: at `\n`, `\r\n` or a lone `\r`, none kept.
    Columns: `line`, `file`, `position` (byte offset of the split, then the row within it): the
    order of (file, position) is the order of lines in the files whatever the partitioning.
    """
    storage = HadoopStorage(spark)
    paths = [storage.absolute(p) for p in ([path] if isinstance(path, str) else path)]
    return spark.read.text(paths).select(
        F.col("value").alias("line"),
        F.input_file_name().alias("file"),
        F.struct(F.input_file_block_start().alias("block"), F.monotonically_increasing_id().alias("row")).alias(
            "position"
        ),
    )


def parse(lines: DataFrame, iglu: ResolverConfig | None = None) -> DataFrame:
    """Each line (column `line`) split, padded and checked, its JSON columns too (docs/enriched-events.md), one
    Arrow batch at a time in Python. Adds `event_id`, `fingerprint`, `collector_tstamp`, `etl_us`,
    `collector_us`, `errors` (every message for the line), `valid` (no errors), `entities` and the
    atomic-events line around the event id (`atomic_before`, `atomic_after`).
    """
    return checked_lines(lines, iglu).select(*lines.columns, "checked.*")


def line_bytes() -> Column:
    """A line (column `line`) as its bytes, for Python: a line that is not UTF-8 is written as the
    JVM does."""
    return F.col("line").cast("binary")


def head(line: str = "line") -> Column:
    """The first 7 fields of a line, cut at its 7th tab (the whole line when shorter); the rest is
    never looked at."""
    return F.substring_index(line, "\t", EVENT_ID + 1)


def head_fields(head: Column) -> Column:
    """A `head`'s fields, an array: `F.get` of a field past a shorter line's end is null."""
    return F.split(head, "\t")


def head_key(head: Column) -> Column:
    """A 64-bit hash of a `head`'s last field, cut from its end: the event id (field 6) on a line
    of 7 fields or more. An id of hex digits and dashes hashes as the bytes its digits spell, so
    a UUID hashes alike in any case (the transformer reads it so; any other id is a bad row or, in
    a shape the reader takes, sends the whole run through the shuffle: `_spark.scan.scan_run`); any
    other text as itself. Spark's `lower` would go through ICU and its `translate` looks each
    character up in a map: either cost a run more than the scan's read. A shorter line, never an
    enriched event (they have 108 or more), hashes whatever field ends it: it is a bad row
    whichever way it is decided. Longs group and join faster than ids; two ids of one hash only
    cost a shuffle."""
    event_id = F.substring_index(head, "\t", -1)
    digits = F.unhex(F.replace(event_id, F.lit("-"), F.lit("")))  # null unless hex
    return F.xxhash64(F.coalesce(digits, event_id.cast("binary")))


def event_key(line: str = "line") -> Column:
    """`head_key` of a line."""
    return head_key(head(line))


def batch_keys(lines: DataFrame) -> DataFrame:
    """Each line (column `line`) with its `key` (see `event_key`) and `etl_second`, at a fraction
    of `parse`'s cost: the first 19 characters of etl_tstamp (`yyyy-MM-dd HH:mm:ss`) on a line of
    7 fields or more whose etl_tstamp is long enough to be valid, else null. Every valid line has
    one, so the earliest is at or before the earliest valid line's: a candidate, which
    `_spark.scan.earliest_etl` checks (on its line first) before it is the batch etl time. No pattern
    is matched here: three Java regexes a line cost the scan more than its read."""
    first = lines.select("line", head().alias("head"))
    fields = head_fields(F.col("head"))
    etl = F.get(fields, ETL_TSTAMP)
    shaped = F.get(fields, EVENT_ID).isNotNull() & (F.length(etl) >= MIN_TSTAMP)
    return first.select(
        "line", head_key(F.col("head")).alias("key"), F.when(shaped, F.substring(etl, 1, 19)).alias("etl_second")
    )


MIN_TSTAMP = len("yyyy-MM-dd HH:mm:ss.f")
"""The length of the shortest valid timestamp (`parsing.TSTAMP_PATTERN`)."""


def line_etl_second(line: str = "line") -> Column:
    """The etl second (`yyyy-MM-dd HH:mm:ss`) of a line whose event id and both timestamps have
    the form of valid ones (the patterns are `events_manifest._snowplow.parsing`'s), else null."""
    fields = head_fields(head(line))
    well_formed = (
        F.get(fields, EVENT_ID).rlike(UUID_PATTERN)
        & F.get(fields, COLLECTOR_TSTAMP).rlike(TSTAMP_PATTERN)
        & F.get(fields, ETL_TSTAMP).rlike(TSTAMP_PATTERN)
    )
    return F.when(well_formed, F.substring(F.get(fields, ETL_TSTAMP), 1, 19))


def keyed(lines: DataFrame) -> DataFrame:
    """The lines with their `key` (see `event_key`)."""
    return lines.withColumn("key", event_key())


def with_keys(lines: DataFrame, keys: DataFrame, *, among: bool) -> DataFrame:
    """The lines whose key (see `event_key`) is among `keys` (column `key`, each once), or with
    `among=False` those whose key is not, with their `key`: a semi or anti join, which keeps
    nothing of `keys`."""
    return keyed(lines).join(keys.select("key"), "key", "left_semi" if among else "left_anti")
