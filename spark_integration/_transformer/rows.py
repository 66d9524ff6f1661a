"""One transformer run's lines decided and written under its staging folder: Spark reads, groups
and writes; the core's `Parse` and `Decide` decide (docs/development.md, the transformer's plan).

Two plans give the same rows:
- scanned (wide-row JSON and shred mode): a scan in the JVM (`_spark.scan.scan_run`) finds the ids on
  more than one line and the batch etl time's candidate; every other line is parsed, decided and
  written where it is read, in one trip to Python, with no shuffle and no cache; only the lines
  of shared ids are shuffled, to be decided together.
- parsed first (Parquet, whose columns are the entity types of the run's good events, known once
  every line is parsed; and a run the scan cannot key): every line parsed and the run cached, its
  facts observed in the pass over it that finds its shared ids; then as above, the rows of ids
  found once decided where they are, the others shuffled (without a cache, every row shuffled).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from events_manifest._jobs.face import JobRun, Listing, join
from events_manifest._snowplow.face import ETL_TSTAMP
from events_manifest._transformer.face import (
    BAD,
    DATA,
    GOOD,
    META,
    NANOS,
    PARSED,
    TIMESTAMP,
    Decide,
    EntityType,
    ParquetColumns,
    Parse,
    RunCounts,
    Shred,
    ShredModeLines,
    TransformerConfig,
    TransformerConfigError,
    WideRowJson,
    WideRowParquet,
    build_columns,
    kinesis,
    pubsub,
    second_of,
)
from events_manifest._transformer.face import PARTITIONS as SHRED_PARTITIONS
from events_manifest.iglu import ResolverConfig
from events_manifest.model import to_epoch_seconds
from spark_integration._spark import enriched
from spark_integration._spark.api import json_metric, metric_value, observation, spark_schema
from spark_integration._spark.conf import settings_during
from spark_integration._spark.scan import earliest_second, etl_second, etl_time, scan_run, shared_ids
from spark_integration._spark.storage import HadoopStorage
from spark_integration._transformer.job import Job

PARSED_TYPE = spark_schema(PARSED)
"""Spark's type of a parsed row (`parse_decide.PARSED`)."""
CACHE_SETTINGS = {
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
}
"""Spark's caches of a run: uncompressed, as their columns are long distinct lines, which the
cache's encodings do not shrink, and gathering their statistics hashes every byte (a third of the
JVM's time in a profiled run); and their plans' small shuffle partitions merged, as without a
cache (the shared ids' rows: else a task, and a file written, for each of a handful of rows)."""
PARQUET_SETTINGS = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.writeLegacyFormat": "false",
}
"""The Parquet writer's settings, as the reference sets them: timestamps as microseconds, dates in
the proleptic Gregorian calendar, lists as the standard three-level LIST."""


@attrs.frozen
class _Writing:
    """How the output mode writes a run's good events: wide-row lines rendered as they are parsed,
    Parquet rows in columns from the run's schemas, or shredded lines under their schemas' partitions."""

    wide_rows: bool = False
    parquet: bool = False
    shred_mode: ShredModeLines | None = None
    partitions: tuple[str, ...] = ()

    @classmethod
    def of(cls, job: Job) -> _Writing:
        match job.config.formats:
            case WideRowJson():
                return cls(wide_rows=True)
            case WideRowParquet():
                return cls(parquet=True)
            case Shred(routing):
                if job.iglu is None:
                    raise TransformerConfigError("shred mode needs an Iglu resolver config")
                return cls(shred_mode=ShredModeLines(routing, job.iglu), partitions=SHRED_PARTITIONS)


def write_run(job: Job, run: JobRun, listing: Listing, staging: str, now: int) -> RunCounts:
    """Read, decide and write the run's rows under `staging`; its counts. A run of no lines
    writes nothing and is counted so (the ledger records it all the same)."""
    spark, config, handle = job.spark, job.config, job.handle
    writing = _Writing.of(job)
    parse = Parse(job.limits, config.minimum_timestamp, now, wide_rows=writing.wide_rows)
    lines = _lines(job.storage, listing)
    if lines is None:
        run.start(datetime.now(UTC))
        return RunCounts()
    scan = None if writing.parquet else scan_run(lines)
    if scan is not None and scan.keys is not None:
        earliest = _run_etl(lines, scan.earliest, parse, scan.line_of_earliest) if handle is not None else None
        decide = _decide(job, run, earliest, None, now, writing)
        return _write(_scanned(lines, F.broadcast(scan.keys), parse, decide), decide, job, staging, writing)
    parsed = lines.select(enriched.line_bytes()).mapInArrow(_parse_lines(parse), PARSED_TYPE)
    cache = writing.parquet or (config.spark_cache if config.spark_cache is not None else handle is not None)
    with contextlib.ExitStack() as stack:
        if cache:
            stack.enter_context(settings_during(spark, CACHE_SETTINGS))
            parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
            stack.callback(parsed.unpersist)
        facts = _fact_columns(etl=handle is not None, types=writing.parquet)
        if cache and facts:  # gathered while the shared ids are found: no pass of their own
            taken = observation("run facts")
            shared = shared_ids(parsed.observe(taken, *facts))
            earliest, types = _facts_of(taken.get)
        else:
            earliest, types = _run_facts(parsed, facts)
            shared = shared_ids(parsed) if cache else None
        columns = _columns(types, job.iglu, config) if writing.parquet else None
        decide = _decide(job, run, earliest, columns, now, writing)
        if shared is None:
            return _write(_shuffled(parsed, decide), decide, job, staging, writing)
        once, together = (parsed.join(F.broadcast(shared), "key", how) for how in ("left_anti", "left_semi"))
        return _write(_decided(once, together, decide), decide, job, staging, writing)


def _run_etl(lines: DataFrame, candidate: str | None, parse: Parse, line: bytes | None = None) -> datetime | None:
    """The run's batch etl time from its scan's `candidate` and `line` of it (see
    `RunScan.earliest`): the earliest etl_tstamp, to the second, of its good events; None when
    none has one."""

    def in_spark(of_second: DataFrame) -> bool:
        return bool(of_second.mapInArrow(_parse_lines(parse), PARSED_TYPE).filter("good").select("good").take(1))

    found = earliest_second(
        lines,
        candidate,
        etl_second(F.get(enriched.head_fields(enriched.head()), ETL_TSTAMP)),
        enriched.line_bytes(),
        lambda first: bool(first) and parse.any_good(pa.array([bytes(b) for b in first], pa.binary())),
        in_spark,
        line,
    )
    return None if found is None else etl_time(second_of(found))


def _parse_lines(parse: Parse) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Lines (a binary column first) parsed by the core (`Parse`), one Arrow batch at a time."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in iterator:
            yield parse.batch(batch.column(0))

    return batches


def _decide(
    job: Job, run: JobRun, earliest: datetime | None, columns: ParquetColumns | None, now: int, writing: _Writing
) -> Decide:
    """The run's decisions, once its etl time is set: the earliest etl_tstamp of its good events
    with a manifest (now if none has one), else now."""
    config = job.config
    etl = run.start(earliest if earliest is not None and job.handle is not None else datetime.now(UTC))
    return Decide(
        natural=config.natural,
        threshold=config.synthetic_threshold,
        manifest=job.handle,
        etl_seconds=to_epoch_seconds(etl),
        random_ids=job.random_ids,
        limits=job.limits,
        skip=config.skip_schemas,
        shred_mode=writing.shred_mode,
        parquet=columns,
        now=now,
    )


def _scanned(lines: DataFrame, shared: DataFrame, parse: Parse, decide: Decide) -> DataFrame:
    """The decided rows of the scanned plan: the lines of ids found once and those of `shared` ids."""
    once, together = (
        enriched.with_keys(lines, shared, among=among).select(enriched.line_bytes()) for among in (False, True)
    )
    return _decided(once, together, decide, parse)


def _decided(once: DataFrame, together: DataFrame, decide: Decide, parse: Parse | None = None) -> DataFrame:
    """The rows of ids found once decided batch by batch where they are, the others shuffled (see
    `_shuffled`): lines parsed first with `parse`, else rows parsed already."""

    def where_read(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in iterator:
            if batch.num_rows:
                decided = decide.rows(batch) if parse is None else decide.rows(*parse.parsed(batch.column(0)))
                yield from decided.to_batches()

    parsed = together if parse is None else together.mapInArrow(_parse_lines(parse), PARSED_TYPE)
    return once.mapInArrow(where_read, _decided_type(decide)).unionByName(_shuffled(parsed, decide))


def _decided_type(decide: Decide) -> StructType:
    """Spark's type of `decide`'s rows."""
    return spark_schema(decide.schema)


def _shuffled(parsed: DataFrame, decide: Decide) -> DataFrame:
    """Parsed rows decided: an id's rows brought together by Spark's shuffle, sorted by id, then
    `Decide`, which holds back the last id of each Arrow batch until its rows are all read. The
    shuffle's partitions are Spark's to size (adaptive execution merges small ones): the rows of
    shared ids are few, and a task of a few hundred rows costs more than it decides."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from decide.partition(iterator)

    grouped = parsed.repartition("key").sortWithinPartitions("key")
    return grouped.mapInArrow(batches, _decided_type(decide))


def _lines(storage: HadoopStorage, listing: Listing) -> DataFrame | None:
    """The run's lines (column `line`): every file of `listing` (the files directly in its folder,
    whatever their names), compressed ones decoded, lines ending at LF, CRLF or CR; a record a
    line from a listing of records, whatever it holds; None when there are none."""
    if not listing.bytes:
        return None
    value = F.col("value").cast("string") if listing.records else F.col("value")  # records: binary
    lines = storage.frame_of(listing).select(value.alias("line"))
    if (listing.records or all(_compressed(name) for name, size in listing.files if size)) and lines.isEmpty():
        return None  # no lines: Spark's plan of compressed or Parquet files of none may have no partition at all
    return lines


def _compressed(name: str) -> bool:
    return name.rsplit(".", 1)[-1].lower() in {"gz", "bz2", "deflate", "snappy", "lz4", "zst", "lzo", "br"}


def _to_sink(sink: kinesis.Stream | pubsub.Topic) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Decided rows with their bad rows sent to the sink (a Kinesis stream, a Pub/Sub topic) and left out."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer = sink.writer()
        for batch in iterator:
            bad = pc.fill_null(pc.equal(batch.column("output"), BAD), False)
            writer.write(value for value in batch.filter(bad).column("value").to_pylist() if value is not None)
            yield batch.filter(pc.invert(bad))

    return batches


def _fact_columns(*, etl: bool, types: bool) -> list[Column]:
    """What the shuffled plan needs to know of the parsed run before its first put: its batch etl
    time (`etl`: the earliest etl_tstamp of its good events) and its good events' entity types
    (`types`, for Parquet's columns), as aggregates over its rows."""
    good = F.col("good")
    wanted = []
    if etl:
        wanted.append(F.min(F.when(good, F.col("etl"))).alias("etl"))
    if types:
        wanted.append(
            json_metric(F.array_distinct(F.flatten(F.collect_set(F.when(good, F.col("types")))))).alias("types")
        )
    return wanted


def _run_facts(parsed: DataFrame, facts: list[Column]) -> tuple[datetime | None, list[str]]:
    """`_fact_columns` in a pass of their own over the parsed run; none asked, nothing is read."""
    row = parsed.agg(*facts).first() if facts else None
    return _facts_of(row.asDict() if row is not None else {})


def _facts_of(found: dict[str, Any]) -> tuple[datetime | None, list[str]]:
    """The batch etl time (None if no good event has one, or none was asked) and the entity types."""
    return etl_time(found.get("etl")), list(metric_value(found.get("types")) or [])


def _columns(types: list[str], iglu: ResolverConfig | None, config: TransformerConfig) -> ParquetColumns:
    """The run's Parquet columns: the entity types of its good events, their schemas fetched and
    typed on the driver."""
    assert iglu is not None
    seen = [(found.schema_key, found.entity) for found in map(EntityType.parse, sorted(types))]
    return build_columns(seen, iglu, config.skip_schemas, synthetic=config.synthetic != "none")


def _row_columns(columns: ParquetColumns) -> list[str]:
    """The Parquet columns of the decided rows, as SQL expressions (Spark parses them all in one
    call; a `Column` each costs the driver a round trip to the JVM per function, about half a second
    a run): a field of the `row` struct is nullable to Spark (the struct is null on other rows), so
    a required column is told it holds no null (a value Spark cannot see null: its good rows hold
    one)."""
    selected = []
    for field in columns.fields:
        name = _identifier(field.name)
        column = f"row.{name}"
        if not field.nullable:
            empty = "CAST(0 AS TIMESTAMP)" if field.type == TIMESTAMP else "''"
            column = f"coalesce({column}, {empty})"
        selected.append(f"{column} AS {name}")
    return selected


def _identifier(name: str) -> str:
    """`name` quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def _write(decided: DataFrame, decide: Decide, job: Job, staging: str, writing: _Writing) -> RunCounts:
    """Write the decided run's good and bad lines under `staging` (`output=good/`, `output=bad/`,
    in shred mode each line under its schema's partition; bad rows to Kinesis or Pub/Sub with one); the
    counts, observed on the way."""
    config, sink, path = job.config, job.bad_sink, join(staging, DATA)
    tally = observation("transformer counts")
    good = F.col("event") == 1
    collector = F.struct("collector", "collector_nanos")
    watched = decided.observe(
        tally,
        F.coalesce(F.sum("lines"), F.lit(0)).alias("lines"),
        F.coalesce(F.sum("event"), F.lit(0)).alias("good"),
        F.count_if(F.col("output") == BAD).alias("bad"),
        F.count_if(F.col("output") == "duplicate").alias("duplicates"),
        F.coalesce(F.sum("natural"), F.lit(0)).alias("natural"),
        F.coalesce(F.sum("synthetic"), F.lit(0)).alias("synthetic"),
        F.coalesce(F.sum("puts"), F.lit(0)).alias("puts"),
        json_metric(F.min(F.when(good, collector))).alias("earliest"),
        json_metric(F.max(F.when(good, collector))).alias("latest"),
        json_metric(F.array_distinct(F.flatten(F.collect_list(F.when(F.col("output") == META, F.col("types")))))).alias(
            "types"
        ),
    )
    if sink is not None:
        watched = watched.mapInArrow(_to_sink(sink), _decided_type(decide))
    compression = {"compression": "gzip"} if config.compression == "GZIP" else {}
    if decide.parquet is None:
        partitions = ["output", *writing.partitions]
        written = watched.filter(F.col("value").isNotNull()).select(*partitions, "value")
        written.write.partitionBy(*partitions).options(**compression).text(path)
    else:  # two writes of one decided run, what they write cached between them: each line is put once
        with settings_during(decided.sparkSession, PARQUET_SETTINGS):
            output = F.col("output")
            kept = watched.filter(output.isin(GOOD, BAD)).select("output", "value", "row")
            kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                rows = kept.filter(output == GOOD).selectExpr(*_row_columns(decide.parquet))
                records = config.max_records_per_file if config.enable_max_records_per_file else 0
                rows.write.option("maxRecordsPerFile", records).parquet(join(path, f"output={GOOD}"))
                if sink is None:
                    bad_rows = kept.filter(output == BAD).select("value")
                    bad_rows.write.options(**compression).text(join(path, f"output={BAD}"))
            finally:
                kept.unpersist()
    found = tally.get
    earliest, latest = metric_value(found["earliest"]), metric_value(found["latest"])
    return RunCounts(
        lines=int(found["lines"]),
        good=int(found["good"]),
        bad=int(found["bad"]),
        natural=int(found["natural"]),
        cross_batch=int(found["duplicates"]),
        earliest=None if earliest is None else earliest["collector"] * NANOS + earliest["collector_nanos"],
        latest=None if latest is None else latest["collector"] * NANOS + latest["collector_nanos"],
        types=tuple(sorted(EntityType.parse(text) for text in metric_value(found["types"]) or [])),
        synthetic=int(found["synthetic"]),
        puts=int(found["puts"]),
    )
