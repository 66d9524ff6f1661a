"""The shred job: enriched events in; deduplicated atomic events, shredded entities and bad rows out.

    python -m spark_integration.shredder --input-folder IN --output-folder OUT --bad-folder BAD \\
        [--manifest sqlite:///path/manifest.db | --duplicate-storage-config BASE64] ...
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import logging
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from events_manifest import (
    DuplicateStorage,
    ManifestConfigError,
    ManifestError,
    ManifestUnavailableError,
)
from events_manifest.cli import parse_timestamp
from events_manifest.model import from_epoch_seconds, to_epoch_seconds
from spark_integration import dedup, enriched, output
from spark_integration.cli_flags import add_manifest_flags, manifest_of, run_job
from spark_integration.manifest_handle import ManifestHandle
from spark_integration.report import render_report
from spark_integration.session import local_session
from spark_integration.summary import BUCKETS, ShredSummary, bucket_of
from spark_integration.udfs import json_entities

log = logging.getLogger(__name__)


class OutputExistsError(ManifestConfigError):
    """The output or bad folder already holds files: choose an empty one or pass overwrite."""


def validate(spark: SparkSession, input_path: str | list[str]) -> DataFrame:
    """Every input line with `valid`, `errors` (all messages for the line) and its `entities`."""
    events = enriched.parse(enriched.load_enriched(spark, input_path))
    checked = json_entities(*(enriched.field(i) for i in enriched.JSON_FIELDS))
    events = events.withColumn("json", checked)
    errors = F.concat(F.col("errors"), F.coalesce(F.col("json.errors"), F.array().cast("array<string>")))
    return (
        events.withColumn("errors", errors)
        .withColumn("valid", F.size("errors") == 0)
        .withColumn("entities", F.col("json.entities"))
        .drop("json")
    )


def scan_batch(spark: SparkSession, input_path: str | list[str]) -> tuple[int, datetime | None]:
    """The number of input lines and the batch etl time, the earliest etl_tstamp among lines that
    pass the field checks (a rerun of the same input finds the same), in one cheap pass."""
    keys = enriched.batch_keys(enriched.load_enriched(spark, input_path))
    row = keys.agg(F.count(F.lit(1)), F.min("etl_us")).first()
    assert row is not None
    lines, earliest = row
    return lines, None if earliest is None else from_epoch_seconds(earliest // 1_000_000)


def dedup_enriched(
    events: DataFrame,
    etl_time: datetime,
    manifest: ManifestHandle | None,
    *,
    synthetic: bool = True,
    random_ids: bool = False,
    cross_batch_synthetic: bool = False,
) -> DataFrame:
    """All rows with `status`, and for kept events their final id, atomic line and entities.

    One shuffle (by event id) and one sort serve natural and synthetic dedup; the manifest is
    asked last, and the wide atomic line is built after the shuffle, from the line itself.
    """
    events = dedup.by_event_id(events.drop("fields"))
    events = dedup.dedup_natural(events, etl_time)
    events = dedup.dedup_synthetic(events, enabled=synthetic, random_ids=random_ids)
    events = dedup.dedup_cross_batch(events, manifest, etl_time)
    if cross_batch_synthetic:
        if manifest is None:
            raise ManifestConfigError("cross-batch synthetic dedup needs a manifest")
        events = dedup.dedup_synthetic_cross_batch(events, manifest, etl_time, random_ids=random_ids)
    else:
        events = events.withColumn("synthetic_across", F.lit(False))
    kept = F.col("status") == dedup.KEPT
    bad = F.col("status").isin(dedup.BAD, dedup.MANIFEST_ERROR)
    errors = F.when(F.col("status") == dedup.MANIFEST_ERROR, F.array("manifest_error")).otherwise(F.col("errors"))
    before, after = enriched.atomic_parts()
    events = events.withColumn("fields", F.when(kept, enriched.padded(enriched.split_line())))
    return events.select(
        "status",
        F.when(F.col("valid"), F.col("event_id")).alias("event_id"),
        F.when(kept, F.col("new_event_id")).alias("new_event_id"),
        F.when(kept, F.col("synthetic")).alias("synthetic"),
        F.when(kept, F.col("synthetic_across")).alias("synthetic_across"),
        F.when(kept, F.col("collector_tstamp")).alias("collector_tstamp"),
        F.when(kept, F.concat_ws("\t", before, "new_event_id", after)).alias("atomic"),
        F.when(kept, F.col("entities")).alias("entities"),
        F.when(bad, F.col("line")).alias("line"),
        F.when(bad, errors).alias("errors"),
    )


def _prepare_folder(storage: output.Storage, folder: str, overwrite: bool, what: str) -> None:
    children = []
    for child in storage.children(folder):
        if child.startswith(".staging-"):  # left by a run that was killed while writing
            storage.delete(output.join(folder, child))
        elif child != output.RUN_MARKER:
            children.append(child)
    if children and not overwrite:
        raise OutputExistsError(
            f"{what} [{folder}] is not empty ({', '.join(children[:3])}{'...' if len(children) > 3 else ''}): "
            "choose an empty folder or pass --overwrite"
        )
    for child in children:
        storage.delete(output.join(folder, child))
    storage.mkdirs(folder)


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
    synthetic_dedup: bool = True,
    random_synthetic_ids: bool = False,
    cross_batch_synthetic: bool = False,
    overwrite: bool = False,
) -> ShredSummary:
    """Run the shred job on one batch and return its summary (also written as `_summary.json`).

    `manifest` (a URL such as `sqlite:///abs/manifest.db` or `dynamodb://table?region=...`, or a
    picklable manifest) turns on cross-batch dedup; without it only in-batch dedup runs.
    `etl_time` overrides the batch etl time (the earliest etl_tstamp of the input).
    `cross_batch_synthetic` (needs a manifest) also re-identifies kept events whose id an earlier
    batch stored with another fingerprint.
    Nothing is written unless every line is accounted for and the manifest answered.
    """
    started = time.monotonic()
    failure_tstamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    handle = ManifestHandle.of(manifest) if manifest is not None else None
    if cross_batch_synthetic and handle is None:
        raise ManifestConfigError("cross-batch synthetic dedup needs a manifest: pass one, or leave it off")
    if handle is not None:
        opened = handle.open()  # in the driver: a missing table or unusable file fails here, before any work
        if cross_batch_synthetic:
            opened.entries_of([])  # and a backend that cannot list an id's fingerprints
    storage = output.Storage(spark)
    unfinished = _unfinished_run(storage, output_path)
    _prepare_folder(storage, output_path, overwrite, "output folder")
    _prepare_folder(storage, bad_path, overwrite, "bad folder")

    clock = _Clock()
    input_lines, earliest = scan_batch(spark, input_path)
    clock.lap("scan")
    etl = etl_time or earliest or datetime(1970, 1, 1)
    marker = output.join(output_path, output.RUN_MARKER)
    if handle is not None:  # only a manifest remembers a failed run's events
        _check_rerun(unfinished, etl, etl_time is not None, output_path)
        storage.write_text(marker, json.dumps({"etl_time": _text(etl), "input_path": str(input_path)}) + "\n")
    result = dedup_enriched(
        validate(spark, input_path),
        etl,
        handle,
        synthetic=synthetic_dedup,
        random_ids=random_synthetic_ids,
        cross_batch_synthetic=cross_batch_synthetic,
    ).persist()
    try:
        try:
            counts = result.groupBy("status", "synthetic", "synthetic_across").count().collect()  # puts run here
        except Exception as e:
            failure = _manifest_failure(e)
            if failure is not None:
                raise failure from None
            raise
        clock.lap("validate, dedup, manifest")
        statuses: dict[str, int] = {}
        for status, _, _, count in counts:
            statuses[status] = statuses.get(status, 0) + count
        kept = result.filter(F.col("status") == dedup.KEPT)
        shredded = output.shredded_lines(kept)
        summary = ShredSummary(
            input_lines=input_lines,
            kept_events=statuses.get(dedup.KEPT, 0),
            bad_rows=statuses.get(dedup.BAD, 0) + statuses.get(dedup.MANIFEST_ERROR, 0),
            manifest_errors=statuses.get(dedup.MANIFEST_ERROR, 0),
            in_batch_duplicates=statuses.get(dedup.IN_BATCH, 0),
            cross_batch_duplicates=statuses.get(dedup.CROSS_BATCH, 0),
            synthetic_duplicates=sum(count for _, synthetic, _, count in counts if synthetic),
            cross_batch_synthetic_duplicates=sum(count for _, _, across, count in counts if across),
            entities=_entity_counts(shredded),
            events_per_event_id=_distribution(result),
            etl_time=_text(etl),
            manifest=handle.describe() if handle else None,
            input_path=input_path if isinstance(input_path, str) else ",".join(input_path),
            output_path=output_path,
            bad_path=bad_path,
            seconds=0.0,
        )
        clock.lap("counts")
        if not summary.balanced:
            raise RuntimeError(f"internal error, nothing written: lines are unaccounted for\n{summary.table()}")
        out_staging, bad_staging = output.Staging(storage, output_path), output.Staging(storage, bad_path)
        try:
            kept.select("atomic").write.text(out_staging.path(output.ATOMIC))
            shredded.write.partitionBy(*output.PARTITIONS).text(out_staging.path(output.SHREDDED))
            bad = result.filter(F.col("status").isin(dedup.BAD, dedup.MANIFEST_ERROR))
            output.bad_rows(bad, failure_tstamp).write.text(bad_staging.path("rows", flatten=True))
        except BaseException:
            out_staging.abort()
            bad_staging.abort()
            raise
        out_staging.commit()
        bad_staging.commit()
        clock.lap("write")
    finally:
        result.unpersist()
    summary = attrs.evolve(summary, seconds=round(time.monotonic() - started, 3), phase_seconds=clock.laps)
    storage.write_text(output.join(output_path, output.SUMMARY), summary.to_json())
    if storage.exists(marker):
        storage.delete(marker)
    return summary


class EtlMismatchError(ManifestConfigError):
    """A rerun after a failed run would use another etl time, and reject that run's events."""


def _text(etl: datetime) -> str:
    return from_epoch_seconds(to_epoch_seconds(etl)).strftime("%Y-%m-%d %H:%M:%S")


def _unfinished_run(storage: output.Storage, output_path: str) -> str | None:
    """The etl time of an earlier run into this folder that stopped before finishing, if any."""
    marker = output.join(output_path, output.RUN_MARKER)
    if not storage.exists(marker):
        return None
    etl: str = json.loads(storage.read_text(marker))["etl_time"]
    return etl


def _check_rerun(unfinished: str | None, etl: datetime, overridden: bool, output_path: str) -> None:
    """Refuse a rerun whose etl time differs from the failed run's: the manifest holds that run's
    events under its etl time and would reject them now as duplicates, losing them."""
    if unfinished is None or unfinished == _text(etl):
        return
    if overridden:
        log.warning("rerun into %s with etl time %s; the unfinished run had %s", output_path, _text(etl), unfinished)
        return
    raise EtlMismatchError(
        f"an earlier run into [{output_path}] stopped after recording events with etl time {unfinished}, "
        f"but this input's etl time is {_text(etl)} (the input changed): its events would now be rejected "
        f"as duplicates. Rerun with --etl-time '{unfinished}' (etl_time= in Python) to finish that run"
    )


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


def _entity_counts(shredded: DataFrame) -> dict[str, int]:
    rows = shredded.groupBy(*output.PARTITIONS).count().collect()
    return dict(sorted(("/".join(row[:4]), row[4]) for row in rows))


def _distribution(result: DataFrame) -> dict[str, int]:
    """How many event ids have 1, 2, 3-10, 11-100 or more valid events in the batch."""
    per_id = result.filter(F.col("event_id").isNotNull()).groupBy("event_id").count()
    distribution = dict.fromkeys(BUCKETS, 0)
    for events, ids in per_id.groupBy("count").count().collect():
        distribution[bucket_of(events)] += ids
    return distribution


def _base64_json(text: str, flag: str) -> object:
    try:
        return json.loads(base64.b64decode(text, validate=True).decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ManifestConfigError(f"{flag}: not base64-encoded JSON (make it with `base64 -w0 file.json`)") from None


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
    parser.add_argument("--iglu-config", metavar="BASE64", help="base64 Iglu resolver config (checked, see docs)")
    parser.add_argument("--etl-time", help="override the batch etl time, e.g. '2026-11-01 06:00:00' (UTC)")
    parser.add_argument("--no-synthetic-dedup", action="store_true", help="keep events sharing an id as they are")
    parser.add_argument("--random-synthetic-ids", action="store_true", help="v4 ids for synthetic duplicates")
    parser.add_argument(
        "--cross-batch-synthetic",
        action="store_true",
        help="also re-identify events whose id an earlier batch had with another fingerprint (a query per event)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace what the output and bad folders hold")
    parser.add_argument("--report", metavar="FILE.html", help="also write a self-contained HTML report")
    parser.add_argument("--master", default="local[2]", help="Spark master when not run by spark-submit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def job() -> int:
        manifest = manifest_of(args)
        if args.iglu_config:
            _base64_json(args.iglu_config, "--iglu-config")
        etl_time = parse_timestamp(args.etl_time) if args.etl_time else None
        summary = shred(
            local_session(args.master),
            args.input_folder,
            args.output_folder,
            args.bad_folder,
            manifest=manifest,
            etl_time=etl_time,
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
