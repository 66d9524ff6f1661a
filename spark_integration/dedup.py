"""Deduplication of enriched events with Spark functions: natural in-batch, cross-batch through the
manifest, and synthetic in-batch. Rows are shuffled once, by event id; every window reuses it.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from events_manifest.model import to_epoch_seconds
from spark_integration.lines import BAD, CROSS_BATCH, IN_BATCH, KEPT, MANIFEST_ERROR
from spark_integration.manifest_handle import ManifestHandle
from spark_integration.udfs import manifest_put, manifest_taken, missing_fingerprint


def uuid5(namespace: Column, name: Column) -> Column:
    """RFC 4122 UUID version 5 (SHA-1) of a UUID namespace and a text name, as Python's uuid.uuid5."""
    digest = F.sha1(F.concat(F.unhex(F.regexp_replace(namespace, "-", "")), F.encode(name, "UTF-8")))
    variant = F.lower(F.hex(F.conv(F.substring(digest, 17, 1), 16, 10).cast("int").bitwiseAND(3).bitwiseOR(8)))
    return F.concat_ws(
        "-",
        F.substring(digest, 1, 8),
        F.substring(digest, 9, 4),
        F.concat(F.lit("5"), F.substring(digest, 14, 3)),
        F.concat(variant, F.substring(digest, 18, 3)),
        F.substring(digest, 21, 12),
    )


def dedup_natural(events: DataFrame, etl_time: datetime) -> DataFrame:
    """Number each valid event within its (event_id, fingerprint); fill missing fingerprints.

    Adds `rank` (1 = the one to keep: earliest etl, then collector time, then input position) and
    `fingerprint` filled with a UUID derived from the event id, the batch and the line, so an
    event without fingerprint is never a natural duplicate and a rerun gives the same output.
    Expects `events` partitioned by event_id (see `by_event_id`).
    """
    missing = F.col("fingerprint") == ""
    pair = Window.partitionBy("event_id", "valid", "fingerprint").orderBy(
        "etl_us", "collector_us", F.when(missing, F.col("line")), "file", "position"
    )
    numbered = events.withColumn("rank", F.row_number().over(pair))
    return numbered.select(
        *(c for c in numbered.columns if c not in ("rank", "fingerprint")),
        filled_fingerprint(F.col("rank"), etl_time),
        F.when(missing, F.lit(1)).otherwise(F.col("rank")).alias("rank"),
    )


def filled_fingerprint(rank: Column, etl_time: datetime) -> Column:
    """A missing fingerprint becomes a UUID of the event id, the batch and the event's rank among
    its id's fingerprint-less events: never a natural duplicate, and the same on a rerun."""
    batch = F.lit(missing_fingerprint(to_epoch_seconds(etl_time)))
    missing = (F.col("fingerprint") == "") & F.col("valid")
    return (
        F.when(missing, uuid5(F.col("event_id"), F.concat(batch, rank.cast("string"))))
        .otherwise(F.col("fingerprint"))
        .alias("fingerprint")
    )


def by_event_id(events: DataFrame) -> DataFrame:
    """The one shuffle of the job: every later window partitions by event_id and more."""
    return events.repartition("event_id")


def dedup_synthetic(events: DataFrame, *, enabled: bool = True, random_ids: bool = False) -> DataFrame:
    """Mark valid events that still share an id after natural in-batch dedup: `synthetic`, and give
    each a `new_event_id`.

    New ids are UUID v5 of (original id, fingerprint), the same on every rerun, or v4 with
    `random_ids` as in the reference system. The window is by event id alone, so it reuses the
    shuffle and the sort of `dedup_natural`.
    """
    first = F.col("valid") & (F.col("rank") == 1)
    sharing = F.count(F.when(first, F.lit(1))).over(Window.partitionBy("event_id"))
    synthetic = first & (sharing > 1) if enabled else F.lit(False)
    return events.withColumn("synthetic", synthetic).withColumn(
        "new_event_id", F.when(F.col("synthetic"), _new_id(random_ids)).otherwise(F.col("event_id"))
    )


def _new_id(random_ids: bool) -> Column:
    return F.expr("uuid()") if random_ids else uuid5(F.col("event_id"), F.col("fingerprint"))


def dedup_synthetic_cross_batch(
    events: DataFrame, manifest: ManifestHandle, etl_time: datetime, *, random_ids: bool = False
) -> DataFrame:
    """Kept events whose id an earlier batch stored with another fingerprint are synthetic
    duplicates across batches: `synthetic` and `synthetic_across` set, and a new id.

    One manifest query per kept event (after its put); entries of later batches are ignored,
    so a rerun of an older batch gives its first output again.
    """
    wanted = (F.col("status") == KEPT) & ~F.col("synthetic")
    taken = manifest_taken(manifest, to_epoch_seconds(etl_time))(F.col("event_id"), F.col("fingerprint"), wanted)
    events = events.withColumn("synthetic_across", F.coalesce(taken, F.lit(False)))
    return events.withColumn("synthetic", F.col("synthetic") | F.col("synthetic_across")).withColumn(
        "new_event_id", F.when(F.col("synthetic_across"), _new_id(random_ids)).otherwise(F.col("new_event_id"))
    )


def dedup_cross_batch(events: DataFrame, manifest: ManifestHandle | None, etl_time: datetime) -> DataFrame:
    """Put each first-of-its-pair valid event, under its original id, to the manifest; set `status`.

    Synthetic duplicates are put too: a later re-delivery of one of them is then a natural
    duplicate across batches, as it should be.
    """
    first = F.col("valid") & (F.col("rank") == 1)
    status = F.when(~F.col("valid"), F.lit(BAD)).when(~first, F.lit(IN_BATCH))
    if manifest is None:
        return events.withColumn("status", status.otherwise(F.lit(KEPT))).withColumn("manifest_error", F.lit(None))
    etl = F.lit(to_epoch_seconds(etl_time)).cast("long")
    events = events.withColumn("put", manifest_put(manifest)(F.col("event_id"), F.col("fingerprint"), first, etl))
    status = (
        status.when(F.col("put.error").isNotNull(), F.lit(MANIFEST_ERROR))
        .when(~F.col("put.accepted"), F.lit(CROSS_BATCH))
        .otherwise(F.lit(KEPT))
    )
    return events.withColumn("status", status).withColumn("manifest_error", F.col("put.error")).drop("put")
