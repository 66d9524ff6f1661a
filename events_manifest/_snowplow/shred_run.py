"""One run of the shred job on a batch (docs/shred-job.md), without Spark: every check before the
first put or deletion, the run's record in the ledger and claim of its folders (`_jobs.run.JobRun`),
its lines read, decided and written under a staging folder by the engine the glue gives (Spark's:
`spark_integration.shredder`), sealed, then moved into place with the summary (`_jobs.staging`,
whose steps a kill may stop anywhere: a run sealed before the kill is delivered as it was by the
next run of the same input). Nothing is written unless every line is accounted for and the
manifest answered."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import attrs

from events_manifest._iglu.resolver import Resolver, ResolverConfig
from events_manifest._jobs.folders import InputMissingError
from events_manifest._jobs.places import INPUT, MANIFEST, Place, check_places
from events_manifest._jobs.run import JobRun
from events_manifest._jobs.staging import Staging
from events_manifest._jobs.storage import Listing, Storage, join
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._opening.handle import ManifestHandle
from events_manifest._opening.urls import manifest_files
from events_manifest._snowplow import legacy_bad_rows, shred_output
from events_manifest._snowplow.batch import Shred
from events_manifest._snowplow.dedup import Dedup, check_options
from events_manifest._snowplow.report import render_report
from events_manifest._snowplow.summary import ShredSummary
from events_manifest._version import __version__
from events_manifest.errors import ManifestConfigError
from events_manifest.model import from_epoch_seconds, to_epoch_seconds

APPLICATION = f"events-manifest shred job {__version__}"
"""How the shred job names itself in a processing table."""


@attrs.frozen
class ShredRequest:
    """What one run of the shred job is asked to do (`spark_integration.shredder.shred`'s
    arguments, its command line's flags): its input, output and bad folders, and its options."""

    inputs: tuple[str, ...]
    output: str
    bad: str
    manifest: str | DuplicateStorage | None = None
    etl_time: datetime | None = None
    item_id: str | None = None
    processing_table: str | None = None
    iglu: ResolverConfig | None = None
    synthetic_dedup: bool = True
    random_synthetic_ids: bool = False
    cross_batch_synthetic: bool = False
    overwrite: bool = False
    rerun: bool = False
    report: str | None = None


class Scan(Protocol):
    """What one pass over the batch found before any put: its lines and its etl time (the earliest
    etl_tstamp of its valid lines)."""

    @property
    def lines(self) -> int: ...
    @property
    def etl_time(self) -> datetime | None: ...
    def release(self) -> None: ...


S = TypeVar("S", bound=Scan)


@attrs.frozen
class Staged:
    """What the engine wrote under a staging folder: where (`shred_output.places` moves them), the
    sums of its batches' counts (`shred_output.COUNTS`) and the lines of each shredded type."""

    written: list[str]
    counts: Mapping[str, int]
    entities: Mapping[str, int]


class ShredEngine(Protocol[S]):
    """What a run needs of the engine that reads and writes its lines: the glue's, on Spark."""

    @property
    def storage(self) -> Storage: ...
    def absolute(self, path: str) -> str:
        """`path`, relative to this process's folder, as the engine's storage names it."""
        ...

    def read(self, inputs: Sequence[str]) -> Listing:
        """Load the inputs' lines, listed once: the files every pass of the run reads."""
        ...

    def scan(self, iglu: ResolverConfig | None) -> S:
        """One pass over the lines read (`read`), before any put."""
        ...

    def write(self, staging: Staging, scan: S, shred: Shred) -> Staged:
        """Decide, put and write every line read under `staging`, by `shred`."""
        ...


@attrs.frozen
class _Checked:
    """What every check before the first put or deletion found: the files the run reads, the
    manifest opened."""

    listing: Listing
    handle: ManifestHandle | None
    opened: DuplicateStorage | None


def run(request: ShredRequest, engine: ShredEngine[S]) -> ShredSummary:
    """Run the shred job on one batch (see the module); its summary, also written as
    `_summary.json` in the output folder (and as an HTML report with `request.report`). A run of
    the same input into the same folders that a kill stopped once it was sealed is delivered as it
    was sealed (`_jobs.staging`), not computed again."""
    checked = _check(request, engine)
    storage, started = engine.storage, time.monotonic()
    identity = {  # what the run is: a sealed run is delivered only to a run of the same
        "item": request.item_id or ",".join(storage.qualify(source) for source in request.inputs),
        "source": checked.listing.identity(),
        "output": storage.qualify(request.output),
        "bad": storage.qualify(request.bad),
    }
    with JobRun.begin(
        checked.opened,
        identity["item"],
        APPLICATION,
        source=identity["source"],
        output=identity["output"],
        rerun=request.rerun,
        processing_table=request.processing_table,
        storage=storage,
        layout=shred_output.LAYOUT,
        folders=[(request.output, "output"), (request.bad, "bad")],
        overwrite=request.overwrite,
    ) as job_run:
        wanted = to_epoch_seconds(request.etl_time) if request.etl_time is not None else None
        sealed, others = _sealed(storage, job_run, identity, wanted)
        if sealed is not None:
            summary = _deliver(request, job_run, *sealed, others)
        else:
            summary = _shred(request, checked, engine, job_run, identity, others, started)
            summary = attrs.evolve(summary, seconds=round(time.monotonic() - started, 3))
        storage.write_text(join(storage.qualify(request.output), shred_output.SUMMARY), summary.to_json())
        if request.report:
            storage.write_text(request.report, render_report(summary))
    return summary


def _shred(
    request: ShredRequest,
    checked: _Checked,
    engine: ShredEngine[S],
    job_run: JobRun,
    identity: dict[str, str],
    others: list[Staging],
    started: float,
) -> ShredSummary:
    """Decide, put and stage every line, seal the run (its seconds since `started`), then deliver
    it: its summary."""
    storage = engine.storage
    scan = engine.scan(request.iglu)
    try:
        explicit = request.etl_time is not None
        etl = _start(job_run, request.etl_time or scan.etl_time or datetime(1970, 1, 1), explicit, others)
        decide = Dedup(
            checked.handle,
            to_epoch_seconds(etl),
            request.synthetic_dedup,
            request.random_synthetic_ids,
            request.cross_batch_synthetic,
        )
        shred = Shred(decide, legacy_bad_rows.failure_tstamp(datetime.now(UTC)), request.iglu)
        staging = Staging(storage, engine.absolute(request.output))

        def seal(made: tuple[list[str], ShredSummary]) -> None:
            names = [staging.name(path) for path in made[0]]
            summary = attrs.evolve(made[1], seconds=round(time.monotonic() - started, 3)).to_json()
            staging.seal({"run": identity, "etl": to_epoch_seconds(etl), "written": names, "summary": summary})

        stage = functools.partial(_stage, request, checked, engine, staging, scan, shred, etl)
        written, summary = staging.stage_and_seal(stage, seal)
        _commit(request, job_run, staging, written, etl)
    finally:
        scan.release()
    return summary


def _sealed(
    storage: Storage, job_run: JobRun, identity: dict[str, str], etl: int | None
) -> tuple[tuple[Staging, dict[str, Any]] | None, list[Staging]]:
    """The staging folder in the output folder of a run of the same input into the same folders
    (at the same etl time, when one is asked for) that a kill stopped once it was sealed, with its
    record; and the other sealed ones there, to be deleted once this run is started in the ledger."""
    assert job_run.folders is not None
    output = job_run.folders.folder("output")
    found = [Staging(storage, output.path, name) for name in output.sealed]
    for staging in found:
        record = staging.sealed()
        if record is not None and record.get("run") == identity and etl in (None, record.get("etl")):
            return (staging, record), [other for other in found if other is not staging]
    return None, found


def _deliver(
    request: ShredRequest, job_run: JobRun, staging: Staging, record: dict[str, Any], others: list[Staging]
) -> ShredSummary:
    """Deliver a run a kill stopped once it was sealed, as it was sealed (`record`): its etl time
    (the one its puts were stored with), its lines, its summary."""
    etl = _start(job_run, from_epoch_seconds(int(record["etl"])), True, others)
    written = [staging.path(name) for name in record["written"]]
    _commit(request, job_run, staging, written, etl, replace=not staging.committing())
    return ShredSummary.from_json(str(record["summary"]))


def _start(job_run: JobRun, etl: datetime, explicit: bool, others: list[Staging]) -> datetime:
    """Start the run in the ledger at `etl`, then delete the other sealed runs' staging folders
    (`_sealed`): after every check, the ledger's among them."""
    started = job_run.start(etl, explicit=explicit)
    for staging in others:
        staging.abort()
    return started


def _commit(
    request: ShredRequest, job_run: JobRun, staging: Staging, written: list[str], etl: datetime, replace: bool = True
) -> None:
    """Deliver what the run staged (`written`, under `staging`) into its output and bad folders."""
    moves = shred_output.places(written, request.output, request.bad)
    job_run.commit(_text(etl), lambda: staging.commit(moves), replace=replace)


def _check(request: ShredRequest, engine: ShredEngine[S]) -> _Checked:
    """Every check, in order: options, inputs, output places, Iglu, the manifest."""
    check_options(request.manifest, request.cross_batch_synthetic)
    storage = engine.storage
    for source in request.inputs:
        if not storage.matches(source):
            raise InputMissingError(f"input [{source}] does not exist (or matches no file): nothing was written")
    outputs = [Place("output folder", request.output, folder=True), Place("bad folder", request.bad, folder=True)]
    protected = [
        *(Place(INPUT, source) for source in request.inputs),
        *(Place(MANIFEST, path) for path in manifest_files(request.manifest)),
    ]
    check_places(storage, [*outputs, *([Place("--report", request.report)] if request.report else [])], protected)
    listing = engine.read(request.inputs)
    listing.check_whole()
    if request.overwrite and not listing.bytes:
        raise ManifestConfigError(_nothing_to_read(storage, request.inputs))
    if request.iglu is not None:
        Resolver(request.iglu).check_reachable()
    handle = ManifestHandle.of(request.manifest) if request.manifest is not None else None
    opened = handle.open() if handle is not None else None  # a missing table or unusable file fails here
    if opened is not None and request.cross_batch_synthetic:
        opened.entries_of([])  # and a backend that cannot list an id's fingerprints
    return _Checked(listing, handle, opened)


def _stage(
    request: ShredRequest,
    checked: _Checked,
    engine: ShredEngine[S],
    staging: Staging,
    scan: S,
    shred: Shred,
    etl: datetime,
) -> tuple[list[str], ShredSummary]:
    """Every line decided, put and written under `staging`: what was written and the summary, every
    line accounted for."""
    staged = engine.write(staging, scan, shred)
    summary = ShredSummary.of(
        scan.lines,
        staged.counts,
        staged.entities,
        etl_time=_text(etl),
        manifest=checked.handle.describe() if checked.handle else None,
        input_path=",".join(request.inputs),
        output_path=request.output,
        bad_path=request.bad,
        seconds=0.0,
    )
    if not summary.balanced:
        raise RuntimeError(f"internal error, nothing written: lines are unaccounted for\n{summary.table()}")
    return staged.written, summary


def _text(etl: datetime) -> str:
    return from_epoch_seconds(to_epoch_seconds(etl)).strftime("%Y-%m-%d %H:%M:%S")


def _nothing_to_read(storage: Storage, inputs: Sequence[str]) -> str:
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
