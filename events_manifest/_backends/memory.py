"""In-memory manifest: for tests, notebooks and single-process jobs that need no persistence."""

from __future__ import annotations

import threading
from datetime import timedelta

from events_manifest._manifest import ledger
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import Run
from events_manifest._manifest.processing import InMemoryProcessingManifest, ProcessingManifest
from events_manifest.errors import ManifestConfigError, ManifestRequestError
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    accepts,
    check_fingerprint,
    normalize_event_id,
)


class InMemoryManifest(DuplicateStorage):
    """A dict behind a lock: thread-safe, forgotten when the process ends."""

    def __init__(self, *, ttl: timedelta = DEFAULT_TTL) -> None:
        super().__init__(ttl=ttl)
        self._entries: dict[tuple[str, str], int] = {}  # etl seconds; the ttl is this manifest's
        self._runs_by_etl: dict[int, Run] = {}
        self._processing: dict[str, ProcessingManifest] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryManifest(entries={len(self._entries)}, ttl={self.ttl})"

    def __len__(self) -> int:
        return len(self._entries)

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        keys, etls, ttl = batch.keys, batch.etl_seconds, self._ttl_seconds
        entries = self._entries
        with self._lock:
            before = len(entries)
            if entries.keys().isdisjoint(keys):  # all new: write them at once
                entries.update(zip(keys, etls, strict=True))
                if len(entries) == before + len(keys):
                    return [True] * len(keys)
                for key in keys:  # some pair came twice in the call: replay it in order below
                    entries.pop(key, None)
            results: list[bool | ManifestRequestError] = []
            for key, etl in zip(keys, etls, strict=True):
                stored = entries.get(key)
                accepted = accepts(None if stored is None else (stored, stored + ttl), etl)
                if accepted:
                    entries[key] = etl
                results.append(accepted)
            return results

    def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        """One scan of every entry: fine for the sizes an in-memory manifest holds."""
        wanted, ttl = set(event_ids), self._ttl_seconds
        with self._lock:
            stored = list(self._entries.items())
        return [ManifestEntry(i, fp, etl, etl + ttl) for (i, fp), etl in stored if i in wanted]

    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        key = (normalize_event_id(event_id), check_fingerprint(fingerprint))
        with self._lock:
            etl = self._entries.get(key)
        return None if etl is None else ManifestEntry(*key, etl, etl + self._ttl_seconds)

    def processing_manifest(self, table: str, *, create: bool = True) -> ProcessingManifest:
        with self._lock:
            if not create and table not in self._processing:
                raise ManifestConfigError(f"the manifest holds no processing table {table}")
            return self._processing.setdefault(table, InMemoryProcessingManifest(table))

    def _runs(self) -> list[Run]:
        with self._lock:
            return list(self._runs_by_etl.values())

    def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        etl = (new or expected).etl_seconds  # type: ignore[union-attr]
        with self._lock:
            return ledger.swap_in(self._runs_by_etl, etl, expected, new)

    def _delete_entries(self, etl_seconds: int) -> int:
        with self._lock:
            doomed = [key for key, etl in self._entries.items() if etl == etl_seconds]
            for key in doomed:
                del self._entries[key]
        return len(doomed)
