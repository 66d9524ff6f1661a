"""The manifest contract: one conditional put of (event id, fingerprint, etl time) with a ttl."""

from __future__ import annotations

import abc
from collections.abc import Iterable
from datetime import datetime, timedelta
from types import TracebackType

from events_manifest.errors import ManifestConfigError, ManifestRequestError
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    PutItem,
    entries_by_id,
    normalize_event_id,
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

    def close(self) -> None:
        """Release connections and files; the manifest cannot be used afterwards."""

    def __enter__(self) -> DuplicateStorage:
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


EventsManifest = DuplicateStorage
"""The Scala library's name for the same contract."""
