"""The stream transformer: the RDB stream transformer's windows on Structured Streaming, with the
dedup the reference's never had (docs/stream-transformer.md).

    python -m spark_integration.stream_transformer --iglu-config VALUE --config VALUE \\
        [--manifest URL | --duplicate-storage-config VALUE] [--checkpoint PATH] [--available-now]

Each micro-batch's lines are staged under the checkpoint, in the window the book gives it
(`events_manifest._transformer.stream.windows`); a window whose time is over is transformed as one run of
the batch transformer (the same engine, dedup, commit and message) into `run=...-<appId>` under
`output.path`. A restart from the checkpoint neither loses nor doubles: Spark replays a batch it
did not commit, the book sends it to the same window, and the run ledger gives a window's run
transformed again the same etl time, hence the manifest's same answers.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from types import TracebackType

import attrs
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from events_manifest import DuplicateStorage, ManifestConfigError, ManifestError
from events_manifest._job_flags import (
    TransformerFlags,
    add_common_flags,
    add_config_flags,
)
from events_manifest._jobs.face import (
    INPUT,
    MANIFEST,
    NOTHING_WRITTEN,
    Folder,
    Listing,
    Place,
    beat,
    check_places,
    claim,
    inside,
    join,
    quiet,
    silent_for,
)
from events_manifest._manifest.face import LEASE_SECONDS, Advice
from events_manifest._opening.face import manifest_files
from events_manifest._transformer.face import (
    COMPLETE,
    ForwardClock,
    KinesisInput,
    KinesisStreamMissing,
    PubsubInputError,
    ReadFiles,
    RunResult,
    ShardReader,
    Stager,
    StreamConfig,
    StreamSource,
    TransformerConfigError,
    WindowBook,
    WindowFlow,
    check_subscription,
    last_offset,
    pinned,
    sentry_of,
    staged_folder,
)
from events_manifest.iglu import ResolverConfig
from spark_integration._spark.api import check_python_streams, package_advice
from spark_integration._spark.failures import (
    ExecutorsEnvironment,
    JobFailed,
    KinesisStopped,
    UnreadableFile,
    UnreadableName,
    of_query,
)
from spark_integration._spark.running import refused, run_job
from spark_integration._spark.storage import HadoopStorage
from spark_integration._transformer.job import Job  # one window is one run of the batch job
from spark_integration._transformer.rows import write_run
from spark_integration.session import local_session

CHECKPOINT = "_checkpoint"
"""The checkpoint's folder under `output.path` when `--checkpoint` does not name one."""
SPARK = "spark"
"""Spark's own checkpoint, inside ours."""
BEAT_SECONDS = 60
WATCH_SECONDS = 60
"""How often the input folder is listed for files changed after they were read (and at start and stop)."""
EVERY_FILE = "36500d"
"""The file source's `maxFileAge`: Spark's own (a week) ignores a file that appears with a modification
time more than a week before the newest file's (one copied with its times kept), and loses its events."""
COMMITTED = "the windows whose batches were all staged are committed"
"""What a stop on a failure commits."""
ADVICE = Advice(
    rerun_other="start the stream transformer again on its checkpoint: it commits a stopped window before any other",
    rerun="nothing: a window is transformed again only while its folder holds no commit",
    item=None,
    etl_time=None,
)
"""How a stream transformer user follows the run ledger's advice."""


class StreamFailedError(ManifestError):
    """The streaming query failed (a micro-batch, or a window's commit in it): nothing is lost, the
    next start on the same checkpoint replays what was not committed."""


class StreamTransformer:
    """One start of the stream transformer: the checkpoint and the output claimed for as long as
    it runs (a second job on either is refused), its windows committed as they end.

        with StreamTransformer(spark, config, iglu=iglu, manifest=url) as stream:
            stream.start()
            ...                      # stream.commit_due() from time to time
        # leaving the block stops the query and commits every window it filled
    """

    def __init__(
        self,
        spark: SparkSession,
        config: StreamConfig,
        *,
        iglu: ResolverConfig | None = None,
        manifest: str | DuplicateStorage | None = None,
        checkpoint: str | None = None,
        clock: Callable[[], float] = time.time,
        report: Callable[[str], None] = print,
        warn: Callable[[str], None] = lambda line: print(f"stream transformer: warning: {line}", file=sys.stderr),
    ) -> None:
        config.check_supported(manifest=manifest is not None, iglu=iglu is not None)
        self.spark, self.config, self.report, self.warn = spark, config, report, warn
        self.clock = ForwardClock(clock)  # the wall clock (`clock`) only taken forward
        self.storage = storage = HadoopStorage(spark)
        self.checkpoint = storage.qualify(checkpoint or join(config.output, CHECKPOINT))
        config.source.check_checkpoint(storage, join(self.checkpoint, SPARK, "offsets"), self.checkpoint)
        self.app_id = str(uuid.uuid4())
        self.book = WindowBook(storage, self.checkpoint, config.window_seconds, self.app_id)
        protected = [Place(MANIFEST, path) for path in manifest_files(manifest)]
        if config.source.type == "file":
            if not storage.is_folder(config.source.path):
                raise TransformerConfigError(
                    f"input.dir [{config.source.path}] is not a folder: make it, or correct input.dir"
                )
            protected.append(Place(INPUT, config.source.path))
        self._missing: KinesisStreamMissing | None = None
        self._kinesis: KinesisInput | None = None
        """The Kinesis input as the query reads it (`LATEST` pinned)."""
        self._started_ms = 0
        """When `start` began, by this machine's clock: what an available-now run reads up to."""
        if config.source.kinesis is not None:
            check_python_streams(spark, "input.type kinesis")
            try:
                ShardReader(config.source.kinesis).shards_waited()  # a stream that does not exist: one line, first
            except KinesisStreamMissing as e:
                if not storage.exists(self.book.root):
                    raise
                self._missing = e  # `start` commits what an earlier start staged, then says so
        if config.source.pubsub is not None:
            check_subscription(config.source.pubsub)  # one that does not exist: one line, first
        self._stager: Stager | None = None
        """The Pub/Sub input's puller, while it pulls."""
        outputs = [Place("output folder", config.output, folder=True)]
        if not inside(self.checkpoint, storage.qualify(config.output)):
            outputs.append(Place("checkpoint", checkpoint or self.checkpoint, folder=True))
        check_places(storage, outputs, protected)
        self.job = Job.on(
            spark,
            storage,
            attrs.evolve(config.run, input=self.book.lines_root),
            iglu,
            manifest,
            rerun=True,  # a window is transformed again only while its folder holds no commit: not delivered
            advice=ADVICE,
            lister=self._listing,
        )
        self.flow = WindowFlow(self.book, self.job, write_run, self.clock, report, warn)
        self.query: StreamingQuery | None = None
        self._claims: list[Folder] = []
        self._last_beat = 0.0
        self._read_files: ReadFiles | None = ReadFiles(storage, join(self.checkpoint, SPARK, "sources", "0"))
        self._last_watch = 0.0

    @property
    def results(self) -> list[RunResult]:
        """Every run this start committed, in order."""
        return self.flow.results

    def __enter__(self) -> StreamTransformer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop(commit=kind is None or issubclass(kind, KeyboardInterrupt))

    def start(self, *, available_now: bool = False) -> StreamingQuery:
        """Claim the output and the checkpoint, commit what an earlier start left, then start the
        query: every micro-batch staged in its window (`_stage`)."""
        storage, run_id = self.storage, uuid.uuid4().hex
        self._started_ms = int(time.time() * 1000)
        try:
            for path, role in ((self.config.output, "output"), (self.checkpoint, "checkpoint")):
                qualified = storage.qualify(path)
                judge = silent_for(storage, qualified, LEASE_SECONDS)
                self._claims.append(
                    claim(storage, qualified, path, f"stream transformer's {role}", run_id, dead_elsewhere=judge)
                )
            self.beat()
            self.watch_files(now=True)
            self._check_new_checkpoint()
            self.flow.metrics.open()
            self.flow.begin()
            if self._missing is not None:
                done = self.flow.commit_due(ending=True)
                raise KinesisStreamMissing(f"{self._missing}; {_staged(done, self.flow.torn())}")
            self.flow.commit_due()
            self.query = self._query(available_now)
        except BaseException:
            self.flow.metrics.close()
            self._release()
            raise
        return self.query

    def _query(self, available_now: bool) -> StreamingQuery:
        source = self.config.source
        if source.kinesis is not None:
            self._kinesis = pinned(source.kinesis, self.storage, self.checkpoint)
            source = attrs.evolve(source, kinesis=self._kinesis)
        if source.pubsub is not None:
            staged = staged_folder(self.checkpoint)
            self._stager = Stager(source.pubsub, self.storage, staged)
            source = attrs.evolve(source, path=staged)
            if available_now:
                self._stager.drain()  # what the subscription holds now, staged; the query reads it
                self._stager = None
            else:
                self._stager.start()
        writer = (
            _lines(self.spark, source, self.storage)
            .writeStream.queryName(f"stream transformer {self.app_id}")
            .option("checkpointLocation", join(self.checkpoint, SPARK))
            .foreachBatch(self._stage)
        )
        if available_now:
            return writer.trigger(availableNow=True).start()
        return writer.trigger(processingTime=f"{self.config.trigger_seconds} seconds").start()

    def _check_new_checkpoint(self) -> None:
        """A new checkpoint reads the input from its start: over an output that holds committed
        windows (a checkpoint deleted without its output), their events would be committed again.
        Refused, unless a manifest drops them (then said)."""
        storage, output = self.storage, self.storage.qualify(self.config.output)
        started = storage.exists(join(self.checkpoint, SPARK, "offsets")) or storage.exists(self.book.root)
        if started or not storage.is_folder(output):
            return
        windows = sorted(
            name
            for name in storage.children(output)
            if name.startswith("run=") and storage.exists(join(output, name, COMPLETE))
        )
        if not windows:
            return
        held = f"output [{self.config.output}] holds {len(windows)} committed windows ({windows[0]}, ...)"
        if self.job.handle is not None:
            self.report(
                f"The checkpoint is new and {held}: the input is read from its start, and the manifest drops the "
                "events they hold as cross-batch duplicates"
            )
            return
        raise TransformerConfigError(
            f"checkpoint [{self.checkpoint}] is new but {held}: a new checkpoint reads the input from its start "
            "and would commit their events again. Give a new output.path, or start with a manifest (--manifest), "
            "which drops what they hold; nothing was written"
        )

    def beat(self) -> None:
        """A sign of life in the claimed folders, at most once a minute (for a job on another host
        that finds them claimed)."""
        now = time.time()
        if now - self._last_beat < BEAT_SECONDS:
            return
        for folder in self._claims:
            beat(self.storage, folder.path, now)
        self._last_beat = now

    def watch_files(self, *, now: bool = False) -> None:
        """Warn, a line a file, of every input file that changed after the file source read it (one
        still being written, or replaced under its name): the file source does not read it again;
        and of every sub-folder of the input, whose files it does not read. Every `WATCH_SECONDS`
        (each listing costs a listing of the input), or `now`."""
        if self.config.source.type != "file" or (not now and time.monotonic() - self._last_watch < WATCH_SECONDS):
            return
        self._last_watch = time.monotonic()
        if self._read_files is None:
            return
        try:
            self._read_files.update()
        except ValueError as e:  # a Spark whose log this version does not know
            self.warn(f"{e}: files changed after they were read are not told")
            self._read_files = None
            return
        for folder in sorted(self._read_files.folders()):
            for line in self._read_files.changed(self.storage.modified_times(folder)):
                self.warn(line)
        for line in self._read_files.nested(self.storage.entries(self.config.source.path)):
            self.warn(line)

    def commit_due(self) -> list[RunResult]:
        """Commit every window whose time is over (and the windows an earlier start left)."""
        return self.flow.commit_due()

    def stop(self, *, commit: bool = True) -> list[RunResult]:
        """Stop the query; with `commit`, commit every window of which every batch is staged, ended
        early (a batch the stop interrupted is replayed at the next start, into its own window).
        The claims are released. A query that failed raises its error here, after that."""
        committed: list[RunResult] = []
        failure = None
        try:
            if self._stager is not None:
                self._stager.stop()  # what it pulled is staged: the next start reads what this one did not
                self._stager = None
            if self.query is not None:
                self.query.stop()
                failure = self.query.exception()
                self.query = None  # stopped, its failure told once
            if self._claims:
                self.watch_files(now=True)
            if commit and self._claims:
                committed = self.flow.commit_due(ending=True)
        except Exception:
            if failure is None:
                raise  # else the query's own failure, below, is the one to tell
        finally:
            self.flow.metrics.close()
            self._release()
        if failure is not None:
            raise StreamFailedError(f"the stream stopped: {_failure(str(failure))}")
        return committed

    def run(self, *, available_now: bool = False, poll: float = 1.0, stop: threading.Event | None = None) -> int:
        """Start, then commit windows as they end until the query ends (`available_now`: once it
        has read what the input holds) or `stop` is set; then stop (see `stop`). The lines read."""
        stop = stop or threading.Event()
        try:
            query = self.start(available_now=available_now)
            while not stop.is_set():
                while query.isActive and not stop.is_set():
                    query.awaitTermination(poll)  # type: ignore[arg-type]  # seconds, fractions too
                    if self._stager is not None:
                        self._stager.check()  # a pull that ended (the subscription deleted) stops the job
                    self.beat()
                    self.watch_files()
                    self.commit_due()
                if stop.is_set() or not self._read_again(query, available_now):
                    break
                self.query = query = self._query(available_now)
        except KeyboardInterrupt:
            pass  # a stop asked for: what is staged is committed below
        except PubsubInputError as e:
            self.stop()  # what was staged is durable: its windows committed
            raise PubsubInputError(f"the stream stopped: {e}; {COMMITTED}") from None
        except BaseException:
            failed = self.query is not None and not self.query.isActive and self.query.exception() is not None
            self.stop(commit=failed)  # the query's own failure (the stream deleted): what it staged, committed
            raise
        self.stop()
        return sum(result.lines for result in self.results)

    def _read_again(self, query: StreamingQuery, available_now: bool) -> bool:
        """Whether an `available_now` run on Kinesis has more to read of the stream as it was when
        the run started: Spark's available-now for a Python source reads one micro-batch (a replayed
        one, after a kill), and a throttled trigger reads nothing. Another query goes on."""
        kinesis = self._kinesis
        if not available_now or kinesis is None or query.exception() is not None:
            return False
        reader, found = ShardReader(kinesis), last_offset(self.storage, join(self.checkpoint, SPARK, "offsets"))
        return reader.behind(reader.initial() if found is None else json.loads(found), self._started_ms)

    def _release(self) -> None:
        for folder in reversed(self._claims):
            quiet(self.storage, folder.path)
            folder.release()
        self._claims = []

    def _stage(self, batch: DataFrame, batch_id: int) -> None:
        """One micro-batch, staged in its window as Parquet records (`WindowFlow.stage`)."""

        def write_lines(folder: str) -> None:
            records = batch.select(F.col("value").cast("binary"))  # a line or a record, whatever line ends it holds
            records.write.mode("overwrite").parquet(folder)

        self.flow.stage(batch_id, write_lines)

    def _listing(self, name: str) -> Listing:
        """A window's records: the files of each of its batches' folders."""
        window = join(self.book.lines_root, name)
        batches = self.storage.subfolders(window) if self.storage.exists(window) else []
        return attrs.evolve(self.storage.folder_files(*(join(window, batch) for batch in batches)), records=True)


def _staged(done: Sequence[RunResult], torn: bool) -> str:
    """What a start whose stream is gone committed of what an earlier start staged, and whether a
    batch it was staging when it stopped is left (not whole: its records were only in the stream)."""
    said = (
        f"what an earlier start staged is committed: {', '.join(result.name for result in done)}"
        if done
        else "nothing staged was left to commit"
    )
    return f"{said}; a batch it was staging when it stopped is not whole and is not committed" if torn else said


def _failure(text: str) -> str:
    """What a failed query says, and what to do so that the next start goes on: a file that cannot
    be read is moved away (the replayed batch goes on without it) and put back under a new name."""
    replayed = "start again on the same checkpoint: the batch that failed is read again without it"
    match of_query(text):
        case KinesisStopped(said):
            return f"{said}; {COMMITTED}"
        case UnreadableName() as name:
            return f"{name.said}, then {replayed}, the renamed file after it; {COMMITTED}"
        case UnreadableFile(file, cause):
            return (
                f"input file {file} could not be read ({cause}): move it out of input.dir, then {replayed}; to read "
                f"it, put it back whole under a new name; {COMMITTED}"
            )
        case JobFailed(cause) | ExecutorsEnvironment(cause):
            go_on = "start it again on the same checkpoint to go on from the batch that failed"
            return f"{cause}. The {COMMITTED[4:]}; {go_on}"


def _lines(spark: SparkSession, source: StreamSource, storage: HadoopStorage) -> DataFrame:
    """The stream of enriched lines, a column `value`: a file's line, or a record's bytes whole."""
    if source.kinesis is not None:  # the Spark line checked by `StreamTransformer` before it starts
        from spark_integration._stream.kinesis import kinesis_lines  # pyspark 4's datasource module: after the check

        return kinesis_lines(spark, source.kinesis)
    if source.pubsub is not None:  # the subscription's messages as `Stager` staged them: `<id> <data in base64>`
        staged = spark.readStream.format("text").option("maxFileAge", EVERY_FILE).option("cleanSource", "delete")
        # the data after the id; the whole line where an earlier version staged the data alone
        data = F.unbase64(F.substring_index("value", " ", -1))
        return staged.load(storage.qualify(source.path)).select(data.alias("value"))
    if source.type == "file":
        reader = (
            spark.readStream.format("text")
            .option("maxFileAge", EVERY_FILE)
            .option("ignoreMissingFiles", "true")  # a replayed batch goes on without a file moved away (see `stop`)
        )
        return reader.load(storage.qualify(source.path)).select("value")  # relative to this process's folder
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", source.bootstrap_servers)
        .option("subscribe", source.topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in source.options:
        reader = reader.option(f"kafka.{key}", value)
    try:
        return reader.load().select("value")
    except AnalysisException as e:
        if "kafka" not in str(e).lower():
            raise
        raise TransformerConfigError(
            "input.type kafka needs Spark's Kafka connector, which is not on the classpath: start with "
            f"--packages {package_advice(spark, 'spark-sql-kafka-0-10')} "
            f"(or spark.jars.packages), or read a folder (input.type = file)"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spark_integration.stream_transformer",
        description="The RDB stream transformer on Structured Streaming, with dedup: each window of enriched events "
        "deduplicated (natural, synthetic, and across windows and restarts through the manifest), transformed and "
        "committed by its shredding_complete.json.",
    )
    add_config_flags(parser)
    parser.add_argument(
        "--checkpoint", metavar="PATH", help=f"the stream's checkpoint (default: {CHECKPOINT} under output.path)"
    )
    parser.add_argument(
        "--available-now",
        action="store_true",
        help="read what the input holds now, commit its windows, and stop (a backfill, or a scheduled run)",
    )
    add_common_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        flags = TransformerFlags.of(args, StreamConfig.parse)
        sentry = sentry_of(
            flags.config.run.monitoring.sentry_dsn,
            lambda line: print(f"stream transformer: warning: {line}", file=sys.stderr),
        )
    except ManifestConfigError as e:
        return refused(e)
    stop, started = threading.Event(), threading.Event()

    def job() -> int:
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())  # from the start: a SIGTERM is never lost
        manifest = flags.manifest.open()
        spark = local_session(args.master, verbose=args.verbose)
        try:
            stream = StreamTransformer(
                spark, flags.config, iglu=flags.iglu, manifest=manifest, checkpoint=args.checkpoint
            )
        except ManifestConfigError as e:
            return refused(e)
        started.set()
        config = flags.config
        print(f"Stream Transformer: reading {config.source.describe()}, {config.window_seconds}-second windows")
        stream.run(available_now=args.available_now, stop=stop)
        return 0

    return run_job(
        "stream transformer",
        job,
        verbose=args.verbose,
        interrupted=lambda: _interrupted() if started.is_set() else f"interrupted; {NOTHING_WRITTEN}",
        on_interrupt=stop.set,  # Ctrl-C as SIGTERM: a graceful stop (a second one stops at once)
        at_once="stopped at once: the next start on the same checkpoint commits what was left",
        on_error=None if sentry is None else sentry.report,
    )


def _interrupted() -> str:
    return "interrupted: the windows whose batches were all staged are committed; the next start goes on from there"


if __name__ == "__main__":
    sys.exit(main())
