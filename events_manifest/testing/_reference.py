"""The manifest contract (docs/manifest.md) as a few lines of plain Python: the model every backend is
checked against."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from events_manifest.model import DEFAULT_TTL, PutBatch, PutItem, accepts, ttl_seconds


class ReferenceManifest:
    """What a manifest must answer, with no storage, no concurrency and no cleverness."""

    def __init__(self, ttl: timedelta = DEFAULT_TTL) -> None:
        self.ttl_seconds = ttl_seconds(ttl)
        self.entries: dict[tuple[str, str], tuple[int, int]] = {}

    def put_many(self, items: Iterable[PutItem]) -> list[bool]:
        answers = []
        batch = PutBatch.of(items)
        for key, etl in zip(batch.keys, batch.etl_seconds, strict=True):
            accepted = accepts(self.entries.get(key), etl)
            if accepted:
                self.entries[key] = (etl, etl + self.ttl_seconds)
            answers.append(accepted)
        return answers
