"""The run ledger: every run on a manifest, with its etl time, its item and whether it finished.

A run is recorded as started before its first put and as finished once its output is delivered.
The ledger gives each run an etl time of its own, and makes a rerun of an unfinished run reuse
that run's etl time, so the manifest accepts the failed run's entries again instead of dropping
them as duplicates (see docs/manifest.md, "Runs"). Every backend stores the same records; this
module holds the one decision every path takes (`plan`), the backends only read and swap records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import datetime

import attrs

from events_manifest.errors import ManifestConfigError, ManifestUnavailableError, RunConflictError
from events_manifest.model import from_epoch_seconds, to_epoch_seconds

STARTED = "started"
FINISHED = "finished"
MAX_ATTEMPTS = 20
"""How often `start` re-reads the ledger when concurrent runs keep taking the etl time it chose."""


@attrs.frozen
class Run:
    """One run in the ledger: its etl time (whole epoch seconds, the ledger's key), what it
    processed (`item`: an input folder, a file, an id), its state and wall-clock times."""

    etl_seconds: int
    item: str
    state: str = STARTED
    started_seconds: int = 0
    finished_seconds: int | None = None

    @property
    def etl_time(self) -> datetime:
        return from_epoch_seconds(self.etl_seconds)

    @property
    def finished(self) -> bool:
        return self.state == FINISHED

    def describe(self) -> str:
        return f"run of [{self.item}] with etl time {text(self.etl_seconds)} ({self.state})"


def text(etl_seconds: int) -> str:
    """An etl time as the command line takes it back (`--etl-time`)."""
    return from_epoch_seconds(etl_seconds).strftime("%Y-%m-%d %H:%M:%S")


def now_seconds() -> int:
    return int(time.time())


@attrs.frozen
class Plan:
    """What `plan` decided: write `record` where the ledger holds `expected` (None: nothing)."""

    expected: Run | None
    record: Run
    warnings: tuple[str, ...] = ()


def plan(runs: Sequence[Run], item: str | None, requested: datetime, *, explicit: bool, now: int) -> Plan:
    """The ledger record a new run of `item` writes, given every record the ledger holds.

    A run without an item is one of its own, or, with an `explicit` etl time another run holds, a
    rerun of that run.

    - An unfinished run of the same item is finished by this one: it takes that run's etl time, so
      the manifest accepts the events it stored (with `explicit`, another etl time is refused).
    - A finished run of the same item at the requested etl time is rerun (its output remade).
    - Otherwise the run takes the first second from the requested etl time on that no other item's
      run holds, so runs never take each other's entries for a rerun's; an `explicit` etl time is
      taken as it is, or refused if another item's run holds it.
    """
    wanted = to_epoch_seconds(requested)
    by_etl = {run.etl_seconds: run for run in runs}
    if item is None:
        item = by_etl[wanted].item if explicit and wanted in by_etl else f"run {uuid.uuid4()}"
    unfinished = [run for run in runs if run.item == item and not run.finished]
    if len(unfinished) > 1 or (unfinished and explicit and unfinished[0].etl_seconds != wanted):
        raise RunConflictError(_unfinished_message(item, unfinished, wanted if explicit else None))
    if unfinished:
        etl = unfinished[0].etl_seconds
    elif explicit and wanted in by_etl and by_etl[wanted].item != item:
        raise RunConflictError(
            f"etl time {text(wanted)} belongs to the {by_etl[wanted].describe()}: two runs sharing an etl time "
            "take each other's events for a rerun's. Choose another etl time, or give that run's item "
            "(--item-id) if this is a rerun of it"
        )
    else:
        etl = wanted
        while not explicit and etl in by_etl and by_etl[etl].item != item:
            etl += 1
    warnings = tuple(
        f"the {run.describe()} has not finished since {_since(run, now)}: if it failed, rerun it to deliver "
        f"its events, or remove them with `events-manifest clean --etl-time '{text(run.etl_seconds)}'`"
        for run in runs
        if run.item != item and not run.finished
    )
    return Plan(by_etl.get(etl), Run(etl, item, STARTED, now), warnings)


def _since(run: Run, now: int) -> str:
    return f"{text(run.started_seconds)} UTC ({max(now - run.started_seconds, 0) // 60} minutes)"


def _unfinished_message(item: str, unfinished: list[Run], wanted: int | None) -> str:
    listed = ", ".join(text(run.etl_seconds) for run in unfinished)
    first = text(unfinished[0].etl_seconds)
    asked = "" if wanted is None else f", not {text(wanted)}"
    return (
        f"[{item}] has an unfinished run (etl time {listed}) whose events the manifest holds: this run would "
        f"drop them as duplicates. Finish it with --etl-time '{first}'{asked}, or, if its output was thrown "
        f"away, remove its entries first with `events-manifest clean --etl-time '{first}'`"
    )


def finished(run: Run, now: int) -> Run:
    return attrs.evolve(run, state=FINISHED, finished_seconds=now)


def lost_race(item: str) -> ManifestUnavailableError:
    return ManifestUnavailableError(
        f"could not record a run of [{item}] in the manifest's ledger: other runs kept taking the same etl "
        f"time ({MAX_ATTEMPTS} attempts); retry"
    )


def taken_over(run: Run) -> str:
    return (
        f"the ledger record of the {run.describe()} changed while it ran (another run of the same etl time "
        "took it over): this run's output may not be the only one; check both runs' outputs"
    )


def no_ledger(manifest: object) -> ManifestConfigError:
    return ManifestConfigError(
        f"{type(manifest).__name__} keeps no run ledger, which runs need to protect a failed run's events: "
        "use a backend that does (memory, SQLite, DynamoDB), or implement _runs, _swap_run and _delete_entries"
    )


def check_item(item: object) -> str | None:
    if item is not None and (not isinstance(item, str) or not item.strip()):
        raise ManifestConfigError(f"a run's item must be a non-empty string (an input path or id), got {item!r}")
    return item
