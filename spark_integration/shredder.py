"""The shred job: enriched events in; deduplicated atomic events, shredded entities and bad rows out.

    python -m spark_integration.shredder --input-folder IN --output-folder OUT --bad-folder BAD \\
        [--manifest sqlite:///path/manifest.db | --duplicate-storage-config BASE64] ...
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
from pyspark import inheritable_thread_target
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from events_manifest import (
    DuplicateStorage,
    ManifestConfigError,
    ManifestError,
    ManifestUnavailableError,
    __version__,
)
from events_manifest.errors import RunConflictError
from events_manifest.handle import ManifestHandle
from events_manifest.iglu import Resolver, ResolverConfig
from events_manifest.model import from_epoch_seconds, parse_timestamp, to_epoch_seconds
from events_manifest.processing import ItemRecord, ProcessingManifest, check_table_name
from events_manifest.runs import Run
from events_manifest.snowplow import dedup, parsing, shred_output
from events_manifest.snowplow.batch import Shred, any_valid
from events_manifest.snowplow.dedup import Dedup, check_options
from events_manifest.snowplow.report import render_report
from events_manifest.snowplow.summary import BUCKETS, ShredSummary
from spark_integration import enriched, output, udfs
from spark_integration.cli_flags import add_manifest_flags, manifest_of, run_job
from spark_integration.folders import JobFolders
from spark_integration.session import local_session

log = logging.getLogger(__name__)


def validate(spark: SparkSession, input_path: str | list[str]) -> DataFrame:
    """Every input line with `valid`, `errors` (all messages for the line), its `entities` and the
    rest of `enriched.parse`."""
    return enriched.parse(enriched.load_enriched(spark, input_path))


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


def scan_batch(spark: SparkSession, input_path: str | list[str], iglu: ResolverConfig | None = None) -> BatchScan:
    """Count the lines, find the etl time and the shared ids: one job over the input that splits
    no JSON and shuffles only 64-bit keys; the totals are observed on the way.

    The shared ids come back to the driver (8 bytes each): nothing is cached, and Spark's adaptive
    execution sizes the aggregation's partitions, which it does not do for a cached plan. Only
    past `BROADCAST_KEYS` are they scanned again and cached instead.
    """
    shared, totals = _shared_keys(spark, input_path)
    found = shared.limit(BROADCAST_KEYS + 1).toArrow()  # every partition is read unless there are more
    if found.num_rows <= BROADCAST_KEYS:
        return _batch_scan(spark, input_path, totals, spark.createDataFrame(found), found.num_rows, iglu)
    shared, totals = _shared_keys(spark, input_path)
    shared = shared.persist()
    try:
        return _batch_scan(spark, input_path, totals, shared, shared.count(), iglu)
    except BaseException:
        shared.unpersist()
        raise


def _shared_keys(spark: SparkSession, input_path: str | list[str]) -> tuple[DataFrame, Observation]:
    """The keys on more than one line, with the totals observed while they are found."""
    keys = enriched.batch_keys(enriched.load_enriched(spark, input_path))
    per_key = keys.groupBy("key").agg(F.count(F.lit(1)).alias("lines"), F.min("etl_second").alias("etl_second"))
    totals = Observation("batch totals")
    observed = per_key.observe(totals, F.sum("lines").alias("lines"), F.min("etl_second").alias("etl_second"))
    return observed.filter(F.col("lines") > 1).select("key"), totals


def _batch_scan(
    spark: SparkSession,
    input_path: str | list[str],
    totals: Observation,
    keys: DataFrame,
    shared_count: int,
    iglu: ResolverConfig | None,
) -> BatchScan:
    etl = earliest_etl(spark, input_path, totals.get["etl_second"], iglu)
    return BatchScan(totals.get["lines"] or 0, etl, keys, shared_count)


CHECKED_FIRST = 1000
"""How many lines of the earliest etl second are checked in full before all of them are."""


def earliest_etl(
    spark: SparkSession, input_path: str | list[str], candidate: str | None, iglu: ResolverConfig | None = None
) -> datetime | None:
    """The batch etl time: the earliest etl_tstamp, to the second, of the batch's valid lines.

    `candidate` is the earliest second among lines of the right form (`enriched.batch_keys`); its
    lines are checked in full until one is valid (usually the first), else the next second is
    tried. A line that turns out to be a bad row never sets the etl time.
    """
    lines = enriched.load_enriched(spark, input_path)
    while candidate is not None:
        of_second = lines.filter(enriched.line_etl_second() == candidate).select("line")
        first = [row.line for row in of_second.take(CHECKED_FIRST)]  # read in the JVM, checked here
        found = any_valid(first, iglu)
        if not found and len(first) == CHECKED_FIRST:  # all invalid so far: check every line, in Spark
            found = bool(enriched.parse(of_second, iglu).filter("valid").select("valid").take(1))
        if found:
            micros = parsing.epoch_micros(pa.array([f"{candidate}.0".encode()], pa.binary()))[0].as_py()
            return from_epoch_seconds(micros // 1_000_000)
        later = enriched.batch_keys(lines).filter(F.col("etl_second") > candidate)
        candidate = later.agg(F.min("etl_second")).first()[0]  # type: ignore[index]
    return None


@attrs.frozen
class LinePlan:
    """How a run turns the lines of a batch into output lines (see `output_lines`): one `Shred`
    (checks, decisions, output lines) on two paths."""

    input_path: str | list[str]
    shred: Shred

    def unshared(self, spark: SparkSession, shared_keys: DataFrame) -> DataFrame:
        """Output lines (`shred_output.LINES_SCHEMA`) of the lines whose id is on no other line (not among
        `shared_keys`, see `BatchScan`): each batch decided where it is read, no shuffle."""
        read = enriched.with_keys(enriched.load_enriched(spark, self.input_path), shared_keys, among=False)
        return udfs.shred_lines(read, self.shred)

    def shuffled(self, spark: SparkSession, shared_keys: DataFrame | None) -> DataFrame:
        """Output lines of the lines whose id is among `shared_keys` (every line without): brought
        together by id in one shuffle, each id's lines decided in one call."""
        read = enriched.load_enriched(spark, self.input_path)
        keyed = enriched.keyed(read) if shared_keys is None else enriched.with_keys(read, shared_keys, among=True)
        return udfs.shred_grouped(keyed, self.shred)


def line_plan(
    input_path: str | list[str],
    etl_time: datetime,
    manifest: ManifestHandle | None,
    failure_tstamp: str,
    *,
    synthetic: bool = True,
    random_ids: bool = False,
    cross_batch_synthetic: bool = False,
    iglu: ResolverConfig | None = None,
) -> LinePlan:
    decide = Dedup(manifest, to_epoch_seconds(etl_time), synthetic, random_ids, cross_batch_synthetic)
    return LinePlan(input_path, Shred(decide, failure_tstamp, iglu))


def output_lines(
    spark: SparkSession,
    input_path: str | list[str],
    etl_time: datetime,
    manifest: ManifestHandle | None,
    failure_tstamp: str,
    *,
    shared_keys: DataFrame | None = None,
    synthetic: bool = True,
    random_ids: bool = False,
    cross_batch_synthetic: bool = False,
) -> DataFrame:
    """Every line a run writes, and a row per batch's counts: `shred_output.LINES_SCHEMA`.

    With `shared_keys` (see `BatchScan`), a line whose id is on no other line is decided where it
    is read, and only the others are shuffled; without, every line is shuffled. Both give the
    same lines: the second path only brings an id's lines together for the same `Shred`.
    """
    plan = line_plan(
        input_path,
        etl_time,
        manifest,
        failure_tstamp,
        synthetic=synthetic,
        random_ids=random_ids,
        cross_batch_synthetic=cross_batch_synthetic,
    )
    if shared_keys is None:
        return plan.shuffled(spark, None)
    return plan.unshared(spark, shared_keys).unionByName(plan.shuffled(spark, shared_keys))


def _manifest_failure(error: Exception) -> ManifestError | None:
    """The manifest error behind a failed Spark job, re-raised on the driver with its own message."""
    match = re.search(r"events_manifest\.errors\.(Manifest\w+Error): (.+)", str(error))
    if match is None:
        return None
    import events_manifest.errors as errors

    kind: type[ManifestError] = getattr(errors, match.group(1), ManifestUnavailableError)
    return kind(match.group(2).strip())


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
) -> ShredSummary:
    """Run the shred job on one batch and return its summary (also written as `_summary.json`).

    `manifest` (a URL such as `sqlite:///abs/manifest.db` or `dynamodb://table?region=...`, or a
    picklable manifest) turns on cross-batch dedup; without it only in-batch dedup runs. The run
    is recorded in the manifest's ledger as a run of `item_id` (default: the input), which hands
    it its etl time: the earliest etl_tstamp of the input, or `etl_time` when given (a rerun on
    purpose), unless an unfinished run of the same item must be finished first (see
    `events_manifest.runs`). With `processing_table` the item is also recorded as processing, then
    processed (or failed), in that table of the manifest's store, and an item processed already or
    being processed is refused (see `events_manifest.processing`). With `iglu_config` every entity
    is validated against its schema (`events_manifest.iglu`): one that fails, or whose schema no
    repository has, makes its event a bad row; an unreachable repository fails the run before
    anything is written. `cross_batch_synthetic` (needs
    a manifest) also re-identifies kept events whose id an earlier batch stored with another
    fingerprint. `overwrite` replaces what
    an earlier run of the job wrote in the output and bad folders, nothing else.

    Every check (paths, folders, manifest) comes before the first put or deletion; nothing is
    written unless every line is accounted for and the manifest answered.
    """
    check_options(manifest, cross_batch_synthetic)
    if processing_table is not None:
        check_table_name(processing_table)
        if manifest is None:
            raise ManifestConfigError(
                "--processing-manifest-table needs a manifest: the table lives in its store (a table of the "
                "SQLite file, a DynamoDB table beside the manifest's); pass --manifest or --duplicate-storage-config"
            )
    if iglu_config is not None:
        Resolver(iglu_config).check_reachable()
    storage = output.Storage(spark)
    inputs = [input_path] if isinstance(input_path, str) else list(input_path)
    folders = JobFolders.prepare(storage, inputs, output_path, bad_path, overwrite)
    try:
        handle = ManifestHandle.of(manifest) if manifest is not None else None
        if handle is not None:
            opened = handle.open()  # in the driver: a missing table or unusable file fails here, before any work
            if cross_batch_synthetic:
                opened.entries_of([])  # and a backend that cannot list an id's fingerprints
        item = item_id or ",".join(storage.qualify(source) for source in inputs)
        tracker = handle.open().processing_manifest(processing_table) if handle and processing_table else None
        claimed = tracker.claim(item, APPLICATION) if tracker else None
        try:
            summary = _shred_claimed(
                spark,
                storage,
                folders,
                input_path,
                output_path,
                bad_path,
                handle,
                etl_time,
                item,
                iglu_config,
                synthetic=synthetic_dedup,
                random_ids=random_synthetic_ids,
                cross_batch_synthetic=cross_batch_synthetic,
            )
        except BaseException as e:
            if tracker and claimed:
                _record_failure(tracker, claimed, e)
            raise
        if tracker and claimed:
            tracker.processed(claimed)
    finally:
        folders.release()
    return summary


APPLICATION = f"events-manifest shred job {__version__}"
"""How the shred job names itself in a processing table."""


def _record_failure(tracker: ProcessingManifest, claimed: ItemRecord, error: BaseException) -> None:
    """Mark the item failed, so a rerun may take it; a failure to do so must not hide `error`."""
    try:
        tracker.failed(claimed, f"{type(error).__name__}: {error}")
    except Exception as e:
        log.warning("could not record [%s] as failed in processing table %s: %s", claimed.item, tracker.table, e)


def _shred_claimed(
    spark: SparkSession,
    storage: output.Storage,
    folders: JobFolders,
    input_path: str | list[str],
    output_path: str,
    bad_path: str,
    handle: ManifestHandle | None,
    etl_time: datetime | None,
    item: str,
    iglu: ResolverConfig | None,
    *,
    synthetic: bool,
    random_ids: bool,
    cross_batch_synthetic: bool,
) -> ShredSummary:
    """`shred` once its folders are checked and claimed and its manifest opened."""
    started = time.monotonic()
    failure_tstamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    clock = _Clock()
    scan = scan_batch(spark, input_path, iglu)
    run: Run | None = None
    try:
        clock.lap("scan")
        etl = etl_time or scan.etl_time or datetime(1970, 1, 1)
        if handle is not None:  # recorded before the first put: a failed run's events are not lost
            run = handle.open().start_run(item, etl, explicit=etl_time is not None)
            etl = run.etl_time
        plan = line_plan(
            input_path,
            etl,
            handle,
            failure_tstamp,
            synthetic=synthetic,
            random_ids=random_ids,
            cross_batch_synthetic=cross_batch_synthetic,
            iglu=iglu,
        )
        staging = output.Staging(storage, output_path)
        try:
            try:  # validation, dedup, the manifest puts and every output line, in two concurrent jobs
                written, counts = _write_lines(
                    spark,
                    staging,
                    {
                        "unshared": lambda: plan.unshared(spark, scan.shared_keys),
                        "shuffled": lambda: plan.shuffled(spark, scan.shared_keys),
                    },
                )
            except Exception as e:
                failure = _manifest_failure(e)
                if failure is not None:
                    raise failure from None
                raise
            clock.lap("validate, dedup, manifest, write")
            summary = ShredSummary(
                input_lines=scan.lines,
                kept_events=_count(counts, dedup.KEPT),
                bad_rows=_count(counts, dedup.BAD) + _count(counts, dedup.MANIFEST_ERROR),
                manifest_errors=_count(counts, dedup.MANIFEST_ERROR),
                in_batch_duplicates=_count(counts, dedup.IN_BATCH),
                cross_batch_duplicates=_count(counts, dedup.CROSS_BATCH),
                synthetic_duplicates=_count(counts, "synthetic"),
                cross_batch_synthetic_duplicates=_count(counts, "synthetic_across"),
                entities=_entity_counts(counts["entities"]),
                events_per_event_id={name: _count(counts, shred_output.BUCKET_COUNTS[name]) for name in BUCKETS},
                etl_time=_text(etl),
                manifest=handle.describe() if handle else None,
                input_path=input_path if isinstance(input_path, str) else ",".join(input_path),
                output_path=output_path,
                bad_path=bad_path,
                seconds=0.0,
            )
            if not summary.balanced:
                raise RuntimeError(f"internal error, nothing written: lines are unaccounted for\n{summary.table()}")
        except BaseException:
            staging.abort()
            raise
        folders.commit(_text(etl))
        staging.commit(output.places(written, output_path, bad_path))
        clock.lap("commit")
        summary = attrs.evolve(summary, seconds=round(time.monotonic() - started, 3), phase_seconds=clock.laps)
        storage.write_text(output.join(output_path, output.SUMMARY), summary.to_json())
    except BaseException:
        if run is not None and handle is not None:  # left unfinished, for its rerun
            handle.open().abandon_run(run)
        raise
    finally:
        scan.release()
    if run is not None and handle is not None:
        handle.open().finish_run(run)
    return summary


EtlMismatchError = RunConflictError
"""The name earlier versions gave the refusal of a rerun that would lose a failed run's events."""


def _text(etl: datetime) -> str:
    return from_epoch_seconds(to_epoch_seconds(etl)).strftime("%Y-%m-%d %H:%M:%S")


class _Clock:
    """Seconds spent in each phase of a run, for the summary and the log."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.laps[phase] = round(now - self._last, 3)
        self._last = now
        log.info("shred phase %s: %.1f s", phase, self.laps[phase])


def _write_lines(
    spark: SparkSession, staging: output.Staging, parts: dict[str, Callable[[], DataFrame]]
) -> tuple[list[str], dict[str, Any]]:
    """Write the output lines of each part (a function that plans them) under the staging folder,
    each in a Spark job of its own, all at once: a part is planned while the others run (the
    shuffled part's plan costs the driver about half a second). Returns where they went and their
    counts, summed. The first failure (or an interrupt) stops the other jobs, and is raised once
    every one has ended."""
    context, tag = spark.sparkContext, f"shred-{uuid.uuid4().hex[:12]}"
    stopped = threading.Event()

    def write(name: str, plan: Callable[[], DataFrame]) -> tuple[str, dict[str, Any]]:
        context.addJobTag(tag)  # this thread's jobs, to cancel them with their running tasks
        context.setInterruptOnCancel(True)
        try:
            tally = Observation(f"shred counts: {name}")
            rows = plan().observe(tally, *_counts())
            if stopped.is_set():
                raise RuntimeError(f"shred job: the {name} lines were not written, another part failed")
            return output.write_outputs(rows, staging.path(name)), tally.get
        finally:
            context.removeJobTag(tag)

    # each with its own copy of the caller's local properties (job group, pool) and tags
    writes = [inheritable_thread_target(spark)(functools.partial(write, *part)) for part in parts.items()]
    with ThreadPoolExecutor(len(parts), thread_name_prefix="shred-write") as pool:
        futures = [pool.submit(run) for run in writes]
        first_failure = None
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            first_failure = next((f.exception() for f in done if f.exception() is not None), None)
        finally:  # a part failed, or the caller was interrupted: stop the others
            if not all(f.done() and f.exception() is None for f in futures):
                stopped.set()
                while not all(f.done() for f in futures):  # a job may start after a cancel
                    context.cancelJobsWithTag(tag)
                    wait(futures, timeout=0.2)
    if first_failure is not None:  # not the others' interruption it caused
        raise first_failure
    results = [future.result() for future in futures]
    counts: dict[str, Any] = {name: sum(c[name] or 0 for _, c in results) for name in shred_output.COUNTS}
    counts["entities"] = [group for _, c in results for group in c["entities"] or ()]
    return [path for path, _ in results], counts


def _counts() -> list[Column]:
    """The summary's counts, taken by Spark while the outputs are written (no pass of their own):
    the sums of the batches' count rows, and the lines of each shredded type."""
    shredded = F.struct("type", "lines")
    entities = F.collect_list(F.when(F.col("kind") == shred_output.SHREDDED_KIND, shredded)).alias("entities")
    return [*(F.sum(name).alias(name) for name in shred_output.COUNTS), entities]


def _count(counts: dict[str, Any], name: str) -> int:
    return int(counts[name] or 0)  # a sum over no rows is null


def _entity_counts(groups: list[Any]) -> dict[str, int]:
    """Lines per shredded type (`vendor/name/format/version`) from the groups of every batch."""
    counts: dict[str, int] = {}
    for group in groups:
        counts[group["type"]] = counts.get(group["type"], 0) + group["lines"]
    return dict(sorted(counts.items()))


def check_report_path(path: str) -> None:
    """Refuse, before the run, a report that could not be written after it."""
    report = Path(path)
    if report.is_dir():
        raise ManifestConfigError(f"--report [{path}] is a folder: give a file name such as report.html")
    if not report.parent.is_dir():
        raise ManifestConfigError(f"--report [{path}]: folder {report.parent} does not exist, create it first")
    if not os.access(report.parent, os.W_OK):
        raise ManifestConfigError(f"--report [{path}]: folder {report.parent} is not writable")


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
    parser.add_argument("--report", metavar="FILE.html", help="also write a self-contained HTML report")
    parser.add_argument("--master", default="local[2]", help="Spark master when not run by spark-submit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def job() -> int:
        iglu = ResolverConfig.parse(args.iglu_config, flag="--iglu-config") if args.iglu_config else None
        etl_time = parse_timestamp(args.etl_time) if args.etl_time else None
        if args.report:
            check_report_path(args.report)
        manifest = manifest_of(args)
        summary = shred(
            local_session(args.master),
            args.input_folder,
            args.output_folder,
            args.bad_folder,
            manifest=manifest,
            etl_time=etl_time,
            item_id=args.item_id,
            processing_table=args.processing_manifest_table,
            iglu_config=iglu,
            synthetic_dedup=not args.no_synthetic_dedup,
            random_synthetic_ids=args.random_synthetic_ids,
            cross_batch_synthetic=args.cross_batch_synthetic,
            overwrite=args.overwrite,
        )
        print(summary.table())
        if args.report:
            Path(args.report).write_text(render_report(summary), encoding="utf-8")
            print(f"report: {args.report}")
        return 0

    return run_job("shredder", job)


if __name__ == "__main__":
    sys.exit(main())
