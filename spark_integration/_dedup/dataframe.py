"""Generic dedup of any DataFrame through the manifest: the Spark twin of
`events_manifest._dedup.engine.Deduplicator`, on the same engine.

Spark reads the rows and brings each (event id, fingerprint) pair's rows together; the core
identifies and decides them, a batch at a time (`events_manifest._dedup.arrow`): the same ids,
fingerprints, expiry rule, outcomes and reasons as the Python deduplicator. What differs is what
depends on order: a DataFrame has none, so expiry is judged against the batch's latest value
(not the latest so far), and the first row of a pair is the first in input position.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType

import attrs
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from events_manifest import DuplicateStorage, ManifestConfigError
from events_manifest._dedup.face import (
    CLASSIFIED,
    ERROR,
    EVENT_ID,
    FINGERPRINT,
    IDENTIFIED,
    OUTCOME,
    REASON,
    SECONDS,
    ClassifyRows,
    Expiry,
    Identify,
    IdentifyRows,
    Outcome,
    check_specs,
)
from events_manifest._manifest.face import Run
from events_manifest._opening.face import ManifestHandle
from events_manifest.model import from_epoch_seconds, to_epoch_seconds
from spark_integration._spark.api import spark_schema

POSITION = "_dedup_position"


@attrs.define
class DedupResult:
    """The input's rows in four DataFrames (`errors` has a `reason` column), the etl time used, and
    the run's record in the manifest's ledger.

    They share one cached classification: the manifest is asked once, by the first action. Should
    Spark recompute it, the puts repeat with the same etl time and are accepted again, so the
    outcome does not change. Once the unique rows are delivered, `finish()` records the run as
    finished (or use the result as a context manager, which also releases the cache): until then
    the ledger holds it as running, and once this process ends, as stopped.
    """

    unique: DataFrame
    duplicates: DataFrame
    expired: DataFrame
    errors: DataFrame
    etl_time: datetime
    classified: DataFrame
    run: Run | None = None
    manifest: ManifestHandle | None = None

    def counts(self) -> dict[str, int]:
        """Rows per outcome, in one pass."""
        found = {row[0]: row[1] for row in self.classified.groupBy(OUTCOME).count().collect()}
        return {outcome.value: found.get(outcome.value, 0) for outcome in Outcome}

    def finish(self) -> None:
        """Record the run as finished: its unique rows are delivered."""
        if self.run is not None and self.manifest is not None and not self.run.finished:
            self.run = self.manifest.open().finish_run(self.run)

    def abandon(self) -> None:
        """Record the run as failed: a rerun of its item finishes it."""
        if self.run is not None and self.manifest is not None and not self.run.finished:
            self.manifest.open().abandon_run(self.run)

    def unpersist(self) -> None:
        self.classified.unpersist()

    def __enter__(self) -> DedupResult:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.finish() if exc_type is None else self.abandon()
        finally:
            self.unpersist()


def deduplicate(
    df: DataFrame,
    key: Sequence[str],
    fingerprint: Sequence[str] | None = None,
    manifest: str | DuplicateStorage | ManifestHandle | None = None,
    etl_time: datetime | None = None,
    expiry: Expiry | None = None,
    *,
    item: str | None = None,
    rerun: bool = False,
) -> DedupResult:
    """Sort the rows of `df` into unique, duplicates, expired and errors.

    In-batch: one row per (key, fingerprint) is kept, the first in input position. Cross-batch:
    with a `manifest` (URL, picklable manifest or handle), a row whose pair an earlier run stored
    under another etl time is a duplicate; the run is recorded in the manifest's ledger (as a run
    of `item`, or one of its own), which hands it its etl time, `etl_time` when given; a delivered
    item runs again only with `rerun`. `expiry`: a row older than the batch's latest expiry value
    minus the period is expired. A missing or null key or fingerprint field, or an unreadable expiry
    value, is an error.
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
    columns = tuple(df.columns)
    identify = IdentifyRows(Identify(list(key), list(fingerprint) if fingerprint else None, expiry), columns)
    positioned = df.select("*", F.monotonically_increasing_id().alias(POSITION))
    identified = positioned.mapInArrow(identify, _plus(positioned, IDENTIFIED))
    latest = identified.filter(F.col(ERROR).isNull()).agg(F.max(SECONDS)).first()[0] if expiry else None  # type: ignore[index]

    handle = manifest if isinstance(manifest, ManifestHandle) or manifest is None else ManifestHandle.of(manifest)
    requested = etl_time or datetime.now(UTC)
    run = None
    if handle is not None:  # recorded before the first put
        run = handle.open().start_run(item, requested, explicit=etl_time is not None, rerun=rerun)
    etl = run.etl_time if run is not None else from_epoch_seconds(to_epoch_seconds(requested))

    together = identified.repartition(EVENT_ID, FINGERPRINT).sortWithinPartitions(EVENT_ID, FINGERPRINT, POSITION)
    decide = ClassifyRows(handle, to_epoch_seconds(etl), expiry, latest, columns)
    classified = together.mapInArrow(decide, _plus(df, CLASSIFIED)).persist()

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
        run=run,
        manifest=handle,
    )


def _plus(df: DataFrame, added: pa.Schema) -> StructType:
    """The Spark schema of `df`'s columns followed by `added`'s."""
    return StructType([*df.schema.fields, *spark_schema(added).fields])
