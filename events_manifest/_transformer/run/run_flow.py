"""One run of the transformer, under its folder's claim and its record in the manifest's ledger:
its rows staged by the `Write` its job gives (Spark's: `spark_integration._transformer.rows`),
sealed with their message and counts, then delivered (docs/transformer.md, how a run commits). A
run a stopped invocation sealed is delivered as it was; a run another transformer committed
meanwhile is left to it. No Spark here: the rules of a run's life are the core's."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import attrs

from events_manifest._jobs.folders import FolderClaimedError, Judge, claim
from events_manifest._jobs.run import NOTHING_WRITTEN, JobRun
from events_manifest._jobs.staging import Staging
from events_manifest._jobs.storage import Listing, Storage, hidden, join
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import Advice
from events_manifest._transformer.config import TransformerConfig
from events_manifest._transformer.run.commit import (
    RunCounts,
    State,
    deliver,
    inspect,
    remove_leftovers,
    seal,
    sealed_counts,
)
from events_manifest._transformer.run.discovery import discover, folder_uri
from events_manifest._transformer.run.job import TransformerJob
from events_manifest._transformer.run.message import shredding_complete
from events_manifest._transformer.run.metrics import Reporter
from events_manifest._version import __version__
from events_manifest.errors import ManifestError, RunConflictError

APPLICATION = f"events-manifest transformer {__version__}"


class RunJob(Protocol):
    """What a run needs of its job (`job.TransformerJob`, the glue's with its Spark session)."""

    @property
    def storage(self) -> Storage: ...
    @property
    def config(self) -> TransformerConfig: ...
    @property
    def opened(self) -> DuplicateStorage | None: ...
    @property
    def rerun(self) -> bool: ...
    @property
    def advice(self) -> Advice: ...

    def listing(self, name: str) -> Listing: ...
    def item(self, name: str) -> str: ...
    def send(self, name: str) -> Callable[[str], None] | None: ...
    def outputs(self) -> tuple[str, ...]: ...
    def dead_elsewhere(self, name: str) -> Judge: ...


J = TypeVar("J", bound=RunJob)
Write = Callable[[J, JobRun, Listing, str, int], RunCounts]
"""How a job's run writes its rows under a staging folder (the job, its ledger run, its files,
the staging folder, now in nanoseconds): its counts."""


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
        count, last = len(self.committed), ", ".join(self.committed[-3:])
        shown = f"the last three: {last}" if count > 3 else last
        return f"{count} run{'' if count == 1 else 's'} committed before ({shown})"

    def _state(self) -> str:
        """The current run's state, and who finishes it."""
        done = "its rows are sealed" if self.sealed else "nothing of it was committed"
        return f"{done}, and the next invocation finishes it"

    def interrupted(self) -> str:
        if not self.started and not self.committed:
            return f"interrupted; {NOTHING_WRITTEN}"
        since = f"{self._committed()}; " if self.committed else ""
        if self.current is None:
            return f"interrupted between runs: {since}the next invocation goes on with the runs after them"
        return f"interrupted during {self.current}: {since}{self._state()}"

    def failed(self) -> str:
        """What a failure left: nothing, or the runs committed before it and the state of its run."""
        if not self.committed:
            return NOTHING_WRITTEN
        return self._committed() if self.current is None else f"{self._committed()}; {self.current}: {self._state()}"


def run(job: J, name: str, progress: Progress, write: Write[J]) -> RunResult | None:
    """Transform, or finish, the run `name` under its claim (see the module); None when another
    transformer committed it meanwhile."""
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
            remove_leftovers(storage, found)  # a kill after its commit left them: ours, under our claim
            return None
        if found.state is State.INCOMPLETE:
            return None
        for stale in found.staging:
            if stale != found.sealed:
                storage.delete(join(base, stale))
        if found.sealed is not None:
            return _finish(job, name, join(storage.qualify(base), found.sealed), progress)
        return _transform(job, name, progress, write)
    finally:
        folder.release()
        if storage.exists(base) and not storage.children(base):
            storage.delete(base)


def _begin(job: RunJob, name: str, *, source: str, rerun: bool) -> AbstractContextManager[JobRun]:
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


def _held(error: RunConflictError, job: RunJob, name: str) -> ManifestError | None:
    """What a ledger refusal means here: None when another transformer committed the run meanwhile
    (done), the way held when one is running it, else the refusal itself."""
    if inspect(job.storage, join(job.config.output, name)).state is State.COMMITTED:
        return None
    text = str(error)
    if "is still running" in text:
        return RunHeldError(f"{name}: {text}; it and the runs after it are left to it")
    return error


def _finish(job: RunJob, name: str, staging: str, progress: Progress) -> RunResult | None:
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


def _transform(job: J, name: str, progress: Progress, write: Write[J]) -> RunResult | None:
    storage, config = job.storage, job.config
    base = storage.qualify(join(config.output, name))
    listing = job.listing(name)
    listing.check_whole()
    now = time.time_ns()
    try:
        with _begin(job, name, source=listing.identity(), rerun=job.rerun) as run:
            started = time.time_ns()
            staging = Staging(storage, base)

            def stage() -> tuple[RunCounts, str]:
                counts = write(job, run, listing, staging.root, now)
                return counts, _message(job, base, counts, started)

            counts, message = staging.stage_and_seal(stage, lambda made: seal(storage, staging.root, made[1], made[0]))
            progress.sealed = True
            deliver(storage, base, staging.root, job.send(name), outputs=job.outputs())
    except RunConflictError as e:
        if (refusal := _held(e, job, name)) is not None:
            raise refusal from None
        return None
    return RunResult(name, base, counts, message)


def _message(job: RunJob, base: str, counts: RunCounts, started: int) -> str:
    config = job.config
    return shredding_complete(
        folder_uri(base),
        [(t.schema_key, t.entity, t.format) for t in counts.types],
        formats=config.formats,
        legacy=config.legacy_message,
        started=started,
        completed=time.time_ns(),
        earliest=counts.earliest,
        latest=counts.latest,
        compression=config.compression,
        good=counts.good,
        bad=counts.bad,
    )


T = TypeVar("T", bound=TransformerJob[Any])


def run_all(
    job: T,
    write: Write[T],
    metrics: Reporter,
    progress: Progress,
    report: Callable[[str], None],
    warn: Callable[[str], None],
) -> list[RunResult]:
    """Every run of the job's input not yet committed under its output, in order, each committed
    alone and reported (`report`, `metrics`) as it is; the first failure stops there (the runs
    before it are committed). Runs a killed or failed invocation left (a folder it began, a run
    the ledger holds as stopped) are finished first; the ledger is first brought to the output
    (`TransformerJob.reconcile`). A run folder done but not this transformer's is said (`warn`), and
    files directly in the input, which no run reads (`outside_runs`)."""
    storage, config = job.storage, job.config
    inputs = storage.subfolders(config.input)
    loose = [name for name in storage.children(config.input) if name not in inputs and not hidden(name)]
    if loose:
        warn(outside_runs(folder_uri(storage.qualify(config.input)), loose))
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
            result = run(job, name, progress, write)
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


def outside_runs(input_uri: str, names: list[str]) -> str:
    """The line that names the files directly in the input (`input_uri`), which no run reads."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"{input_uri} holds files outside any run folder ({shown}): a run is a folder in input, and these are not "
        "read; if input is a run's folder, give input the folder that holds it"
    )


_TO_FINISH = (State.SEALED, State.UNFINISHED, State.ABSENT)
"""The states of a run folder a stopped run left: finished before any new run."""
