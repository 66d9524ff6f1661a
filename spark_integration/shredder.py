"""The shred job: enriched events in; deduplicated atomic events, shredded entities and bad rows out.

    python -m spark_integration.shredder --input-folder IN --output-folder OUT --bad-folder BAD \\
        [--manifest sqlite:///path/manifest.db | --duplicate-storage-config BASE64] ...
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import attrs
from pyspark.sql import DataFrame, SparkSession

from events_manifest import DuplicateStorage, ManifestConfigError, __version__
from events_manifest._job_flags import ShredFlags, add_common_flags, add_manifest_flags
from events_manifest._jobs.face import (
    INPUT,
    MANIFEST,
    InputMissingError,
    JobRun,
    Listing,
    Place,
    Staging,
    check_places,
    join,
)
from events_manifest._opening.face import ManifestHandle, manifest_files
from events_manifest._snowplow.face import ShredSummary, check_options, legacy_bad_rows, render_report, shred_output
from events_manifest.iglu import Resolver, ResolverConfig
from events_manifest.model import from_epoch_seconds, to_epoch_seconds
from spark_integration._shred.plan import LinePlan, line_plan, write_lines
from spark_integration._spark import enriched
from spark_integration._spark.running import run_job
from spark_integration._spark.scan import BatchScan, scan_batch
from spark_integration._spark.storage import HadoopStorage
from spark_integration.session import local_session

APPLICATION = f"events-manifest shred job {__version__}"
"""How the shred job names itself in a processing table."""


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
    written unless every line is accounted for and the manifest answered.
    """
    checked = _check(
        spark, input_path, output_path, bad_path, manifest, iglu_config, cross_batch_synthetic, overwrite, report
    )
    started = time.monotonic()
    with JobRun.begin(
        checked.opened,
        item_id or ",".join(checked.storage.qualify(source) for source in checked.inputs),
        APPLICATION,
        source=checked.listing.identity(),
        output=checked.storage.qualify(output_path),
        rerun=rerun,
        processing_table=processing_table,
        storage=checked.storage,
        layout=shred_output.LAYOUT,
        folders=[(output_path, "output"), (bad_path, "bad")],
        overwrite=overwrite,
    ) as run:
        scan = scan_batch(checked.lines, iglu_config)
        try:
            etl = run.start(etl_time or scan.etl_time or datetime(1970, 1, 1), explicit=etl_time is not None)
            plan = line_plan(
                checked.lines,
                etl,
                checked.handle,
                legacy_bad_rows.failure_tstamp(datetime.now(UTC)),
                synthetic=synthetic_dedup,
                random_ids=random_synthetic_ids,
                cross_batch_synthetic=cross_batch_synthetic,
                iglu=iglu_config,
            )
            staging = Staging(checked.storage, checked.storage.absolute(output_path))
            written, summary = _stage(spark, checked, staging, plan, scan, etl, output_path, bad_path)
            run.commit(_text(etl), lambda: staging.commit(shred_output.places(written, output_path, bad_path)))
        finally:
            scan.release()
        summary = attrs.evolve(summary, seconds=round(time.monotonic() - started, 3))
        checked.storage.write_text(join(checked.storage.qualify(output_path), shred_output.SUMMARY), summary.to_json())
        if report:
            checked.storage.write_text(report, render_report(summary))
    return summary


@attrs.frozen
class _Checked:
    """What every check before the first put or deletion found: the inputs and the files they
    list, the manifest opened."""

    storage: HadoopStorage
    inputs: list[str]
    lines: DataFrame
    listing: Listing
    handle: ManifestHandle | None
    opened: DuplicateStorage | None


def _check(
    spark: SparkSession,
    input_path: str | list[str],
    output_path: str,
    bad_path: str,
    manifest: str | DuplicateStorage | None,
    iglu_config: ResolverConfig | None,
    cross_batch_synthetic: bool,
    overwrite: bool,
    report: str | None,
) -> _Checked:
    """Every check, in order: options, inputs, output places, Iglu, the manifest."""
    inputs = [input_path] if isinstance(input_path, str) else list(input_path)
    check_options(manifest, cross_batch_synthetic)
    storage = HadoopStorage(spark)
    for source in inputs:
        if not storage.matches(source):
            raise InputMissingError(f"input [{source}] does not exist (or matches no file): nothing was written")
    outputs = [Place("output folder", output_path, folder=True), Place("bad folder", bad_path, folder=True)]
    protected = [*(Place(INPUT, source) for source in inputs), *map(_manifest_file, manifest_files(manifest))]
    check_places(storage, [*outputs, *([Place("--report", report)] if report else [])], protected)
    lines = enriched.load_enriched(spark, inputs)  # listed once: every read of the run reads these files
    listing = storage.files_of(lines)
    if overwrite and not listing.bytes:
        raise ManifestConfigError(_nothing_to_read(storage, inputs))
    if iglu_config is not None:
        Resolver(iglu_config).check_reachable()
    handle = ManifestHandle.of(manifest) if manifest is not None else None
    opened = handle.open() if handle is not None else None  # a missing table or unusable file fails here
    if opened is not None and cross_batch_synthetic:
        opened.entries_of([])  # and a backend that cannot list an id's fingerprints
    return _Checked(storage, inputs, lines, listing, handle, opened)


def _stage(
    spark: SparkSession,
    checked: _Checked,
    staging: Staging,
    plan: LinePlan,
    scan: BatchScan,
    etl: datetime,
    output_path: str,
    bad_path: str,
) -> tuple[list[str], ShredSummary]:
    """Decide, put and write every line under `staging` (the core's engine on every batch, in two
    concurrent Spark jobs); what was written and the summary, every line accounted for. Nothing
    staged stays when anything fails."""
    try:
        written, tally = write_lines(
            spark,
            staging,
            {"unshared": lambda: plan.unshared(scan.shared_keys), "shuffled": lambda: plan.shuffled(scan.shared_keys)},
        )
        summary = ShredSummary.of(
            scan.lines,
            tally.counts,
            tally.entities,
            etl_time=_text(etl),
            manifest=checked.handle.describe() if checked.handle else None,
            input_path=",".join(checked.inputs),
            output_path=output_path,
            bad_path=bad_path,
            seconds=0.0,
        )
        if not summary.balanced:
            raise RuntimeError(f"internal error, nothing written: lines are unaccounted for\n{summary.table()}")
    except BaseException:
        staging.abort()
        raise
    return written, summary


def _manifest_file(path: str) -> Place:
    return Place(MANIFEST, path)


def _text(etl: datetime) -> str:
    return from_epoch_seconds(to_epoch_seconds(etl)).strftime("%Y-%m-%d %H:%M:%S")


def _nothing_to_read(storage: HadoopStorage, inputs: Sequence[str]) -> str:
    """Why an input holds no data the job reads, for the refusal of --overwrite."""
    found = []
    for source in inputs:
        children = storage.children(source) if storage.is_folder(source) else []
        folders = [name + "/" for name in children if storage.is_folder(join(storage.qualify(source), name))]
        hidden = [name for name in children if name.startswith(("_", ".")) and name + "/" not in folders]
        empty = [name for name in children if name not in hidden and name + "/" not in folders]
        parts = [
            f"{what} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
            for what, names in (("subfolders", folders), ("hidden files", hidden), ("empty files", empty))
            if names
        ]
        found.append(f"[{source}]: {'; '.join(parts) if parts else 'nothing at all'}")
    return (
        f"input {', '.join(found)}: no data for the job to read (it reads the files directly in a folder, "
        "not those in subfolders or named _* or .*), and --overwrite would replace the earlier output with an "
        "empty one. Nothing was done: check the input path"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spark_integration.shredder",
        description="Shred enriched events: dedup (in-batch, cross-batch, synthetic), atomic events, "
        "shredded entities and bad rows.",
    )
    parser.add_argument("--input-folder", required=True, help="enriched TSV folder, file or glob (gzip too)")
    parser.add_argument("--output-folder", required=True, help="receives atomic-events/ and shredded-types/")
    parser.add_argument("--bad-folder", required=True, help="receives the bad rows")
    add_manifest_flags(parser, required=False)
    parser.add_argument(
        "--iglu-config",
        metavar="BASE64",
        help="base64 Iglu resolver config: every entity is validated against its schema (file or JSON too)",
    )
    parser.add_argument("--etl-time", help="override the batch etl time, e.g. '2026-11-01 06:00:00' (UTC)")
    parser.add_argument("--no-synthetic-dedup", action="store_true", help="keep events sharing an id as they are")
    parser.add_argument("--random-synthetic-ids", action="store_true", help="v4 ids for synthetic duplicates")
    parser.add_argument(
        "--cross-batch-synthetic",
        action="store_true",
        help="also re-identify events whose id an earlier batch had with another fingerprint (a query per event)",
    )
    parser.add_argument(
        "--item-id",
        help="what this run processes, for the run ledger and the processing table (default: the input folder)",
    )
    parser.add_argument(
        "--processing-manifest-table",
        metavar="TABLE",
        help="record the item as processing, then processed, in this table of the manifest's store; "
        "refuse an item processed already or in progress",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace what an earlier run of the job wrote in the output and bad folders",
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="run an item the ledger says was delivered again, on purpose: its events come out again",
    )
    parser.add_argument("--report", metavar="FILE.html", help="also write a self-contained HTML report")
    add_common_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def job() -> int:
        flags = ShredFlags.of(args)
        manifest = flags.manifest.open()
        summary = shred(
            local_session(args.master, verbose=args.verbose),
            args.input_folder,
            args.output_folder,
            args.bad_folder,
            manifest=manifest,
            etl_time=flags.etl_time,
            item_id=args.item_id,
            processing_table=args.processing_manifest_table,
            iglu_config=flags.iglu,
            synthetic_dedup=not args.no_synthetic_dedup,
            random_synthetic_ids=args.random_synthetic_ids,
            cross_batch_synthetic=args.cross_batch_synthetic,
            overwrite=args.overwrite,
            rerun=args.rerun,
            report=args.report,
        )
        print(summary.table())
        if args.report:
            print(f"report: {args.report}")
        return 0

    return run_job("shredder", job, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
