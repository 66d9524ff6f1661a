"""The manifest contract: one conditional put of (event id, fingerprint, etl time) with a ttl."""

from __future__ import annotations

import abc
from collections.abc import Iterable
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self

from events_manifest._manifest import ledger, ledger_flow, processing
from events_manifest._manifest.ledger import COMMAND_LINE, Advice, Heartbeat, Run
from events_manifest._manifest.processing import ProcessingManifest
from events_manifest.errors import ManifestConfigError, ManifestRequestError
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    PutItem,
    entries_by_id,
    normalize_event_id,
    to_epoch_seconds,
    ttl_seconds,
)


class DuplicateStorage(abc.ABC):
    """A store of the (event id, fingerprint, etl time) triples seen so far.

    `put` answers True when the event is not a natural duplicate (and records it), False when it
    is. A rerun with the same etl time is accepted again; an entry whose ttl is at or before the
    new etl time counts as absent. Every other failure raises a `ManifestError`.
    """

    def __init__(self, *, ttl: timedelta = DEFAULT_TTL) -> None:
        self._ttl_seconds = ttl_seconds(ttl)

    @property
    def ttl(self) -> timedelta:
        return timedelta(seconds=self._ttl_seconds)

    def put(self, event_id: EventId, fingerprint: str, etl_time: datetime) -> bool:
        """Record one event; False means it is a natural duplicate of an earlier batch: drop it."""
        return self.put_many([(event_id, fingerprint, etl_time)])[0]

    def put_many(self, items: Iterable[PutItem]) -> list[bool]:
        """`put` for many items, answers in input order, as if they were put one after another.

        If one put fails for a reason of its own, the others are still applied and its
        `ManifestRequestError` is raised; `try_put_many` returns such errors in place instead.
        """
        return raise_first(self.try_put_many(items))

    def try_put_many(self, items: Iterable[PutItem]) -> list[bool | ManifestRequestError]:
        """`put_many` where a put that failed on its own comes back as its error, in its place.

        Failures that stop every put (`ManifestUnavailableError`, `ManifestThrottledError`) are
        still raised: a caller can turn the returned errors into bad rows and go on.
        """
        batch = PutBatch.of(items)
        return self._put_batch(batch) if len(batch) else []

    @abc.abstractmethod
    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        """Apply a validated, non-empty batch; the one method a backend must implement."""

    @abc.abstractmethod
    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        """The stored entry of a pair, expired or not, or None: for inspection and tests."""

    def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]:
        """Every stored entry (expired or not) of each id, by canonical id; for cross-batch
        synthetic dedup, which asks whether an id already came with another fingerprint."""
        ids = list(dict.fromkeys(map(normalize_event_id, event_ids)))
        return entries_by_id(ids, self._entries_of(ids))

    def _entries_of(self, event_ids: list[str]) -> Iterable[ManifestEntry]:
        """The stored entries of these canonical, distinct ids, in any order.

        Optional for a backend: the default says this one cannot answer.
        """
        raise not_listable(self)

    def runs(self) -> list[Run]:
        """Every run in the manifest's ledger, by etl time (see `events_manifest._manifest.ledger`)."""
        return sorted(self._runs(), key=lambda run: run.etl_seconds)

    def start_run(
        self,
        item: str | None,
        etl_time: datetime | None = None,
        *,
        explicit: bool = False,
        source: str = "",
        output: str = "",
        rerun: bool = False,
        advice: Advice = COMMAND_LINE,
    ) -> Run:
        """Record a run of `item` (an input path or id; None: a run of its own) as started, before
        its first put, and return it: its `etl_time` is the one to put with. `etl_time` is what the
        input asks for (default now); the ledger may hand out another (`ledger.plan`), unless `explicit`.
        `source` identifies the input the run reads, `output` where it writes; `rerun` runs a finished
        item again on purpose. Until `finish_run` or `abandon_run`, a thread renews the run's sign
        of life in the ledger. Refusals advise in the words of `advice`."""
        begun = ledger.Start.of(
            item, etl_time, explicit=explicit, source=source, output=output, rerun=rerun, advice=advice
        )
        return ledger_flow.drive(ledger_flow.start(begun), self._ledger_step)

    def finish_run(self, run: Run) -> Run:
        """Record a started run as finished, once its output is delivered."""
        return ledger_flow.drive(ledger_flow.finish(run), self._ledger_step)

    def abandon_run(self, run: Run) -> None:
        """A started run failed: stop renewing it and record it as failed. It stays unfinished in
        the ledger, so its rerun (or `clean`) deals with the events it stored, and later runs of
        other items wait for that. A store that cannot be reached now leaves it started: it is
        taken for dead once its sign of life is old (`ledger.Run.dead`)."""
        ledger_flow.drive(ledger_flow.abandon(run), self._ledger_step)

    def _ledger_step(self, step: ledger_flow.Step) -> Any:
        """One step of a ledger flow, done here."""
        match step:
            case ledger_flow.Runs():
                return self.runs()
            case ledger_flow.Swap(expected, new):
                return self._swap_run(expected, new)
            case ledger_flow.Delete(etl_seconds):
                return self._delete_entries(etl_seconds)
            case ledger_flow.Beat(move, run):
                return getattr(self._heartbeat, move)(run)

    @property
    def _heartbeat(self) -> Heartbeat:
        beat: Heartbeat | None = self.__dict__.get("_beat")
        if beat is None:
            beat = self.__dict__["_beat"] = Heartbeat(self._swap_run)
        return beat

    def clean(self, etl_time: datetime, *, force: bool = False) -> int:
        """Remove every entry stored with this etl time and its run's ledger record, for a run whose
        output was thrown away; returns how many entries went. Its events count as new again.
        Refused for an etl time of no run, or a run still running (`ledger.check_clean`)."""
        return ledger_flow.drive(ledger_flow.clean(to_epoch_seconds(etl_time), force=force), self._ledger_step)

    def processing_manifest(self, table: str, *, create: bool = True) -> ProcessingManifest:
        """The processing table `table` in this manifest's store (created if missing, unless not
        `create`): which items runs have processed (see `events_manifest._manifest.processing`). Optional
        for a backend."""
        raise processing.no_processing_table(self)

    def _runs(self) -> Iterable[Run]:
        """Every ledger record; a backend keeps them apart from the entries."""
        raise ledger.no_ledger(self)

    def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        """Write `new` (or delete, when None) in the place of the record at its etl time, if that
        place holds exactly `expected` (None: nothing); False when it holds something else."""
        raise ledger.no_ledger(self)

    def _delete_entries(self, etl_seconds: int) -> int:
        """Delete every entry stored with this etl time; how many."""
        raise ledger.no_ledger(self)

    def close(self) -> None:
        """Release connections and files; the manifest cannot be used afterwards. Runs still
        started stay unfinished in the ledger (see `abandon_run`)."""
        self._heartbeat.stop_all()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def not_listable(manifest: object) -> ManifestConfigError:
    return ManifestConfigError(
        f"{type(manifest).__name__} cannot list the fingerprints stored for an event id, which "
        "cross-batch synthetic dedup needs: use a backend that can (memory, SQLite, DynamoDB)"
    )


def raise_first(outcomes: list[bool | ManifestRequestError]) -> list[bool]:
    """The answers of a batch, or the first error among them raised."""
    for outcome in outcomes:
        if isinstance(outcome, ManifestRequestError):
            raise outcome
    return outcomes  # type: ignore[return-value]
