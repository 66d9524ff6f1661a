"""Drive an async manifest from sync code, so sync test suites (the conformance tests) run
unchanged against async manifests. A testing tool: services should `await` the manifest."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any, TypeVar

from events_manifest._manifest.async_contract import AsyncEventsManifest
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import COMMAND_LINE, Advice, Run
from events_manifest.errors import ManifestRequestError
from events_manifest.model import EventId, ManifestEntry, PutBatch, from_epoch_seconds

T = TypeVar("T")


class BlockingManifest(DuplicateStorage):
    """An async manifest on an event loop of its own thread, behind the sync contract."""

    def __init__(self, opener: Callable[[], Awaitable[AsyncEventsManifest]]) -> None:
        super().__init__()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="blocking-manifest", daemon=True)
        self._thread.start()

        async def open_it() -> AsyncEventsManifest:
            return await opener()

        self.inner = self._run(open_it())

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    @property
    def ttl(self) -> timedelta:
        inner_ttl: timedelta = getattr(self.inner, "ttl", super().ttl)
        return inner_ttl

    def __repr__(self) -> str:
        return f"BlockingManifest({self.inner!r})"

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        times = [from_epoch_seconds(s) for s in batch.etl_seconds]
        items = [(event_id, fingerprint, time) for (event_id, fingerprint), time in zip(batch.keys, times, strict=True)]
        return self._run(self.inner.try_put_many(items))

    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        return self._run(self.inner.lookup(event_id, fingerprint))

    def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        return [e for entries in self._run(self.inner.entries_of(event_ids)).values() for e in entries]

    def runs(self) -> list[Run]:
        return self._run(self.inner.runs())

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
        """The async manifest's own ledger flow and heartbeat, on its loop."""
        start = self.inner.start_run(
            item, etl_time, explicit=explicit, source=source, output=output, rerun=rerun, advice=advice
        )
        return self._run(start)

    def finish_run(self, run: Run) -> Run:
        return self._run(self.inner.finish_run(run))

    def abandon_run(self, run: Run) -> None:
        self._run(self.inner.abandon_run(run))

    def clean(self, etl_time: datetime, *, force: bool = False) -> int:
        return self._run(self.inner.clean(etl_time, force=force))

    def close(self) -> None:
        super().close()
        if self._thread.is_alive():
            self._run(self.inner.close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
