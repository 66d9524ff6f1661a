"""Generic dedup of any DataFrame, by key columns, in-batch with Spark functions and across batches
through the manifest: the Spark twin of `events_manifest.dedup.Deduplicator`.

Keys become manifest ids and fingerprints exactly as in the plain-Python deduplicator (UUID text
as is, other keys UUID v5 of their text; fingerprint fields hashed the same way), so both can
share one manifest. The whole-record default fingerprint is `canonical_hash` of the row, as the
plain-Python deduplicator hashes a record (see docs/spark-dedup.md for what agrees and what cannot).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import attrs
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from events_manifest import DuplicateStorage, ManifestConfigError
from events_manifest.dedup import KEY_NAMESPACE, Expiry, Outcome, check_specs
from events_manifest.handle import ManifestHandle
from events_manifest.model import UUID_TEXT, from_epoch_seconds, to_epoch_seconds
from spark_integration.udfs import manifest_put, record_hashes

OUTCOME, REASON = "_dedup_outcome", "_dedup_reason"
UUID_PATTERN = f"(?i)^{UUID_TEXT.pattern}$"


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


@attrs.frozen
class DedupResult:
    """The input's rows in four DataFrames (`errors` has a `reason` column), and the etl time used.

    They share one cached classification: the manifest is asked once, by the first action. Should
    Spark recompute it, the puts repeat with the same etl time and are accepted again (a rerun), so
    the outcome does not change.
    """

    unique: DataFrame
    duplicates: DataFrame
    expired: DataFrame
    errors: DataFrame
    etl_time: datetime
    classified: DataFrame

    def counts(self) -> dict[str, int]:
        """Rows per outcome, in one pass."""
        found = {row[0]: row[1] for row in self.classified.groupBy(OUTCOME).count().collect()}
        return {outcome.value: found.get(outcome.value, 0) for outcome in Outcome}

    def unpersist(self) -> None:
        self.classified.unpersist()


def _text(df: DataFrame, name: str) -> Column:
    """A column as key text: strings as they are, other values as JSON (as `key_text` does)."""
    kind = df.schema[name].dataType
    column = F.col(name)
    if isinstance(kind, T.StringType):
        return column
    if isinstance(kind, T.NumericType | T.BooleanType):
        return column.cast("string")
    wrapped = F.to_json(F.array(column))  # `[value]`: to_json needs a container
    return wrapped.substr(F.lit(2), F.length(wrapped) - 2)


def _seconds(df: DataFrame, name: str) -> Column:
    """An expiry column as epoch seconds: timestamps, ISO 8601 text, or numbers of seconds."""
    kind = df.schema[name].dataType
    column = F.col(name)
    if isinstance(kind, T.TimestampType | T.TimestampNTZType | T.DateType):
        return F.unix_micros(column.cast("timestamp")) / 1e6
    if isinstance(kind, T.NumericType):
        return column.cast("double")
    return F.unix_micros(F.try_to_timestamp(column)) / 1e6


def _first_error(checks: list[tuple[Column, str]]) -> Column:
    reason = F.lit(None).cast("string")
    for failed, message in reversed(checks):
        reason = F.when(failed, F.lit(message)).otherwise(reason)
    return reason


def deduplicate(
    df: DataFrame,
    key: Sequence[str],
    fingerprint: Sequence[str] | None = None,
    manifest: str | DuplicateStorage | ManifestHandle | None = None,
    etl_time: datetime | None = None,
    expiry: Expiry | None = None,
) -> DedupResult:
    """Sort the rows of `df` into unique, duplicates, expired and errors.

    In-batch: one row per (key, fingerprint) is kept (the earliest by `expiry` when given).
    Cross-batch: with a `manifest` (URL, picklable manifest or handle), a row whose pair an
    earlier run stored under another etl time is a duplicate. `expiry`: a row older than the
    batch's latest expiry value minus the period is expired (a batch has no order, so "latest" is
    the batch's maximum). A null key or fingerprint field, or an unreadable expiry value, is an error.
    """
    check_specs(key, fingerprint, "column names")
    missing = [c for c in [*key, *(fingerprint or []), *([expiry.field] if expiry else [])] if c not in df.columns]
    if not key or missing:
        raise ManifestConfigError(f"columns {missing or key} are not in the DataFrame (it has {df.columns})")
    taken = [c for c in df.columns if c == "reason" or c.startswith("_dedup_")]
    if taken:
        raise ManifestConfigError(
            f"columns {taken} would clash with the errors' `reason` or the dedup's own `_dedup_*` columns: rename them"
        )
    etl = from_epoch_seconds(to_epoch_seconds(etl_time or datetime.now(UTC)))
    columns = df.columns

    key_text = F.concat_ws("\x1f", *(_text(df, c) for c in key))
    event_id = F.when(key_text.rlike(UUID_PATTERN), F.lower(key_text)).otherwise(
        uuid5(F.lit(str(KEY_NAMESPACE)), key_text)
    )
    if fingerprint:
        print_ = F.sha2(F.concat_ws("\x1f", *(_text(df, c) for c in fingerprint)), 256)
    else:
        print_ = record_hashes(F.struct(*(F.col(c) for c in columns)))
    checks = [(F.col(c).isNull(), f"key field [{c}] is null") for c in key]
    checks += [(F.col(c).isNull(), f"fingerprint field [{c}] is null") for c in fingerprint or []]
    rows = df.select("*", F.monotonically_increasing_id().alias("_dedup_position"))
    expired = F.lit(False)
    order = [F.col("_dedup_position")]
    if expiry is not None:
        seconds = _seconds(df, expiry.field)
        checks.append((seconds.isNull(), f"expiry field [{expiry.field}] is missing or not a timestamp"))
        rows = rows.withColumn("_dedup_seconds", seconds)
        latest = rows.agg(F.max("_dedup_seconds").alias("_dedup_latest"))
        rows = rows.crossJoin(F.broadcast(latest))
        expired = F.col("_dedup_seconds") < F.col("_dedup_latest") - expiry.period.total_seconds()
        order.insert(0, F.col("_dedup_seconds"))
    rows = rows.select(
        "*",
        event_id.alias("_dedup_id"),
        print_.alias("_dedup_fingerprint"),
        _first_error(checks).alias("_dedup_error"),
    )
    rows = rows.withColumn("_dedup_expired", F.col("_dedup_error").isNull() & expired)
    candidate = F.col("_dedup_error").isNull() & ~F.col("_dedup_expired")
    pair = Window.partitionBy(candidate, "_dedup_id", "_dedup_fingerprint").orderBy(*order)
    rows = rows.withColumn("_dedup_first", candidate & (F.row_number().over(pair) == 1))

    outcome = (
        F.when(F.col("_dedup_error").isNotNull(), F.lit(Outcome.ERROR.value))
        .when(F.col("_dedup_expired"), F.lit(Outcome.EXPIRED.value))
        .when(~F.col("_dedup_first"), F.lit(Outcome.DUPLICATE.value))
    )
    reason = F.when(F.col("_dedup_error").isNotNull(), F.col("_dedup_error")).when(
        ~F.col("_dedup_expired") & ~F.col("_dedup_first"), F.lit("repeated within this run")
    )
    if manifest is None:
        outcome = outcome.otherwise(F.lit(Outcome.UNIQUE.value))
    else:
        handle = manifest if isinstance(manifest, ManifestHandle) else ManifestHandle.of(manifest)
        put = manifest_put(handle)(
            F.col("_dedup_id"), F.col("_dedup_fingerprint"), F.col("_dedup_first"), F.lit(to_epoch_seconds(etl))
        )
        rows = rows.withColumn("_dedup_put", put)
        outcome = (
            outcome.when(F.col("_dedup_put.error").isNotNull(), F.lit(Outcome.ERROR.value))
            .when(F.col("_dedup_put.accepted"), F.lit(Outcome.UNIQUE.value))
            .otherwise(F.lit(Outcome.DUPLICATE.value))
        )
        reason = reason.when(F.col("_dedup_put.error").isNotNull(), F.col("_dedup_put.error")).when(
            ~F.col("_dedup_put.accepted"), F.lit("seen by an earlier run")
        )
    classified = rows.select(*columns, outcome.alias(OUTCOME), reason.alias(REASON)).persist()

    def only(kind: Outcome) -> DataFrame:
        return classified.filter(F.col(OUTCOME) == kind.value).select(*columns)

    errors = classified.filter(F.col(OUTCOME) == Outcome.ERROR.value).select(*columns, F.col(REASON).alias("reason"))
    return DedupResult(
        unique=only(Outcome.UNIQUE),
        duplicates=only(Outcome.DUPLICATE),
        expired=only(Outcome.EXPIRED),
        errors=errors,
        etl_time=etl,
        classified=classified,
    )
