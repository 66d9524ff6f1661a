"""The transformer: the modern RDB Transformer's batch job (wide-row JSON) on PySpark.

    python -m spark_integration.transformer --iglu-config VALUE --config VALUE \\
        [--duplicate-storage-config VALUE | --manifest URL]

Each sub-folder of the config's `input` is a run, transformed into the folder of the same name
under `output.path` and committed by its `shredding_complete.json` (docs/transformer.md). Spark
reads, shuffles and writes; the core's engine (`events_manifest._transformer`) decides.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from pyspark.sql import SparkSession

from events_manifest import DuplicateStorage, ManifestConfigError
from events_manifest._job_flags import (
    TransformerFlags,
    add_common_flags,
    add_config_flags,
)
from events_manifest._jobs.face import INPUT, MANIFEST, Place, check_places
from events_manifest._opening.face import manifest_files
from events_manifest._transformer.face import (
    Progress,
    Reporter,
    RunResult,
    TransformerConfig,
    TransformerConfigError,
    run_all,
    sentry_of,
)
from events_manifest.iglu import ResolverConfig
from spark_integration._spark.running import refused, run_job
from spark_integration._spark.storage import HadoopStorage
from spark_integration._transformer.job import Job
from spark_integration._transformer.rows import write_run
from spark_integration.session import local_session


def transform(
    spark: SparkSession,
    config: TransformerConfig,
    *,
    iglu: ResolverConfig | None = None,
    manifest: str | DuplicateStorage | None = None,
    random_synthetic_ids: bool = False,
    rerun: bool = False,
    report: Callable[[str], None] = print,
    warn: Callable[[str], None] = lambda text: print(text, file=sys.stderr),
    progress: Progress | None = None,
) -> list[RunResult]:
    """Transform every run of `config.input` not yet committed under `config.output`, in order,
    each committed alone and reported (`report`) as it is; the first failure stops there (the runs
    before it are committed). Runs a killed or failed invocation left are finished first
    (`run_flow.run_all`, on Spark's storage, each run's rows written by Spark)."""
    progress = progress if progress is not None else Progress()
    config.check_supported(manifest=manifest is not None, iglu=iglu is not None)
    storage = HadoopStorage(spark)
    if not storage.is_folder(config.input):
        raise TransformerConfigError(f"input [{config.input}] is not a folder: nothing was written")
    protected = [Place(INPUT, config.input), *(Place(MANIFEST, path) for path in manifest_files(manifest))]
    check_places(storage, [Place("output folder", config.output, folder=True)], protected)
    metrics = Reporter(config.monitoring, out=report, err=warn)  # a refusal (no region) before anything is written
    job = Job.on(spark, storage, config, iglu, manifest, random_ids=random_synthetic_ids, rerun=rerun)
    return run_all(job, write_run, metrics, progress, report, warn)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spark_integration.transformer",
        description="The RDB Transformer's batch job (wide-row JSON): every run folder of the input deduplicated "
        "(natural, cross-batch, synthetic) and transformed, committed by its shredding_complete.json.",
    )
    add_config_flags(parser)
    parser.add_argument("--random-synthetic-ids", action="store_true", help="v4 ids for synthetic duplicates")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="transform again a run the manifest's ledger says was delivered (its output folder deleted), on purpose",
    )
    add_common_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        flags = TransformerFlags.of(args, TransformerConfig.parse)
        sentry = sentry_of(
            flags.config.monitoring.sentry_dsn, lambda line: print(f"transformer: warning: {line}", file=sys.stderr)
        )
    except ManifestConfigError as e:  # the transformer's config, or the manifest's
        return refused(e)
    progress = Progress()

    def job() -> int:
        manifest = flags.manifest.open()
        spark = local_session(args.master, verbose=args.verbose)
        try:
            transform(
                spark,
                flags.config,
                iglu=flags.iglu,
                manifest=manifest,
                random_synthetic_ids=args.random_synthetic_ids,
                rerun=args.rerun,
                progress=progress,
            )
        except ManifestConfigError as e:
            if progress.started:
                raise
            return refused(e)  # refused before anything was read or written
        return 0

    return run_job(
        "transformer",
        job,
        verbose=args.verbose,
        interrupted=progress.interrupted,
        failed=progress.failed,
        on_error=None if sentry is None else sentry.report,
    )


if __name__ == "__main__":
    sys.exit(main())
