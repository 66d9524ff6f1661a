"""One run of a tool, from its first claim to its commit: the folders it writes (claimed), its item
in a processing table, its record in the manifest's run ledger (with its heartbeat), and how it
ends: finished, or failed with a one-line reason. Every tool (the shred job, the transformer,
`events-manifest dedup`, the Spark dedup, the streaming dedup, the populator) runs through it, so
every run is in the ledger and follows the same rerun rules (`ledger.plan`).

    with JobRun.begin(manifest, item, APPLICATION, folders=..., storage=..., layout=...) as run:
        etl_time = run.start(requested)      # before the first put
        ...                                  # put, write (staged), seal
        run.commit(etl_text, publish)        # marker, old output replaced, staged output moved
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime

import attrs

from events_manifest._jobs import steps
from events_manifest._jobs.folders import JobFolders, Layout
from events_manifest._jobs.storage import Storage
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import COMMAND_LINE, Advice, Run
from events_manifest._manifest.processing import ItemRecord, ProcessingManifest, check_table_name
from events_manifest.errors import ManifestConfigError

log = logging.getLogger(__name__)
MAX_REASON = 500
"""Characters of a failure's reason kept in a processing table."""


NOTHING_WRITTEN = "nothing was written"
"""What a command says when it stopped before writing anything."""


def one_line(error: BaseException) -> str:
    """What went wrong, on one line: the error's type and the first line of its message, capped."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


@attrs.define
class JobRun:
    """See the module's docstring. `record` is the run's ledger record once `start`ed."""

    manifest: DuplicateStorage | None
    item: str
    source: str = ""
    output: str = ""
    rerun: bool = False
    folders: JobFolders | None = None
    processing: ProcessingManifest | None = None
    advice: Advice = COMMAND_LINE
    claimed: ItemRecord | None = None
    record: Run | None = None

    @classmethod
    @contextlib.contextmanager
    def begin(
        cls,
        manifest: DuplicateStorage | None,
        item: str,
        application: str,
        *,
        source: str = "",
        output: str = "",
        rerun: bool = False,
        processing_table: str | None = None,
        storage: Storage | None = None,
        layout: Layout | None = None,
        folders: Sequence[tuple[str, str]] = (),
        overwrite: bool = False,
        advice: Advice = COMMAND_LINE,
    ) -> Iterator[JobRun]:
        """Claim the run's `folders` ((path as given, role) pairs, see `folders.JobFolders`) and its
        item in `processing_table` (refused if processed or being processed), then hand the run
        over. Whatever ends the block, the claims are released; an error records the run as failed
        in the ledger and the processing table, a normal end as finished. The ledger's refusals
        advise in the words of `advice`."""
        processing = _processing_table(manifest, processing_table)
        taken = None
        if folders:
            if storage is None or layout is None:
                raise TypeError("folders need a storage and a layout")
            taken = JobFolders.claim_all(storage, layout, folders, overwrite=overwrite)
        run = cls(manifest, item, source, output, rerun, taken, processing, advice=advice)
        try:
            if processing is not None:
                run.claimed = processing.claim(item, application)
            yield run
        except BaseException as e:
            run._failed(e)
            raise
        else:
            run._finished()
        finally:
            if taken is not None:
                taken.release()

    def start(self, etl_time: datetime, *, explicit: bool = False) -> datetime:
        """Record the run as started in the ledger (no manifest: nothing to record), before its
        first put; the etl time to put with, which the ledger may choose (`ledger.plan`)."""
        if self.manifest is None:
            return etl_time
        self.record = self.manifest.start_run(
            self.item,
            etl_time,
            explicit=explicit,
            source=self.source,
            output=self.output,
            rerun=self.rerun,
            advice=self.advice,
        )
        steps.reached("started")
        return self.record.etl_time

    def commit(self, etl_text: str, publish: Callable[[], None], *, replace: bool = True) -> None:
        """Deliver the run's output: mark its folders as the job's, delete what an earlier run wrote
        there (with overwrite; not when `replace` is false: a delivery of this run began, and what
        is there is its own), then `publish` what this run staged."""
        if self.folders is not None:
            self.folders.commit(etl_text, replace=replace)
        steps.reached("committing")
        publish()
        steps.reached("committed")

    def _finished(self) -> None:
        if self.record is not None and self.manifest is not None:
            self.record = self.manifest.finish_run(self.record)
        if self.processing is not None and self.claimed is not None:
            self.processing.processed(self.claimed)

    def _failed(self, error: BaseException) -> None:
        """Record the failure; a failure to record it must not hide `error`."""
        if self.record is not None and self.manifest is not None:
            self.manifest.abandon_run(self.record)
        if self.processing is not None and self.claimed is not None:
            try:
                self.processing.failed(self.claimed, one_line(error))
            except Exception as e:
                log.warning(
                    "could not record [%s] as failed in processing table %s: %s", self.item, self.processing.table, e
                )


def _processing_table(manifest: DuplicateStorage | None, table: str | None) -> ProcessingManifest | None:
    if table is None:
        return None
    check_table_name(table)
    if manifest is None:
        raise ManifestConfigError(
            "--processing-manifest-table needs a manifest: the table lives in its store (a table of the "
            "SQLite file, a DynamoDB table beside the manifest's); pass --manifest or --duplicate-storage-config"
        )
    return manifest.processing_manifest(table)
