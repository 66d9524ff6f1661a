"""In-memory manifest: for tests, notebooks and single-process jobs that need no persistence."""

from __future__ import annotations

import threading
from datetime import timedelta

from events_manifest.base import DuplicateStorage
from events_manifest.errors import ManifestRequestError
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
        self._entries: dict[tuple[str, str], tuple[int, int]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryManifest(entries={len(self._entries)}, ttl={self.ttl})"

    def __len__(self) -> int:
        return len(self._entries)

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        entries, ttl = self._entries, self._ttl_seconds
        get = entries.get
        results: list[bool | ManifestRequestError] = []
        append = results.append
        with self._lock:
            for key, etl in zip(batch.keys(), batch.etl_seconds, strict=True):
                if accepts(get(key), etl):
                    entries[key] = (etl, etl + ttl)
                    append(True)
                else:
                    append(False)
        return results

    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        key = (normalize_event_id(event_id), check_fingerprint(fingerprint))
        with self._lock:
            stored = self._entries.get(key)
        return None if stored is None else ManifestEntry(*key, *stored)
