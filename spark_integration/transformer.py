"""The transformer: the modern RDB Transformer's batch job (wide-row JSON) on PySpark.

    python -m spark_integration.transformer --iglu-config VALUE --config VALUE \\
        [--duplicate-storage-config VALUE | --manifest URL]

Each sub-folder of the config's `input` is a run, transformed into the folder of the same name
under `output.path` and committed by its `shredding_complete.json` (docs/transformer.md). Spark
reads, shuffles and writes; the core's engine (`events_manifest.transformer`) decides.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from events_manifest import DuplicateStorage, ManifestConfigError, __version__, init_storage, parse_config
from events_manifest.factory import manifest_files
from events_manifest.folders import CLAIM, STAGING_PREFIX, FolderClaimedError, Layout
from events_manifest.handle import ManifestHandle
from events_manifest.iglu import ResolverConfig
from events_manifest.job import JobRun
from events_manifest.model import from_epoch_seconds, to_epoch_seconds
from events_manifest.places import Place, check_places
from events_manifest.storage import join
from events_manifest.transformer import queue as queues
from events_manifest.transformer.batch import BAD, GOOD, META, PARSED, Decide, Parse
from events_manifest.transformer.config import TransformerConfig, TransformerConfigError, decode_value, hocon_to_json
from events_manifest.transformer.event import atomic_limits
from events_manifest.transformer.jvm import NANOS
from events_manifest.transformer.message import shredding_complete
from events_manifest.transformer.parquet import ParquetColumns, build_columns
from events_manifest.transformer.parquet_types import TIMESTAMP
from events_manifest.transformer.runs import COMPLETE, discover, folder_uri
from events_manifest.transformer.shredded import PARTITIONS as SHRED_PARTITIONS
from events_manifest.transformer.shredded import Routing, Shredder
from spark_integration import output
from spark_integration.cli_flags import add_common_flags, run_job
from spark_integration.session import local_session
from spark_integration.storage import HadoopStorage

APPLICATION = f"events-manifest transformer {__version__}"
LAYOUT = Layout("transformer", "", lambda role, name: False)
"""A run folder holds what the reference writes there and nothing else: no marker."""
PARSED_TYPE = from_arrow_schema(PARSED)
PARQUET_SETTINGS = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.writeLegacyFormat": "false",
}
"""The Parquet writer's settings, as the reference sets them: timestamps as microseconds, dates in
the proleptic Gregorian calendar, lists as the standard three-level LIST."""


@attrs.frozen
class RunResult:
    """What one run wrote: its folder, the counts of its message, the duplicates it dropped."""

    name: str
    base: str
    lines: int
    good: int
    bad: int
    natural_duplicates: int
    cross_batch_duplicates: int
    message: str

    def line(self) -> str:
        return (
            f"{self.name}: {self.lines} lines, {self.good} good, {self.bad} bad, "
            f"{self.natural_duplicates} natural and {self.cross_batch_duplicates} cross-batch duplicates dropped"
        )


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
) -> list[RunResult]:
    """Transform every run of `config.input` not yet under `config.output`, in order, each committed
    alone; the first failure stops there (the runs before it are complete)."""
    _check_supported(config, manifest)
    storage = HadoopStorage(spark)
    if not storage.is_folder(config.input):
        raise ManifestConfigError(f"input [{config.input}] is not a folder: nothing was written")
    protected = [Place("input", config.input), *(Place("manifest file", path) for path in manifest_files(manifest))]
    check_places(storage, [Place("output folder", config.output, folder=True)], protected)
    if (config.transformation == "shred" or config.file_format == "parquet") and iglu is None:
        raise TransformerConfigError("shred mode and Parquet need an Iglu resolver config: columns come from schemas")
    handle = ManifestHandle.of(manifest) if manifest is not None else None
    job = _Job(
        spark,
        storage,
        config,
        iglu,
        atomic_limits(iglu) if config.truncate_atomic_fields else None,
        handle,
        handle.open() if handle is not None else None,  # a missing table or unusable file fails here
        queues.client(config.queue) if config.queue is not None else None,
        random_synthetic_ids,
        rerun,
    )
    inputs = [name for name in storage.children(config.input) if storage.is_folder(join(config.input, name))]
    outputs = storage.children(config.output) if storage.exists(config.output) else []
    found = discover(inputs, outputs, config.run_interval, datetime.now(UTC))
    unfinished = [name for name in found.done if _left_by_a_killed_run(storage, join(config.output, name))]
    runs = [name for name in sorted(inputs) if name in {*found.to_process, *unfinished}]
    results = []
    for name in runs:
        report(f"Batch Transformer: processing {folder_uri(storage.qualify(join(config.input, name)))}")
        try:
            results.append(job.run(name))
        except FolderClaimedError as e:
            warn(str(e))
    incomplete = [name for name in found.done if name not in unfinished and not storage.exists(_complete(config, name))]
    for name in incomplete:
        warn(f"{folder_uri(storage.qualify(join(config.input, name)))} was not successfully shredded")
    if not incomplete:
        report("No incomplete folders were discovered")
    return results


def _check_supported(config: TransformerConfig, manifest: object | None) -> None:
    if manifest is not None and not config.natural:
        raise TransformerConfigError(
            "Natural deduplication needs to be enabled when cross batch deduplication is enabled"
        )
    if config.legacy_message and config.transformation == "widerow":
        raise TransformerConfigError("LegacyShreddingComplete message is only supported when shredding")


def _complete(config: TransformerConfig, name: str) -> str:
    return join(config.output, name, COMPLETE)


def _left_by_a_killed_run(storage: HadoopStorage, base: str) -> bool:
    """A run folder holding only a claim and staged files: what a killed run of this transformer
    left (the claim's owner is checked when the folder is claimed again)."""
    children = storage.children(base)
    return CLAIM in children and all(child == CLAIM or child.startswith(STAGING_PREFIX) for child in children)


@attrs.frozen
class _Job:
    """What every run of one `transform` call shares."""

    spark: SparkSession
    storage: HadoopStorage
    config: TransformerConfig
    iglu: ResolverConfig | None
    limits: dict[str, int] | None
    handle: ManifestHandle | None
    opened: DuplicateStorage | None
    sender: Any
    random_ids: bool
    rerun: bool

    def shredder(self) -> Shredder | None:
        config = self.config
        if config.transformation != "shred" or self.iglu is None:
            return None
        return Shredder(Routing(config.default_format, config.json, config.tsv, config.skip), self.iglu)

    def run(self, name: str) -> RunResult:
        """Transform the run `name`: claimed, in the ledger, written, committed (see the module)."""
        return _run(self, name)


def _run(job: _Job, name: str) -> RunResult:
    spark, storage, config, limits, handle = job.spark, job.storage, job.config, job.limits, job.handle
    source, base = join(config.input, name), join(config.output, name)
    listing = storage.listing([source])
    now = time.time_ns()
    with JobRun.begin(
        job.opened,
        storage.qualify(source),
        APPLICATION,
        source=listing.identity(),
        output=storage.qualify(base),
        rerun=job.rerun,
        storage=storage,
        layout=LAYOUT,
        folders=[(base, "run")],
    ) as run:
        started = time.time_ns()
        minimum = config.minimum_timestamp
        shred_mode = config.transformation == "shred"
        parquet_mode = not shred_mode and config.file_format == "parquet"
        parse = Parse(limits, minimum, now, wide_rows=not shred_mode and not parquet_mode)
        parsed = _parsed(spark, storage.absolute(source), parse)
        cache = parquet_mode or (config.spark_cache if config.spark_cache is not None else handle is not None)
        if cache:
            parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            columns = _columns(parsed, job.iglu, config) if parquet_mode else None
            etl = run.start(_batch_etl(parsed) if handle is not None else datetime.now(UTC))
            decide = Decide(
                natural=config.natural,
                threshold=config.synthetic_threshold,
                manifest=handle,
                etl_seconds=to_epoch_seconds(etl),
                random_ids=job.random_ids,
                limits=limits,
                skip=config.skip_schemas,
                shredder=job.shredder(),
                parquet=columns,
                now=now,
            )
            staging = output.Staging(storage, base)
            try:
                counts = _write(parsed, decide, staging.path("data"), config, shred_mode)
            except BaseException:
                staging.abort()
                raise
        finally:
            if cache:
                parsed.unpersist()
        message = shredding_complete(
            folder_uri(storage.qualify(base)),
            [(uri, entity, fmt[0] if fmt else "") for entity, uri, *fmt in (t.split(" ") for t in counts["types"])],
            file_format=None if shred_mode else config.file_format,
            legacy=config.legacy_message,
            started=started,
            completed=time.time_ns(),
            earliest=counts["earliest"],
            latest=counts["latest"],
            compression=config.compression,
            good=counts["good"],
            bad=counts["bad"],
        )

        def publish() -> None:
            staging.commit(
                [
                    (join(staging.path("data"), f"output={GOOD}"), join(base, f"output={GOOD}"), None),
                    (join(staging.path("data"), f"output={BAD}"), join(base, f"output={BAD}"), None),
                ]
            )
            if job.sender is not None and config.queue is not None:
                queues.send(config.queue, job.sender, message)
            storage.write_text(join(base, COMPLETE), message)

        run.commit(from_epoch_seconds(to_epoch_seconds(etl)).strftime("%Y-%m-%d %H:%M:%S"), publish)
    return RunResult(
        name,
        storage.qualify(base),
        counts["lines"],
        counts["good"],
        counts["bad"],
        counts["natural"],
        counts["duplicates"],
        message,
    )


def _parsed(spark: SparkSession, source: str, parse: Parse) -> DataFrame:
    """The run's lines (Spark's text reader: every file directly in the folder, `_*` and `.*` left
    out, compressed ones decoded), parsed by the core (`Parse`) one Arrow batch at a time."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in iterator:
            yield parse.batch(batch.column(0))

    lines = spark.read.text(source).select(F.col("value").cast("binary").alias("line"))
    return lines.mapInArrow(batches, PARSED_TYPE)


def _batch_etl(parsed: DataFrame) -> datetime:
    """The earliest etl_tstamp of the run's good events (now if none has one), for the manifest."""
    row = parsed.filter("good AND etl IS NOT NULL").agg(F.min("etl").alias("etl")).first()
    try:
        return from_epoch_seconds(row["etl"]) if row is not None and row["etl"] is not None else datetime.now(UTC)
    except (ValueError, OverflowError):  # a year datetime cannot hold
        return datetime.now(UTC)


def _columns(parsed: DataFrame, iglu: ResolverConfig | None, config: TransformerConfig) -> ParquetColumns:
    """The run's Parquet columns: the entity types of its good events (a first pass over the
    parsed run, which Spark keeps for the second), their schemas fetched and typed on the driver."""
    assert iglu is not None
    types = parsed.filter("good").select(F.explode("types").alias("type")).distinct().collect()
    seen = [(uri, entity) for entity, uri in (row["type"].split(" ") for row in types)]
    return build_columns(seen, iglu, config.skip_schemas, synthetic=config.synthetic != "none")


def _row_columns(columns: ParquetColumns) -> list[Column]:
    """The Parquet columns of the decided rows: a field of the `row` struct is nullable to Spark
    (the struct is null on other rows), so a required column is told it holds no null (a value
    Spark cannot see null: its good rows hold one)."""
    selected = []
    for field in columns.fields:
        column = F.col(f"row.{field.name}")
        if not field.nullable:
            column = F.coalesce(column, F.lit(0).cast("timestamp") if field.type == TIMESTAMP else F.lit(""))
        selected.append(column.alias(field.name))
    return selected


def _write(parsed: DataFrame, decide: Decide, path: str, config: TransformerConfig, shred_mode: bool) -> dict[str, Any]:
    """Decide every row (an id's rows brought together by Spark's shuffle, then `Decide`) and write
    the good and bad lines under `path` (`output=good/`, `output=bad/`, in shred mode each line
    under its schema's partition); the counts, observed on the way."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from decide.partition(iterator)

    lines, tally = Observation("transformer lines"), Observation("transformer counts")
    counted = parsed.observe(lines, F.count(F.lit(1)).alias("lines"))
    spark = parsed.sparkSession
    shuffled = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    decided_type = from_arrow_schema(decide.schema)
    decided = counted.repartition(shuffled, "key").sortWithinPartitions("key").mapInArrow(batches, decided_type)
    good = F.col("event") == 1
    collector = F.struct("collector", "collector_nanos")
    observed = decided.observe(
        tally,
        F.coalesce(F.sum("event"), F.lit(0)).alias("good"),
        F.count_if(F.col("output") == BAD).alias("bad"),
        F.count_if(F.col("output") == "duplicate").alias("duplicates"),
        F.coalesce(F.sum("natural"), F.lit(0)).alias("natural"),
        F.min(F.when(good, collector)).alias("earliest"),
        F.max(F.when(good, collector)).alias("latest"),
        F.array_distinct(F.flatten(F.collect_list(F.when(F.col("output") == META, F.col("types"))))).alias("types"),
    )
    compression = {"compression": "gzip"} if config.compression == "GZIP" else {}
    if decide.parquet is None:
        partitions = ["output", *(SHRED_PARTITIONS if shred_mode else ())]
        written = observed.filter(F.col("value").isNotNull()).select(*partitions, "value")
        written.write.partitionBy(*partitions).options(**compression).text(path)
    else:  # two writes of one decided run: kept in Spark's cache between them, so each line is put once
        for key, value in PARQUET_SETTINGS.items():
            spark.conf.set(key, value)
        observed = observed.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            rows = observed.filter(F.col("output") == GOOD).select(*_row_columns(decide.parquet))
            records = config.max_records_per_file if config.enable_max_records_per_file else 0
            rows.write.option("maxRecordsPerFile", records).parquet(join(path, f"output={GOOD}"))
            bad_rows = observed.filter(F.col("output") == BAD).select("value")
            bad_rows.write.options(**compression).text(join(path, f"output={BAD}"))
        finally:
            observed.unpersist()
    counts: dict[str, Any] = dict(tally.get)
    counts["lines"] = int(lines.get["lines"])
    for bound in ("earliest", "latest"):
        moment = counts[bound]
        counts[bound] = None if moment is None else moment["collector"] * NANOS + moment["collector_nanos"]
    counts["types"] = sorted(counts["types"] or [])
    accounted = counts["good"] + counts["bad"] + counts["duplicates"] + counts["natural"]
    if accounted != counts["lines"]:
        raise RuntimeError(f"internal error, nothing committed: {counts['lines']} lines but {accounted} accounted for")
    return counts


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spark_integration.transformer",
        description="The RDB Transformer's batch job (wide-row JSON): every run folder of the input deduplicated "
        "(natural, cross-batch, synthetic) and transformed, committed by its shredding_complete.json.",
    )
    parser.add_argument("--iglu-config", required=True, metavar="VALUE", help="Iglu resolver config: base64 or a file")
    parser.add_argument("-c", "--config", required=True, metavar="VALUE", help="HOCON config: base64 or a file")
    store = parser.add_mutually_exclusive_group()
    store.add_argument(
        "--duplicate-storage-config",
        metavar="VALUE",
        help="DynamoDB manifest config for cross-batch dedup: base64 or a file",
    )
    store.add_argument(
        "--manifest", metavar="URL", help="manifest URL for cross-batch dedup (sqlite:///abs/path.db, ...)"
    )
    parser.add_argument("--dynamodb-endpoint", metavar="URL", help="endpoint of a DynamoDB-compatible server")
    parser.add_argument("--random-synthetic-ids", action="store_true", help="v4 ids for synthetic duplicates")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="transform again a run the manifest's ledger says was delivered (its output folder deleted), on purpose",
    )
    add_common_flags(parser)
    return parser


def _configs(args: argparse.Namespace) -> tuple[TransformerConfig, ResolverConfig, str | DuplicateStorage | None]:
    """The three values decoded as the reference decodes them; any problem is a config error."""
    config = TransformerConfig.parse(decode_value(args.config))
    try:
        iglu = ResolverConfig.parse(hocon_to_json(decode_value(args.iglu_config)), flag="--iglu-config")
    except TransformerConfigError:
        raise
    except ManifestConfigError as e:
        raise TransformerConfigError(f"Could not parse iglu resolver config: {e}") from None
    manifest: str | DuplicateStorage | None = args.manifest
    if args.duplicate_storage_config:
        document = json.loads(hocon_to_json(decode_value(args.duplicate_storage_config)))
        manifest = init_storage(parse_config(document), endpoint_url=args.dynamodb_endpoint)
    _check_supported(config, manifest)
    return config, iglu, manifest


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config, iglu, manifest = _configs(args)
    except ManifestConfigError as e:  # the transformer's config, or the manifest's
        print(str(e), file=sys.stderr)
        return 2

    def job() -> int:
        spark = local_session(args.master, verbose=args.verbose)
        try:
            results = transform(
                spark,
                config,
                iglu=iglu,
                manifest=manifest,
                random_synthetic_ids=args.random_synthetic_ids,
                rerun=args.rerun,
            )
        except TransformerConfigError as e:
            print(str(e), file=sys.stderr)
            return 2
        for result in results:
            print(result.line())
        return 0

    return run_job("transformer", job, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
