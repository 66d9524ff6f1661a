"""Backfill the manifest from enriched archives, so the first deduplicated batch starts warm.

    python -m spark_integration.populator --input-folder ARCHIVE [--since '2026-10-01 00:00:00'] \\
        --manifest sqlite:///abs/manifest.db | --duplicate-storage-config BASE64 [--dynamodb-endpoint URL]

Each event (id, fingerprint) is put with its own etl_tstamp (the earliest, if archived twice), as
the shred job would have. Idempotent: a second run changes nothing. Lines that fail the field
checks, events before `--since` and events without fingerprint (never natural duplicates) are
skipped and counted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import attrs
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from events_manifest import DuplicateStorage, __version__
from events_manifest._job_flags import ManifestFlags, add_common_flags, add_manifest_flags
from events_manifest._jobs.face import JobRun
from events_manifest._opening.face import ManifestHandle
from events_manifest.iglu import Resolver, ResolverConfig
from events_manifest.model import parse_timestamp, to_epoch_seconds
from spark_integration._spark import enriched
from spark_integration._spark.running import run_job
from spark_integration._spark.storage import HadoopStorage
from spark_integration._spark.udfs import manifest_put
from spark_integration.session import local_session

APPLICATION = f"events-manifest populator {__version__}"


@attrs.frozen
class PopulateSummary:
    """What a populator run read, skipped and put."""

    input_lines: int
    invalid_lines: int
    before_since: int
    without_fingerprint: int
    events: int
    """Distinct (event id, fingerprint) pairs put."""
    stored: int
    """Put and accepted: new, or already there under the same etl time (a rerun)."""
    conflicting: int
    """Already there under another etl time: left as they were."""
    failed: int
    seconds: float

    def table(self) -> str:
        rows = [
            ("input lines", self.input_lines),
            ("  invalid (skipped)", self.invalid_lines),
            ("  before --since (skipped)", self.before_since),
            ("  without fingerprint (skipped)", self.without_fingerprint),
            ("events put", self.events),
            ("  stored (new or same etl)", self.stored),
            ("  kept as stored (other etl)", self.conflicting),
            ("  failed", self.failed),
        ]
        width = max(len(label) for label, _ in rows)
        return "\n".join(f"{label:<{width}}  {count:>12,}" for label, count in rows) + f"\n({self.seconds:.1f} s)"


def populate(
    spark: SparkSession,
    input_path: str | list[str],
    manifest: str | DuplicateStorage,
    *,
    since: datetime | None = None,
    iglu_config: ResolverConfig | None = None,
) -> PopulateSummary:
    """Put every archived event's (id, fingerprint, etl_tstamp) into the manifest. Invalid lines
    are skipped as the shred job would make them bad rows: with `iglu_config`, an entity that
    fails its schema too."""
    started = time.monotonic()
    inputs = [input_path] if isinstance(input_path, str) else list(input_path)
    if iglu_config is not None:
        Resolver(iglu_config).check_reachable()
    handle = ManifestHandle.of(manifest)
    storage = HadoopStorage(spark)
    listing = storage.listing(inputs)
    listing.check_whole()
    item = "populate " + ",".join(storage.qualify(source) for source in inputs)
    # a run of the ledger like any other; populating again is harmless (the same puts), so always allowed
    with JobRun.begin(handle.open(), item, APPLICATION, source=listing.identity(), rerun=True) as run:
        run.start(datetime.now(UTC))
        return _populate(spark, inputs, handle, since, iglu_config, started)


def _populate(
    spark: SparkSession,
    inputs: list[str],
    handle: ManifestHandle,
    since: datetime | None,
    iglu_config: ResolverConfig | None,
    started: float,
) -> PopulateSummary:
    lines = enriched.parse(enriched.load_enriched(spark, inputs), iglu_config)
    since_us = to_epoch_seconds(since) * 1_000_000 if since else None
    recent = F.lit(True) if since_us is None else F.col("etl_us") >= since_us
    kind = (
        F.when(~F.col("valid"), F.lit("invalid"))
        .when(~recent, F.lit("before_since"))
        .when(F.col("fingerprint") == "", F.lit("without_fingerprint"))
        .otherwise(F.lit("event"))
    )
    classified = lines.select(kind.alias("kind"), "event_id", "fingerprint", "etl_us").persist()
    try:
        kinds: dict[str, int] = dict(classified.groupBy("kind").count().collect())
        pairs = (
            classified.filter(F.col("kind") == "event")
            .groupBy(F.lower("event_id").alias("event_id"), "fingerprint")
            .agg((F.min("etl_us") / 1_000_000).cast("long").alias("etl"))
        )
        put = F.col("put")
        outcome = (
            F.when(put.getField("error").isNotNull(), F.lit("failed"))
            .when(put.getField("accepted"), F.lit("stored"))
            .otherwise(F.lit("conflicting"))
        )
        wanted = pairs.select("event_id", "fingerprint", F.lit(True).alias("wanted"), F.col("etl").alias("etl_seconds"))
        outcomes: dict[str, int] = dict(
            manifest_put(wanted, handle).select(outcome.alias("outcome")).groupBy("outcome").count().collect()
        )
    finally:
        classified.unpersist()
    return PopulateSummary(
        input_lines=sum(kinds.values()),
        invalid_lines=kinds.get("invalid", 0),
        before_since=kinds.get("before_since", 0),
        without_fingerprint=kinds.get("without_fingerprint", 0),
        events=sum(outcomes.values()),
        stored=outcomes.get("stored", 0),
        conflicting=outcomes.get("conflicting", 0),
        failed=outcomes.get("failed", 0),
        seconds=round(time.monotonic() - started, 3),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark_integration.populator", description="Backfill the manifest from enriched archives."
    )
    parser.add_argument("--input-folder", required=True, help="enriched TSV archive: folder, file or glob (gzip too)")
    parser.add_argument("--since", help="only events with etl_tstamp at or after this, e.g. '2026-10-01 00:00:00'")
    add_manifest_flags(parser, required=True)
    parser.add_argument(
        "--iglu-config", metavar="BASE64", help="Iglu resolver config: skip events whose entities fail their schemas"
    )
    add_common_flags(parser)
    args = parser.parse_args(argv)

    def job() -> int:
        manifest = ManifestFlags.of(args).open()
        assert manifest is not None  # the flags are required
        since = parse_timestamp(args.since) if args.since else None
        iglu = ResolverConfig.parse(args.iglu_config, flag="--iglu-config") if args.iglu_config else None
        summary = populate(
            local_session(args.master, verbose=args.verbose), args.input_folder, manifest, since=since, iglu_config=iglu
        )
        print(summary.table())
        return 0 if summary.failed == 0 else 1

    return run_job("populator", job, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
