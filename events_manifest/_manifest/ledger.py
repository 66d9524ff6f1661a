"""The run ledger: every run on a manifest, with its etl time, its item and whether it finished.

A run is recorded as started before its first put and as finished once its output is delivered.
The ledger gives each run an etl time of its own, and makes a rerun of an unfinished run reuse
that run's etl time, so the manifest accepts the failed run's entries again instead of dropping
them as duplicates (see docs/manifest.md, "Runs"). Every backend stores the same records; this
module holds the one decision every path takes (`plan`), the backends only read and swap records.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ClassVar, TypeVar

import attrs

from events_manifest._manifest import liveness
from events_manifest.errors import ManifestConfigError, ManifestUnavailableError, RunConflictError
from events_manifest.model import from_epoch_seconds, to_epoch_seconds

STARTED = "started"
FAILED = "failed"
FINISHED = "finished"
FUTURE_SECONDS = 86400
"""How far past now an explicit etl time may be: a typo'd year would count every later run's
events as new (their etl times all before it)."""
MAX_ATTEMPTS = 20
"""How often `start` re-reads the ledger when concurrent runs keep taking the etl time it chose."""
BEAT_SECONDS = 60
"""How often a started run renews its sign of life in the ledger (`Heartbeat`)."""
LEASE_SECONDS = 600
"""A run on another host with no sign of life for this long is taken for dead."""
log = logging.getLogger(__name__)


@attrs.frozen
class Run:
    """One run in the ledger: its etl time (whole epoch seconds, the ledger's key), what it
    processed (`item`: an input folder, a file, an id), its state (started, failed or finished),
    wall-clock times, the process that runs it (`owner`, `host:pid`), its last sign of life, the
    identity of the input it read (`source`: its files and sizes, see `storage.Listing`) and where
    it wrote (`output`)."""

    etl_seconds: int
    item: str
    state: str = STARTED
    started_seconds: int = 0
    finished_seconds: int | None = None
    owner: str = ""
    alive_seconds: int | None = None
    source: str = ""
    output: str = ""

    @property
    def etl_time(self) -> datetime:
        return from_epoch_seconds(self.etl_seconds)

    @property
    def finished(self) -> bool:
        return self.state == FINISHED

    def describe(self) -> str:
        return f"run of [{self.item}] with etl time {text(self.etl_seconds)} ({self.state})"

    def dead(self, now: int) -> bool:
        """Whether an unfinished run has stopped: it failed, its process is gone (same host), it
        stopped renewing its record in this process, or no sign of life for `LEASE_SECONDS` (another
        host)."""
        if self.finished:
            return False
        if self.state == FAILED:
            return True
        if self.owner == liveness.this_process():
            return (self.etl_seconds, self.item) not in Heartbeat.beating()
        gone = liveness.gone(self.owner)
        return gone if gone is not None else now - self.last_sign() > LEASE_SECONDS

    def last_sign(self) -> int:
        return max(self.started_seconds, self.alive_seconds or 0)


def text(etl_seconds: int) -> str:
    """An etl time as the command line takes it back (`--etl-time`)."""
    return from_epoch_seconds(etl_seconds).strftime("%Y-%m-%d %H:%M:%S")


def now_seconds() -> int:
    return int(time.time())


@attrs.frozen
class Advice:
    """How a tool's user does what a refusal advises, in the tool's own words: rerun another
    input's run, run a delivered input again, give an item or an etl time, clean a run's entries.
    The defaults are the command line's and the API's (`events-manifest dedup`, the shred job)."""

    rerun_other: str = "the same input, or --item-id '{item}'"
    """How to rerun the run of `{item}`, another input's."""
    rerun: str = "--rerun (rerun=True)"
    item: str | None = "--item-id"
    """The flag that names an item; None: the tool names its items itself."""
    etl_time: str | None = "--etl-time"
    """The flag that gives an etl time; None: the tool takes it from its input."""
    manifest: str = ""
    """The manifest as `events-manifest clean` takes it (`--manifest URL`), when known."""

    def clean(self, etl_seconds: int) -> str:
        where = f" {self.manifest}" if self.manifest else ""
        return f"`events-manifest clean{where} --etl-time '{text(etl_seconds)}'`"


COMMAND_LINE = Advice()
"""The advice of the command line and the API, which most tools share."""


@attrs.frozen
class Plan:
    """What `plan` decided: write `record` where the ledger holds `expected` (None: nothing)."""

    expected: Run | None
    record: Run


def plan(
    runs: Sequence[Run],
    item: str | None,
    requested: datetime,
    *,
    explicit: bool,
    now: int,
    source: str = "",
    output: str = "",
    rerun: bool = False,
    advice: Advice = COMMAND_LINE,
) -> Plan:
    """The ledger record a new run of `item` writes, given every record the ledger holds. `source`
    is the identity of the input it reads (empty: unknown), `output` where it writes.

    A run without an item is one of its own, or, with an `explicit` etl time another run holds, a
    rerun of that run.

    - An `explicit` etl time more than `FUTURE_SECONDS` ahead of now is refused.
    - An unfinished run of the same item that has died is finished by this one: it takes that
      run's etl time, so the manifest accepts the events it stored (with `explicit`, another etl
      time is refused), provided it reads the same input. One still running is waited for: two at
      once would both keep its events.
    - A dead, unfinished run of another item is refused: its stored events would be dropped here as
      duplicates and never delivered. The message says how to rerun it or clean it.
    - A finished run of the same item is refused (its events were delivered; a second delivery
      would double them), unless `rerun` says it is on purpose: then it takes that run's etl time
      (or the `explicit` one), so the manifest gives its events again, provided it reads the same
      input.
    - Otherwise the run takes the first second from the requested etl time on that no other item's
      run holds, so runs never take each other's entries for a rerun's; an `explicit` etl time is
      taken as it is, or refused if another item's run holds it.

    Refusals advise in the calling tool's words (`advice`).
    """
    wanted = to_epoch_seconds(requested)
    if explicit and wanted > now + FUTURE_SECONDS:
        raise ManifestConfigError(
            f"etl time {text(wanted)} is more than a day ahead of now ({text(now)} UTC): every later run's events "
            "would be taken for new ones. Check --etl-time (etl_time) for a typo"
        )
    by_etl = {run.etl_seconds: run for run in runs}
    if item is None:
        item = by_etl[wanted].item if explicit and wanted in by_etl else f"run {uuid.uuid4()}"
    unfinished = [run for run in runs if run.item == item and not run.finished]
    running = [run for run in unfinished if not run.dead(now)]
    if running:
        raise RunConflictError(_running_message(running[0], now))
    abandoned = [run for run in runs if run.item != item and run.dead(now)]
    if abandoned:
        raise RunConflictError(_abandoned_message(abandoned, now, advice))
    if len(unfinished) > 1 or (unfinished and explicit and unfinished[0].etl_seconds != wanted):
        raise RunConflictError(_unfinished_message(item, unfinished, wanted if explicit else None, advice))
    delivered = [run for run in runs if run.item == item and run.finished]
    for earlier in [*unfinished, *delivered[-1:]]:
        if source and earlier.source and source != earlier.source:
            raise RunConflictError(_other_input_message(earlier, source, advice))
    if unfinished:
        etl = unfinished[0].etl_seconds
    elif delivered and not rerun:
        raise RunConflictError(_delivered_message(delivered[-1], advice))
    elif delivered and not explicit:
        etl = delivered[-1].etl_seconds
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
    record = Run(
        etl, item, STARTED, now, owner=liveness.this_process(), alive_seconds=now, source=source, output=output
    )
    return Plan(by_etl.get(etl), record)


@attrs.frozen
class Start:
    """What a new run asks of the ledger (see `plan`): the same for the sync and async manifests."""

    item: str | None
    requested: datetime
    explicit: bool = False
    source: str = ""
    output: str = ""
    rerun: bool = False
    advice: Advice = COMMAND_LINE

    @classmethod
    def of(cls, item: str | None, etl_time: datetime | None, **options: Any) -> Start:
        requested = from_epoch_seconds(now_seconds()) if etl_time is None else etl_time
        return cls(check_item(item), requested, **options)

    def plan(self, runs: Sequence[Run], now: int) -> Plan:
        return plan(
            runs,
            self.item,
            self.requested,
            explicit=self.explicit,
            now=now,
            source=self.source,
            output=self.output,
            rerun=self.rerun,
            advice=self.advice,
        )

    def lost_race(self) -> ManifestUnavailableError:
        return lost_race(self.item or str(self.requested))


def _since(run: Run, now: int) -> str:
    return f"{text(run.last_sign())} UTC ({max(now - run.last_sign(), 0) // 60} minutes ago)"


def _running_message(run: Run, now: int) -> str:
    return (
        f"the {run.describe()} is still running ({liveness.describe(run.owner)}, last sign of life "
        f"{_since(run, now)}): two runs of one item at once would both keep its events. Wait for it to end; "
        f"a run on another host that stopped is taken for dead {LEASE_SECONDS // 60} minutes after its last sign"
    )


def _abandoned_message(abandoned: list[Run], now: int, advice: Advice) -> str:
    run = abandoned[0]
    more = f" (and {len(abandoned) - 1} more, see `events-manifest runs`)" if len(abandoned) > 1 else ""
    return (
        f"the {run.describe()}{more} stopped without finishing (last sign of life {_since(run, now)}): the "
        "manifest holds the events it stored, and this run would drop them as duplicates, so they would never "
        f"be delivered. Rerun it first ({advice.rerun_other.format(item=run.item)}), or, if its output was "
        f"thrown away, remove its entries with {advice.clean(run.etl_seconds)}"
    )


def _delivered_message(run: Run, advice: Advice) -> str:
    wrote = f" into {run.output}" if run.output else ""
    finished = f", finished {text(run.finished_seconds)} UTC" if run.finished_seconds is not None else ""
    return (
        f"[{run.item}] was delivered already, by the run with etl time {text(run.etl_seconds)}{wrote}{finished}: "
        "running it again would deliver its events a second time. Nothing was done. To run it again on purpose "
        f"(its events come out again, under the same etl time), pass {advice.rerun}"
    )


def _other_input_message(run: Run, source: str, advice: Advice) -> str:
    if advice.item is None:
        return (
            f"[{run.item}] holds other files than when the {run.describe()} read it ({run.source}; now: {source}): "
            "its events would be mixed up with that run's. To transform it as it is now, remove that run's "
            f"entries first with {advice.clean(run.etl_seconds)}, then run again"
        )
    return (
        f"[{run.item}] names another input than the {run.describe()}, which read {run.source} (this input: "
        f"{source}): reusing an item for another input would mix up their events. Give this input an item of "
        f"its own ({advice.item}); to replace the earlier run, remove its entries first with "
        f"{advice.clean(run.etl_seconds)}"
    )


def _unfinished_message(item: str, unfinished: list[Run], wanted: int | None, advice: Advice) -> str:
    listed = ", ".join(text(run.etl_seconds) for run in unfinished)
    first = text(unfinished[0].etl_seconds)
    asked = "" if wanted is None else f", not {text(wanted)}"
    finish = f"Finish it with {advice.etl_time} '{first}'{asked}, or, if its output was thrown away, remove"
    if advice.etl_time is None:
        finish = "Remove"
    return (
        f"[{item}] has an unfinished run (etl time {listed}) whose events the manifest holds: this run would "
        f"drop them as duplicates. {finish} its entries first with {advice.clean(unfinished[0].etl_seconds)}"
    )


def check_clean(runs: Sequence[Run], etl_seconds: int, now: int, *, force: bool) -> None:
    """Refuse to clean an etl time the ledger knows no run of (a typo would count another batch's
    events as new), or a run still running (its events would come out twice); `force` overrides."""
    if force:
        return
    known = [run for run in runs if run.etl_seconds == etl_seconds]
    if not known:
        raise ManifestConfigError(
            f"the ledger holds no run with etl time {text(etl_seconds)} (see `events-manifest runs`): nothing was "
            "removed. Pass --force (force=True) to remove the entries stored with that etl time all the same"
        )
    if not known[0].finished and not known[0].dead(now):
        raise RunConflictError(
            f"the {known[0].describe()} is still running ({liveness.describe(known[0].owner)}, last sign of life "
            f"{_since(known[0], now)}): removing its entries now would let its events through again. Nothing was "
            "removed. Stop it or wait for it to end; pass --force (force=True) if you know it has stopped"
        )


class Heartbeat:
    """Keeps the runs one manifest started alive in its ledger: a daemon thread renews each record's
    sign of life every `BEAT_SECONDS` until the run finishes or is abandoned (`stop`).

    `swap` is the manifest's compare-and-swap of a record; the lock is held while it runs, so a
    renewal never crosses a finish. An async manifest passes a `swap` that runs on its loop.
    """

    _everywhere: ClassVar[set[tuple[int, str]]] = set()
    _everywhere_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, swap: Callable[[Run, Run], bool]) -> None:
        self._swap = swap
        self._runs: dict[int, Run] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @classmethod
    def beating(cls) -> set[tuple[int, str]]:
        """The (etl time, item) of every run this process keeps alive."""
        with cls._everywhere_lock:
            return set(cls._everywhere)

    def announce(self, run: Run) -> None:
        """Count `run` alive in this process before its record is written (then `add`, or `stop`)."""
        with self._everywhere_lock:
            self._everywhere.add((run.etl_seconds, run.item))

    def add(self, run: Run) -> None:
        with self._lock:
            self._runs[run.etl_seconds] = run
            with self._everywhere_lock:
                self._everywhere.add((run.etl_seconds, run.item))
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="events-manifest-heartbeat", daemon=True)
                self._thread.start()

    def stop(self, run: Run) -> Run:
        """Stop renewing `run`; its latest record (the one the ledger holds, unless taken over)."""
        with self._lock:
            current = self._runs.get(run.etl_seconds)
            return self._forget(current if current is not None and current.item == run.item else run)

    def stop_all(self) -> None:
        with self._lock:
            for run in list(self._runs.values()):
                self._forget(run)

    def _forget(self, run: Run) -> Run:
        if self._runs.get(run.etl_seconds) is run:
            del self._runs[run.etl_seconds]
        with self._everywhere_lock:
            self._everywhere.discard((run.etl_seconds, run.item))
        return run

    def _beat(self) -> None:
        while True:
            time.sleep(BEAT_SECONDS)
            with self._lock:
                if not self._runs:
                    self._thread = None
                    return
                for run in list(self._runs.values()):
                    renewed = attrs.evolve(run, alive_seconds=now_seconds())
                    try:
                        kept = self._swap(run, renewed)
                    except Exception as e:  # the store is unreachable for now: try again at the next beat
                        log.warning("could not renew the %s in the ledger: %s", run.describe(), e)
                        continue
                    if kept:
                        self._runs[run.etl_seconds] = renewed
                    else:
                        log.warning(taken_over(run))
                        self._forget(run)


K = TypeVar("K")
V = TypeVar("V")


def swap_in(records: dict[K, V], key: K, expected: V | None, new: V | None) -> bool:
    """The compare-and-swap of a record kept in a dict (the caller holds its lock): `new` (or
    nothing, when None) in the place of `key` if that place holds exactly `expected`."""
    if records.get(key) != expected:
        return False
    if new is None:
        del records[key]
    else:
        records[key] = new
    return True


def finished(run: Run, now: int) -> Run:
    return attrs.evolve(run, state=FINISHED, finished_seconds=now)


def failed(run: Run, now: int) -> Run:
    """A run that stopped on an error: unfinished (its rerun finishes it), and dead at once."""
    return attrs.evolve(run, state=FAILED, alive_seconds=now)


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
