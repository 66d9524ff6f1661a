"""The transformer: the modern RDB Transformer's batch job (wide-row JSON) on PySpark.

    python -m spark_integration.transformer --iglu-config VALUE --config VALUE \\
        [--duplicate-storage-config VALUE | --manifest URL]

Each sub-folder of the config's `input` is a run, transformed into the folder of the same name
under `output.path` and committed by its `shredding_complete.json` (docs/transformer.md). Spark
reads, shuffles and writes; the core's engine (`events_manifest._transformer`) decides.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from events_manifest import (
    DuplicateStorage,
    ManifestConfigError,
    ManifestError,
    __version__,
    init_storage,
    parse_config,
)
from events_manifest._backends.dynamodb.config import DynamoDbConfig
from events_manifest._jobs import steps
from events_manifest._jobs.folders import STAGING_PREFIX, FolderClaimedError, Judge, claim, owner
from events_manifest._jobs.places import INPUT, MANIFEST, Place, check_places
from events_manifest._jobs.run import JobRun
from events_manifest._jobs.storage import Listing, join
from events_manifest._manifest.factory import manifest_files, with_dynamodb_flags
from events_manifest._manifest.handle import ManifestHandle
from events_manifest._manifest.ledger import LEASE_SECONDS, Advice
from events_manifest._manifest.ledger import now_seconds as runs_now
from events_manifest._transformer import kinesis
from events_manifest._transformer import queue as queues
from events_manifest._transformer.batch import BAD, GOOD, META, PARSED, Decide, Parse
from events_manifest._transformer.commit import (
    DATA,
    OUTPUTS,
    RunCounts,
    RunFolder,
    State,
    deliver,
    inspect,
    seal,
    sealed_counts,
    tidy,
)
from events_manifest._transformer.config import TransformerConfig, TransformerConfigError, decode_value, hocon_to_json
from events_manifest._transformer.discovery import discover, folder_uri
from events_manifest._transformer.entity_types import EntityType
from events_manifest._transformer.event import atomic_limits
from events_manifest._transformer.jvm import NANOS
from events_manifest._transformer.kinesis import KinesisSink
from events_manifest._transformer.message import shredding_complete
from events_manifest._transformer.parquet import ParquetColumns, build_columns
from events_manifest._transformer.parquet_types import TIMESTAMP
from events_manifest._transformer.shredded import PARTITIONS as SHRED_PARTITIONS
from events_manifest._transformer.shredded import Routing, Shredder
from events_manifest.errors import RunConflictError
from events_manifest.iglu import ResolverConfig
from events_manifest.model import from_epoch_seconds, to_epoch_seconds
from spark_integration._cli_flags import add_common_flags, run_job
from spark_integration._storage import HadoopStorage
from spark_integration.session import local_session

APPLICATION = f"events-manifest transformer {__version__}"
PARSED_TYPE = from_arrow_schema(PARSED)
CACHE_SETTINGS = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}
"""Spark's cache of a parsed run, uncompressed: its columns are long distinct lines, which the
cache's encodings do not shrink, and gathering their statistics hashes every byte (a third of the
JVM's time in a profiled run)."""
PARQUET_SETTINGS = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.writeLegacyFormat": "false",
}
"""The Parquet writer's settings, as the reference sets them: timestamps as microseconds, dates in
the proleptic Gregorian calendar, lists as the standard three-level LIST."""


@attrs.frozen
class RunResult:
    """What one run wrote: its folder, its counts, its message."""

    name: str
    base: str
    counts: RunCounts
    message: str

    @property
    def lines(self) -> int:
        return self.counts.lines

    @property
    def good(self) -> int:
        return self.counts.good

    @property
    def bad(self) -> int:
        return self.counts.bad

    @property
    def natural_duplicates(self) -> int:
        return self.counts.natural

    @property
    def cross_batch_duplicates(self) -> int:
        return self.counts.cross_batch

    def line(self) -> str:
        return self.counts.line(self.name)


class RunHeldError(ManifestError):
    """Another transformer is writing a run: it and the runs after it are left to it."""


@attrs.define
class Progress:
    """Where a `transform` call is, for what an interruption says."""

    committed: list[str] = attrs.field(factory=list)
    current: str | None = None
    sealed: bool = False
    started: bool = False
    """Whether a run began: a refusal before that read and wrote nothing."""

    def interrupted(self) -> str:
        done = (
            f"{len(self.committed)} runs committed before ({', '.join(self.committed[-3:])}); "
            if self.committed
            else ""
        )
        if self.current is None:
            return f"interrupted between runs: {done}the next invocation goes on with the runs after them"
        state = "its rows are sealed" if self.sealed else "nothing of it was committed"
        return f"interrupted during {self.current}: {done}{state}, and the next invocation finishes it"


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
    before it are committed). Runs a killed or failed invocation left are finished first."""
    progress = progress if progress is not None else Progress()
    check_supported(config, manifest, iglu)
    storage = HadoopStorage(spark)
    if not storage.is_folder(config.input):
        raise TransformerConfigError(f"input [{config.input}] is not a folder: nothing was written")
    protected = [Place(INPUT, config.input), *(Place(MANIFEST, path) for path in manifest_files(manifest))]
    check_places(storage, [Place("output folder", config.output, folder=True)], protected)
    job = Job.create(spark, storage, config, iglu, manifest, random_ids=random_synthetic_ids, rerun=rerun)
    inputs = storage.subfolders(config.input)
    outputs = storage.children(config.output) if storage.exists(config.output) else []
    found = discover(inputs, outputs, config.run_interval, datetime.now(UTC))
    folders = {name: inspect(storage, join(config.output, name)) for name in found.done}
    dead = job.reconcile(folders, inputs)
    started = [name for name in found.done if folders[name].state in _TO_FINISH]
    waiting = {*found.to_process, *started}
    first = sorted({*started, *(name for name in dead if name in waiting)})
    runs = [*first, *(name for name in sorted(found.to_process) if name not in first)]
    results = []
    for name in runs:
        report(f"Batch Transformer: processing {folder_uri(storage.qualify(join(config.input, name)))}")
        progress.current, progress.sealed, progress.started = name, False, True
        result = job.run(name, progress)
        progress.current = None
        if result is not None:
            progress.committed.append(name)
            report(result.line())
            results.append(result)
    incomplete = [name for name in found.done if folders[name].state is State.INCOMPLETE]
    for name in incomplete:
        warn(f"{folder_uri(storage.qualify(join(config.input, name)))} was not successfully shredded")
    if not incomplete:
        report("No incomplete folders were discovered")
    return results


_TO_FINISH = (State.SEALED, State.UNFINISHED, State.ABSENT)
"""The states of a run folder a stopped run left: finished before any new run."""
ADVICE = Advice(
    rerun_other="run the transformer whose input holds it: it finishes a stopped run before any other",
    rerun="--rerun",
    item=None,
    etl_time=None,
)
"""How a transformer user follows the run ledger's advice."""


def _clean_flag(handle: ManifestHandle | None) -> str:
    """The manifest as `events-manifest clean` takes it, when it has a URL."""
    return f"--manifest '{handle.url}'" if handle is not None and handle.url is not None else ""


def check_supported(config: TransformerConfig, manifest: object | None, iglu: ResolverConfig | None) -> None:
    """Refuse the settings the transformer does not run with, before anything is read."""
    if (config.transformation == "shred" or config.file_format == "parquet") and iglu is None:
        raise TransformerConfigError("shred mode and Parquet need an Iglu resolver config: columns come from schemas")
    if manifest is not None and not config.natural:
        raise TransformerConfigError(
            "Natural deduplication needs to be enabled when cross batch deduplication is enabled"
        )
    if config.legacy_message and config.transformation == "widerow":
        raise TransformerConfigError("LegacyShreddingComplete message is only supported when shredding")


@attrs.frozen
class Job:
    """What every run of one `transform` call shares."""

    spark: SparkSession
    storage: HadoopStorage
    config: TransformerConfig
    iglu: ResolverConfig | None
    limits: dict[str, int] | None
    handle: ManifestHandle | None
    opened: DuplicateStorage | None
    sender: Any
    kinesis: kinesis.Stream | None
    random_ids: bool
    rerun: bool
    advice: Advice
    input_root: str
    """The input folder, qualified: a run's item is its folder below it."""
    lister: Callable[[str], Listing] | None = None
    """A run's input files, by its name; None: the files directly in its input folder."""

    @classmethod
    def create(
        cls,
        spark: SparkSession,
        storage: HadoopStorage,
        config: TransformerConfig,
        iglu: ResolverConfig | None,
        manifest: str | DuplicateStorage | None,
        *,
        random_ids: bool = False,
        rerun: bool = False,
        advice: Advice = ADVICE,
        lister: Callable[[str], Listing] | None = None,
    ) -> Job:
        """The job of `config`, its manifest opened (a missing table or unusable file fails here)."""
        handle = ManifestHandle.of(manifest) if manifest is not None else None
        return cls(
            spark,
            storage,
            config,
            iglu,
            atomic_limits(iglu) if config.truncate_atomic_fields else None,
            handle,
            handle.open() if handle is not None else None,
            queues.client(config.queue) if config.queue is not None else None,
            kinesis.Stream.of(config.bad) if config.bad.type == "kinesis" else None,
            random_ids,
            rerun,
            attrs.evolve(advice, manifest=_clean_flag(handle)),
            storage.qualify(config.input),
            lister,
        )

    def listing(self, name: str) -> Listing:
        """The files the run `name` reads."""
        if self.lister is not None:
            return self.lister(name)
        return self.storage.folder_files(join(self.config.input, name))

    def shredder(self) -> Shredder | None:
        config = self.config
        if config.transformation != "shred" or self.iglu is None:
            return None
        return Shredder(Routing(config.default_format, config.json, config.tsv, config.skip), self.iglu)

    def send(self, name: str) -> Callable[[str], None] | None:
        """How the run's message goes to the queue, if one is configured."""
        queue, sender = self.config.queue, self.sender
        if queue is None or sender is None:
            return None
        base = folder_uri(self.storage.qualify(join(self.config.output, name)))
        return lambda message: queues.send(queue, sender, message, base)

    def outputs(self) -> tuple[str, ...]:
        """The folders a run delivers: no `output=bad/` when bad rows go to Kinesis."""
        return OUTPUTS if self.kinesis is None else OUTPUTS[:1]

    def item(self, name: str) -> str:
        """A run's item in the manifest's ledger: its input folder."""
        return join(self.input_root, name)

    def reconcile(self, folders: dict[str, RunFolder], inputs: Sequence[str]) -> list[str]:
        """Bring the ledger to what the output says: a committed run whose ledger record a kill left
        unfinished is finished, and what that kill left beside its output removed. The names of the
        runs the ledger holds as stopped, to finish before any new run."""
        for name, found in folders.items():
            if found.state is State.COMMITTED and (found.leftovers() or found.claimed):
                tidy(self.storage, found, self.dead_elsewhere(name))
        if self.opened is None:
            return []
        now = runs_now()
        names = {self.item(name): name for name in inputs}
        stopped = []
        for record in self.opened.runs():
            of = names.get(record.item)
            if record.finished or of is None or not record.dead(now):
                continue
            if of in folders and folders[of].state is State.COMMITTED:
                self.opened.finish_run(record)
            else:
                stopped.append(of)
        return stopped

    def dead_elsewhere(self, name: str) -> Judge:
        """Whether a claim on the run `name` written on another host is dead: its run's record in
        the ledger says so (no sign of life for `ledger.LEASE_SECONDS`), or, with no record yet, the
        claim is older than that. Without a manifest nothing tells: it is not."""

        def judge(held: dict[str, Any]) -> bool:
            if self.opened is None:
                return False
            now = runs_now()
            item, holder = self.item(name), owner(held)
            records = [r for r in self.opened.runs() if r.item == item and not r.finished and r.owner == holder]
            if records:
                return all(record.dead(now) for record in records)
            return now - float(held.get("since", now)) > LEASE_SECONDS

        return judge

    def run(self, name: str, progress: Progress) -> RunResult | None:
        """Transform, or finish, the run `name` under its claim (see the module); None when
        another transformer committed it meanwhile."""
        return _run(self, name, progress)


def _run(job: Job, name: str, progress: Progress) -> RunResult | None:
    storage, base = job.storage, join(job.config.output, name)
    try:
        folder = claim(
            storage, storage.qualify(base), base, "run", uuid.uuid4().hex, dead_elsewhere=job.dead_elsewhere(name)
        )
    except FolderClaimedError as e:
        raise RunHeldError(f"{e}: it and the runs after it are left to it") from None
    try:
        found = inspect(storage, base)  # again, under the claim: another transformer may have committed it
        if found.state is State.COMMITTED:
            tidy(storage, found, job.dead_elsewhere(name))
            return None
        if found.state is State.INCOMPLETE:
            return None
        for stale in found.staging:
            if stale != found.sealed:
                storage.delete(join(base, stale))
        if found.sealed is not None:
            return _finish(job, name, join(storage.qualify(base), found.sealed), progress)
        return _transform(job, name, progress)
    finally:
        folder.release()
        if storage.exists(base) and not storage.children(base):
            storage.delete(base)


def _begin(job: Job, name: str, *, source: str, rerun: bool) -> AbstractContextManager[JobRun]:
    """The run's record in the manifest's ledger (none without a manifest)."""
    return JobRun.begin(
        job.opened,
        job.item(name),
        APPLICATION,
        source=source,
        output=job.storage.qualify(join(job.config.output, name)),
        rerun=rerun,
        advice=job.advice,
    )


def _held(error: RunConflictError, job: Job, name: str) -> ManifestError | None:
    """What a ledger refusal means here: None when another transformer committed the run meanwhile
    (done), the way held when one is running it, else the refusal itself."""
    if inspect(job.storage, join(job.config.output, name)).state is State.COMMITTED:
        return None
    text = str(error)
    if "is still running" in text:
        return RunHeldError(f"{name}: {text}; it and the runs after it are left to it")
    return error


def _finish(job: Job, name: str, staging: str, progress: Progress) -> RunResult | None:
    """Deliver a run a stopped invocation sealed: the same rows, counts and message."""
    storage = job.storage
    counts = sealed_counts(storage, staging)
    progress.sealed = True
    try:
        with _begin(job, name, source="", rerun=True) as run:
            run.start(datetime.now(UTC))
            base = storage.qualify(join(job.config.output, name))
            message = deliver(storage, base, staging, job.send(name), outputs=job.outputs())
    except RunConflictError as e:
        if (refusal := _held(e, job, name)) is not None:
            raise refusal from None
        return None
    return RunResult(name, storage.qualify(join(job.config.output, name)), counts, message)


def _transform(job: Job, name: str, progress: Progress) -> RunResult | None:
    storage, config = job.storage, job.config
    base = storage.qualify(join(config.output, name))
    listing = job.listing(name)
    now = time.time_ns()
    try:
        with _begin(job, name, source=listing.identity(), rerun=job.rerun) as run:
            started = time.time_ns()
            staging = join(base, f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}")
            try:
                counts = _write_run(job, run, listing, staging, now)
                steps.reached("staged")
                message = _message(job, base, counts, started)
                seal(storage, staging, message, counts)
            except BaseException:
                storage.delete(staging)
                raise
            progress.sealed = True
            deliver(storage, base, staging, job.send(name), outputs=job.outputs())
    except RunConflictError as e:
        if (refusal := _held(e, job, name)) is not None:
            raise refusal from None
        return None
    return RunResult(name, base, counts, message)


def _write_run(job: Job, run: JobRun, listing: Listing, staging: str, now: int) -> RunCounts:
    """Read, decide and write the run's rows under `staging`; its counts. A run of no lines
    writes nothing and is counted so (the ledger records it all the same)."""
    spark, config, handle = job.spark, job.config, job.handle
    shred_mode = config.transformation == "shred"
    parquet_mode = not shred_mode and config.file_format == "parquet"
    parse = Parse(job.limits, config.minimum_timestamp, now, wide_rows=not shred_mode and not parquet_mode)
    lines = _lines(spark, job.storage, listing)
    if lines is None:
        run.start(datetime.now(UTC))
        return RunCounts()
    parsed = lines.mapInArrow(_parser(parse), PARSED_TYPE)
    cache = parquet_mode or (config.spark_cache if config.spark_cache is not None else handle is not None)
    with contextlib.ExitStack() as stack:
        if cache:
            stack.enter_context(_settings(spark, CACHE_SETTINGS))
            parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
            stack.callback(parsed.unpersist)
        return _decide_and_write(job, run, parsed, staging, now, parquet_mode, shred_mode)


@contextlib.contextmanager
def _settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """The session's `settings` for the time of a run, the user's own put back after it."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def _decide_and_write(
    job: Job, run: JobRun, parsed: DataFrame, staging: str, now: int, parquet_mode: bool, shred_mode: bool
) -> RunCounts:
    """The parsed run decided and written under `staging` (see `_write`); its counts, checked."""
    config, handle = job.config, job.handle
    earliest, types = _run_facts(parsed, etl=handle is not None, types=parquet_mode)
    columns = _columns(types, job.iglu, config) if parquet_mode else None
    etl = run.start(earliest if handle is not None else datetime.now(UTC))
    decide = Decide(
        natural=config.natural,
        threshold=config.synthetic_threshold,
        manifest=handle,
        etl_seconds=to_epoch_seconds(etl),
        random_ids=job.random_ids,
        limits=job.limits,
        skip=config.skip_schemas,
        shredder=job.shredder(),
        parquet=columns,
        now=now,
    )
    counts = _write(parsed, decide, join(staging, DATA), config, shred_mode, job.kinesis)
    counts.check()
    return counts


def _message(job: Job, base: str, counts: RunCounts, started: int) -> str:
    config = job.config
    return shredding_complete(
        folder_uri(base),
        [(t.schema_key, t.entity, t.format) for t in counts.types],
        file_format=None if config.transformation == "shred" else config.file_format,
        legacy=config.legacy_message,
        started=started,
        completed=time.time_ns(),
        earliest=counts.earliest,
        latest=counts.latest,
        compression=config.compression,
        good=counts.good,
        bad=counts.bad,
    )


def _lines(spark: SparkSession, storage: HadoopStorage, listing: Listing) -> DataFrame | None:
    """The run's lines: every file of `listing` (the files directly in its folder, whatever their
    names), compressed ones decoded, lines ending at LF, CRLF or CR; None when there are none."""
    if not listing.bytes:
        return None
    lines = spark.read.text([_literal(name) for name, _ in listing.files]).select(F.col("value").cast("binary"))
    if all(_compressed(name) for name, size in listing.files if size) and lines.isEmpty():
        return None  # compressed files of no lines: Spark's plan of them may have no partition at all
    return lines


_GLOB = re.compile(r"([\\\[\]{}*?])")


def _literal(path: str) -> str:
    """A path Spark's reader takes as itself: its glob characters escaped."""
    return _GLOB.sub(r"\\\1", path)


def _compressed(name: str) -> bool:
    return name.rsplit(".", 1)[-1].lower() in {"gz", "bz2", "deflate", "snappy", "lz4", "zst", "lzo", "br"}


def _parser(parse: Parse) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The lines parsed by the core (`Parse`), one Arrow batch at a time."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in iterator:
            yield parse.batch(batch.column(0))

    return batches


def _to_kinesis(stream: kinesis.Stream) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Decided rows with their bad rows sent to Kinesis (`kinesis.KinesisSink`) and left out."""

    def batches(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer = KinesisSink(stream.sink, stream.client())
        for batch in iterator:
            bad = pc.fill_null(pc.equal(batch.column("output"), BAD), False)
            writer.write(value for value in batch.filter(bad).column("value").to_pylist() if value is not None)
            yield batch.filter(pc.invert(bad))

    return batches


def _run_facts(parsed: DataFrame, *, etl: bool, types: bool) -> tuple[datetime, list[str]]:
    """What the run needs to know before its first put, in one pass over the parsed run: its batch
    etl time (`etl`: the earliest etl_tstamp of its good events, now if none has one) and its good
    events' entity types (`types`, for Parquet's columns)."""
    now = datetime.now(UTC)
    good = F.col("good")
    wanted = []
    if etl:
        wanted.append(F.min(F.when(good, F.col("etl"))).alias("etl"))
    if types:
        wanted.append(F.array_distinct(F.flatten(F.collect_set(F.when(good, F.col("types"))))).alias("types"))
    if not wanted:
        return now, []
    row = parsed.agg(*wanted).first()
    found = row.asDict() if row is not None else {}
    earliest = found.get("etl")
    try:
        when = from_epoch_seconds(earliest) if earliest is not None else now
    except (ValueError, OverflowError):  # a year datetime cannot hold
        when = now
    return when, list(found.get("types") or [])


def _columns(types: list[str], iglu: ResolverConfig | None, config: TransformerConfig) -> ParquetColumns:
    """The run's Parquet columns: the entity types of its good events, their schemas fetched and
    typed on the driver."""
    assert iglu is not None
    seen = [(found.schema_key, found.entity) for found in map(EntityType.parse, sorted(types))]
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


def _write(
    parsed: DataFrame,
    decide: Decide,
    path: str,
    config: TransformerConfig,
    shred_mode: bool,
    sink: kinesis.Stream | None,
) -> RunCounts:
    """Decide every row (an id's rows brought together by Spark's shuffle, then `Decide`) and write
    the good and bad lines under `path` (`output=good/`, `output=bad/`, in shred mode each line
    under its schema's partition; bad rows to Kinesis with a `sink`); the counts, observed on the way."""

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
    if sink is not None:
        observed = observed.mapInArrow(_to_kinesis(sink), decided_type)
    compression = {"compression": "gzip"} if config.compression == "GZIP" else {}
    if decide.parquet is None:
        partitions = ["output", *(SHRED_PARTITIONS if shred_mode else ())]
        written = observed.filter(F.col("value").isNotNull()).select(*partitions, "value")
        written.write.partitionBy(*partitions).options(**compression).text(path)
    else:  # two writes of one decided run: kept in Spark's cache between them, so each line is put once
        with _settings(spark, PARQUET_SETTINGS):
            observed = observed.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                rows = observed.filter(F.col("output") == GOOD).select(*_row_columns(decide.parquet))
                records = config.max_records_per_file if config.enable_max_records_per_file else 0
                rows.write.option("maxRecordsPerFile", records).parquet(join(path, f"output={GOOD}"))
                if sink is None:
                    bad_rows = observed.filter(F.col("output") == BAD).select("value")
                    bad_rows.write.options(**compression).text(join(path, f"output={BAD}"))
            finally:
                observed.unpersist()
    found = tally.get
    earliest, latest = found["earliest"], found["latest"]
    return RunCounts(
        lines=int(lines.get["lines"]),
        good=int(found["good"]),
        bad=int(found["bad"]),
        natural=int(found["natural"]),
        cross_batch=int(found["duplicates"]),
        earliest=None if earliest is None else earliest["collector"] * NANOS + earliest["collector_nanos"],
        latest=None if latest is None else latest["collector"] * NANOS + latest["collector_nanos"],
        types=tuple(sorted(EntityType.parse(text) for text in found["types"] or [])),
    )


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


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of the transformer's three values: its config, Iglu's, and the manifest's."""
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


@attrs.frozen
class ManifestFlags:
    """The manifest the command line names: a URL, or a DynamoDB config opened when the job runs
    (an unreachable table is then one line, exit 1)."""

    url: str | None = None
    config: DynamoDbConfig | None = None
    endpoint: str | None = None

    def open(self) -> str | DuplicateStorage | None:
        if self.config is not None:
            return init_storage(self.config, endpoint_url=self.endpoint)
        return self.url

    @classmethod
    def of(cls, args: argparse.Namespace) -> ManifestFlags:
        if args.duplicate_storage_config:
            text = hocon_to_json(decode_value(args.duplicate_storage_config, "--duplicate-storage-config"))
            return cls(config=parse_config(json.loads(text)), endpoint=args.dynamodb_endpoint)
        if args.manifest:
            return cls(with_dynamodb_flags(args.manifest, endpoint=args.dynamodb_endpoint))
        if args.dynamodb_endpoint:
            raise TransformerConfigError(
                "--dynamodb-endpoint goes with a DynamoDB manifest: --duplicate-storage-config or --manifest dynamodb://"
            )
        return cls()


def read_iglu(value: str) -> ResolverConfig:
    """`--iglu-config` decoded as the reference decodes it; any problem is a config error."""
    try:
        return ResolverConfig.parse(hocon_to_json(decode_value(value, "--iglu-config")), flag="--iglu-config")
    except TransformerConfigError:
        raise
    except ManifestConfigError as e:
        raise TransformerConfigError(f"Could not parse iglu resolver config: {e}") from None


def _configs(args: argparse.Namespace) -> tuple[TransformerConfig, ResolverConfig, ManifestFlags]:
    """The three values decoded as the reference decodes them; any problem is a config error."""
    config = TransformerConfig.parse(decode_value(args.config, "--config"))
    iglu = read_iglu(args.iglu_config)
    manifest = ManifestFlags.of(args)
    check_supported(config, manifest.url or manifest.config, iglu)
    return config, iglu, manifest


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config, iglu, named = _configs(args)
    except ManifestConfigError as e:  # the transformer's config, or the manifest's
        print(str(e), file=sys.stderr)
        return 2
    progress = Progress()

    def job() -> int:
        manifest = named.open()
        spark = local_session(args.master, verbose=args.verbose)
        try:
            transform(
                spark,
                config,
                iglu=iglu,
                manifest=manifest,
                random_synthetic_ids=args.random_synthetic_ids,
                rerun=args.rerun,
                progress=progress,
            )
        except ManifestConfigError as e:
            if progress.started:
                raise
            print(str(e), file=sys.stderr)  # refused before anything was read or written
            return 2
        return 0

    return run_job("transformer", job, verbose=args.verbose, interrupted=progress.interrupted)


if __name__ == "__main__":
    sys.exit(main())
