"""The stream transformer's windows between its micro-batches and its runs: each batch's lines
staged in the window the book gives it, each window whose time is over committed as one run of
the batch job (`run.run_flow`), oldest first (docs/stream-transformer.md). No Spark here: the glue
gives the writers of a batch's lines and of a run's rows; the steps a kill can stop at
(`batch-assigned`, `batch-written`, `batch-staged`, `window-committed`) and what the next start
makes of each are the core's, and tested without Spark."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from events_manifest._jobs import steps
from events_manifest._jobs.storage import join
from events_manifest._transformer.run.commit import inspect
from events_manifest._transformer.run.job import TransformerJob
from events_manifest._transformer.run.metrics import Reporter
from events_manifest._transformer.run.run_flow import Progress, RunResult, Write, run
from events_manifest._transformer.stream.windows import Window, WindowBook


@attrs.define
class WindowFlow:
    """One start's windows: `stage` each micro-batch as the query gives it, `commit_due` from
    time to time and when the start ends. The query's thread and the driver's loop both call it:
    each call holds `lock`."""

    book: WindowBook
    job: TransformerJob[Any]
    """The batch job whose runs the windows are (its inputs listed from the book's lines)."""
    write: Write[Any]
    """How a window's run writes its rows (the glue's Spark writer)."""
    clock: Callable[[], float]
    report: Callable[[str], None]
    warn: Callable[[str], None]
    results: list[RunResult] = attrs.field(factory=list)
    """Every run this start committed, in order."""
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    metrics: Reporter = attrs.field(init=False)
    waiting_since: float | None = attrs.field(default=None, init=False)
    """The start of the oldest window holding staged lines not committed yet."""

    def __attrs_post_init__(self) -> None:
        self.metrics = Reporter(self.job.config.monitoring, lag=self.lag, out=self.report, err=self.warn)

    def begin(self) -> None:
        """Bring the run ledger to what the output says (as the batch job's `reconcile`): a window
        a kill left committed and unfinished in the ledger is finished there."""
        with self.lock:
            names = [window.name for window in self.book.open_windows()]
            folders = {name: inspect(self.job.storage, join(self.job.config.output, name)) for name in names}
            self.job.reconcile(folders, names)

    def stage(self, batch_id: int, write_lines: Callable[[str], None]) -> None:
        """One micro-batch: its window from the book (the recorded one on a replay), its lines
        written by `write_lines(folder)` there unless they are staged already, the book told; then
        the windows that ended are committed."""
        with self.lock:
            found = self.book.assign(batch_id, self.clock())
            self.book.prune(batch_id)
            if not found.staged and not found.closed:
                steps.reached("batch-assigned")
                write_lines(self.book.batch_lines(found))
                steps.reached("batch-written")
                self.book.staged(found)
                steps.reached("batch-staged")
                if self.waiting_since is None or found.window.start < self.waiting_since:
                    self.waiting_since = found.window.start
            if self._commit(self.book.due(self.clock())):
                steps.reached("window-committed")

    def commit_due(self, *, ending: bool = False) -> list[RunResult]:
        """Commit every window whose time is over (and the windows an earlier start left); `ending`:
        every window of which every batch is staged, ended early."""
        with self.lock:
            return self._commit(self.book.due(self.clock(), ending=ending))

    def torn(self) -> bool:
        """Whether a batch was being staged when the start before stopped (it is not whole)."""
        with self.lock:
            return any(not batch.staged and not batch.closed for batch in self.book.batches())

    def lag(self) -> float:
        """The stream's gauge: how long the oldest window with uncommitted lines has been open (an
        upper bound on the age of its oldest line); 0 when every staged line is committed."""
        since = self.waiting_since
        return 0.0 if since is None else max(0.0, round(self.clock() - since, 3))

    def _commit(self, windows: Sequence[Window]) -> list[RunResult]:
        """Transform and commit each window as one run (none for a window of no lines), oldest first."""
        committed = []
        for window in windows:
            name = window.name
            if self.job.listing(name).bytes:
                began = time.monotonic()
                result = run(self.job, name, Progress(), self.write)  # None when its folder holds a commit already
                if result is not None:
                    self.report(result.line())
                    committed.append(result)
                    self.metrics.committed(result.counts, round((time.monotonic() - began) * 1000))
            self.book.close(window)
        if windows:
            self.waiting_since = min((window.start for window in self.book.open_windows()), default=None)
        self.results.extend(committed)
        return committed
