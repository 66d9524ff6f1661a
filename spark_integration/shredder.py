"""The shred job: enriched events in; deduplicated atomic events, shredded entities and bad rows out.

    python -m spark_integration.shredder --input-folder IN --output-folder OUT --bad-folder BAD \\
        [--manifest sqlite:///path/manifest.db | --duplicate-storage-config BASE64] ...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime

import attrs
from pyspark.sql import DataFrame, SparkSession

from events_manifest import DuplicateStorage
from events_manifest._job_flags import ShredFlags, add_common_flags, add_shred_flags
from events_manifest._jobs.face import Listing, Staging
from events_manifest._snowplow.face import Shred, ShredRequest, ShredSummary, Staged, shred_run
from events_manifest.iglu import ResolverConfig
from spark_integration._shred.plan import LinePlan, write_lines
from spark_integration._spark import enriched
from spark_integration._spark.running import run_job
from spark_integration._spark.scan import BatchScan, scan_batch
from spark_integration._spark.storage import HadoopStorage
from spark_integration.session import local_session


def shred(
    spark: SparkSession,
    input_path: str | list[str],
    output_path: str,
    bad_path: str,
    *,
    manifest: str | DuplicateStorage | None = None,
    etl_time: datetime | None = None,
    item_id: str | None = None,
    processing_table: str | None = None,
    iglu_config: ResolverConfig | None = None,
    synthetic_dedup: bool = True,
    random_synthetic_ids: bool = False,
    cross_batch_synthetic: bool = False,
    overwrite: bool = False,
    rerun: bool = False,
    report: str | None = None,
) -> ShredSummary:
    """Run the shred job on one batch and return its summary (also written as `_summary.json`).

    `manifest` (a URL such as `sqlite:///abs/manifest.db` or `dynamodb://table?region=...`, or a
    picklable manifest) turns on cross-batch dedup; without it only in-batch dedup runs. The run
    is recorded in the manifest's ledger as a run of `item_id` (default: the input), with the
    identity of the files it reads: its etl time is the earliest etl_tstamp of the input, or
    `etl_time` when given, unless an unfinished run of the same item must be finished first; a
    finished item is refused unless `rerun` (see `events_manifest._manifest.ledger`). With `processing_table`
    the item is also recorded as processing, then processed (or failed), in that table of the
    manifest's store (see `events_manifest._manifest.processing`). With `iglu_config` every entity is
    validated against its schema (`events_manifest.iglu`). `cross_batch_synthetic` (needs a
    manifest) also re-identifies kept events whose id an earlier batch stored with another
    fingerprint. `overwrite` replaces what an earlier run of the job wrote in the output and bad
    folders, nothing else. `report` also writes an HTML report to that file.

    Every check (paths, folders, manifest) comes before the first put or deletion; nothing is
    written unless every line is accounted for and the manifest answered
    (`events_manifest._snowplow.shred_run`).
    """
    request = ShredRequest(
        (input_path,) if isinstance(input_path, str) else tuple(input_path),
        output_path,
        bad_path,
        manifest=manifest,
        etl_time=etl_time,
        item_id=item_id,
        processing_table=processing_table,
        iglu=iglu_config,
        synthetic_dedup=synthetic_dedup,
        random_synthetic_ids=random_synthetic_ids,
        cross_batch_synthetic=cross_batch_synthetic,
        overwrite=overwrite,
        rerun=rerun,
        report=report,
    )
    return shred_run.run(request, _SparkShred(spark))


@attrs.define
class _SparkShred:
    """The shred run's engine on Spark (`shred_run.ShredEngine`): the batch read once, scanned,
    then decided and written by two concurrent Spark jobs (`_shred.plan`)."""

    spark: SparkSession
    storage: HadoopStorage = attrs.field(
        default=attrs.Factory(lambda self: HadoopStorage(self.spark), takes_self=True), init=False
    )
    lines: DataFrame | None = attrs.field(default=None, init=False)

    def absolute(self, path: str) -> str:
        return self.storage.absolute(path)

    def read(self, inputs: Sequence[str]) -> Listing:
        self.lines = enriched.load_enriched(self.spark, list(inputs))  # listed once: every read reads these files
        return self.storage.files_of(self.lines, roots=inputs)

    def scan(self, iglu: ResolverConfig | None) -> BatchScan:
        return scan_batch(self._lines, iglu)

    def write(self, staging: Staging, scan: BatchScan, shred: Shred) -> Staged:
        plan = LinePlan(self._lines, shred)
        return write_lines(
            self.spark,
            staging,
            {"unshared": lambda: plan.unshared(scan.shared_keys), "shuffled": lambda: plan.shuffled(scan.shared_keys)},
        )

    @property
    def _lines(self) -> DataFrame:
        assert self.lines is not None, "read before scan and write"
        return self.lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spark_integration.shredder",
        description="Shred enriched events: dedup (in-batch, cross-batch, synthetic), atomic events, "
        "shredded entities and bad rows.",
    )
    add_shred_flags(parser)
    add_common_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def job() -> int:
        flags = ShredFlags.of(args)
        request = attrs.evolve(flags.request, manifest=flags.manifest.open())
        spark = local_session(args.master, verbose=args.verbose)
        summary = shred_run.run(request, _SparkShred(spark))
        print(summary.table())
        if request.report:
            print(f"report: {request.report}")
        return 0

    return run_job("shredder", job, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
