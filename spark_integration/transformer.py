"""The transformer: the modern RDB Transformer's batch job (wide-row JSON) on PySpark.

    python -m spark_integration.transformer --iglu-config VALUE --config VALUE \\
        [--duplicate-storage-config VALUE | --manifest URL]

Each sub-folder of the config's `input` is a run, transformed into the folder of the same name
under `output.path` and committed by its `shredding_complete.json` (docs/transformer.md). Spark
reads, shuffles and writes; the core's engine (`events_manifest._transformer`) decides.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

import attrs
from pyspark.sql import SparkSession

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
from events_manifest._transformer.commit import (
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
from events_manifest._transformer.event import atomic_limits
from events_manifest._transformer.message import shredding_complete
from events_manifest._transformer.metrics import Reporter
from events_manifest._transformer.sentry import Sentry
from events_manifest._transformer.shredded import Routing, Shredder
from events_manifest.errors import RunConflictError
from events_manifest.iglu import ResolverConfig
from spark_integration._cli_flags import NOTHING_WRITTEN, add_common_flags, refused, run_job
from spark_integration._storage import HadoopStorage
from spark_integration._transform_run import write_run
from spark_integration.session import local_session

APPLICATION = f"events-manifest transformer {__version__}"


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
    """Where a `transform` call is, for what an interruption or a failure says."""

    committed: list[str] = attrs.field(factory=list)
    current: str | None = None
    sealed: bool = False
    started: bool = False
    """Whether a run began: a refusal before that read and wrote nothing."""

    def _committed(self) -> str:
        count = len(self.committed)
        return f"{count} run{'' if count == 1 else 's'} committed before ({', '.join(self.committed[-3:])})"

    def _state(self) -> str:
        """The current run's state, and who finishes it."""
        done = "its rows are sealed" if self.sealed else "nothing of it was committed"
        return f"{done}, and the next invocation finishes it"

    def interrupted(self) -> str:
        since = f"{self._committed()}; " if self.committed else ""
        if self.current is None:
            return f"interrupted between runs: {since}the next invocation goes on with the runs after them"
        return f"interrupted during {self.current}: {since}{self._state()}"

    def failed(self) -> str:
        """What a failure left: nothing, or the runs committed before it and the state of its run."""
        if not self.committed:
            return NOTHING_WRITTEN
        return self._committed() if self.current is None else f"{self._committed()}; {self.current}: {self._state()}"


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
    metrics = Reporter(config.monitoring, out=report, err=warn)  # a refusal (no region) before anything is written
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
    with metrics:
        for name in runs:
            report(f"Batch Transformer: processing {folder_uri(storage.qualify(join(config.input, name)))}")
            progress.current, progress.sealed, progress.started = name, False, True
            began = time.monotonic()
            result = job.run(name, progress)
            progress.current = None
            if result is not None:
                progress.committed.append(name)
                report(result.line())
                results.append(result)
                metrics.committed(result.counts, round((time.monotonic() - began) * 1000))
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
                counts = write_run(job, run, listing, staging, now)
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
        sentry = Sentry(config.monitoring.sentry_dsn) if config.monitoring.sentry_dsn else None
    except ManifestConfigError as e:  # the transformer's config, or the manifest's
        return refused(e)
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
