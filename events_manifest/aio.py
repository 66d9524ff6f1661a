"""The manifest for asyncio: the same contract with `await`, for services without Spark.

- `AsyncEventsManifest`: the protocol every async manifest follows;
- `AsyncDynamoDbManifest`: DynamoDB through aioboto3 without blocking the loop, many puts in
  flight;
- `AsyncManifestAdapter` / `to_async`: any sync manifest (in-memory, SQLite, a plugin) with its
  calls run in a worker thread, so the loop never blocks;
- `async_manifest_from_url`: the async twin of `manifest_from_url`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import attrs

from events_manifest import runs
from events_manifest.backends.dynamodb import operations
from events_manifest.backends.dynamodb.client import DEFAULT_CONCURRENCY, ClientOptions, admin_options, make_client
from events_manifest.backends.dynamodb.table import check_table, create_table
from events_manifest.base import DuplicateStorage, not_listable, raise_first
from events_manifest.errors import ManifestError, ManifestRequestError, ManifestUnavailableError
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    PutItem,
    check_fingerprint,
    entries_by_id,
    normalize_event_id,
    to_epoch_seconds,
    ttl_seconds,
)
from events_manifest.runs import COMMAND_LINE, Advice, Heartbeat, Run

__all__ = [
    "AsyncDynamoDbManifest",
    "AsyncEventsManifest",
    "AsyncManifestAdapter",
    "AsyncManifestBase",
    "async_manifest_from_url",
    "to_async",
]

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient as AsyncDynamoDBClient

Outcome = bool | ManifestRequestError
T = TypeVar("T")
log = logging.getLogger(__name__)


@runtime_checkable
class AsyncEventsManifest(Protocol):
    """What an asyncio consumer needs of a manifest; answers as in `DuplicateStorage`."""

    async def put(self, event_id: EventId, fingerprint: str, etl_time: datetime) -> bool: ...

    async def put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[bool]: ...

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]: ...

    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None: ...

    async def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]: ...

    async def runs(self) -> list[Run]: ...

    async def start_run(
        self,
        item: str | None,
        etl_time: datetime | None = None,
        *,
        explicit: bool = False,
        source: str = "",
        output: str = "",
        rerun: bool = False,
    ) -> Run: ...

    async def finish_run(self, run: Run) -> Run: ...

    async def abandon_run(self, run: Run) -> None: ...

    async def clean(self, etl_time: datetime, *, force: bool = False) -> int: ...

    async def close(self) -> None: ...


class AsyncManifestBase:
    """put and put_many in terms of `try_put_many`, `entries_of` in terms of `_entries_of`, and
    `async with`: shared by the async manifests, as `DuplicateStorage` does for the sync ones."""

    async def put(self, event_id: EventId, fingerprint: str, etl_time: datetime) -> bool:
        return (await self.put_many([(event_id, fingerprint, etl_time)]))[0]

    async def put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[bool]:
        return raise_first(await self.try_put_many(items, concurrency=concurrency))

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]:
        raise NotImplementedError

    async def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]:
        ids = list(dict.fromkeys(map(normalize_event_id, event_ids)))
        return entries_by_id(ids, await self._entries_of(ids))

    async def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        raise not_listable(self)

    async def runs(self) -> list[Run]:
        """`DuplicateStorage.runs`."""
        return sorted(await self._runs(), key=lambda run: run.etl_seconds)

    async def start_run(
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
        """`DuplicateStorage.start_run`: the same decision (`runs.plan`) and heartbeat, awaited."""
        start = runs.Start.of(
            item, etl_time, explicit=explicit, source=source, output=output, rerun=rerun, advice=advice
        )
        for _ in range(runs.MAX_ATTEMPTS):
            decided = start.plan(await self.runs(), runs.now_seconds())
            self._heartbeat().announce(decided.record)
            if await self._swap_run(decided.expected, decided.record):
                await asyncio.to_thread(self._heartbeat().add, decided.record)
                return decided.record
            await asyncio.to_thread(self._heartbeat().stop, decided.record)
        raise start.lost_race()

    async def finish_run(self, run: Run) -> Run:
        """`DuplicateStorage.finish_run`."""
        current = await asyncio.to_thread(self._heartbeat().stop, run)  # off the loop: a renewal may be on it
        done = runs.finished(current, runs.now_seconds())
        if not await self._swap_run(current, done):
            raise ManifestUnavailableError(runs.taken_over(current))
        return done

    async def abandon_run(self, run: Run) -> None:
        """`DuplicateStorage.abandon_run`."""
        current = await asyncio.to_thread(self._heartbeat().stop, run)
        try:
            await self._swap_run(current, runs.failed(current, runs.now_seconds()))
        except ManifestError as e:
            runs.log.warning("could not record the %s as failed: %s", current.describe(), e)

    def _heartbeat(self) -> Heartbeat:
        """The runs' heartbeat: its thread renews each record with `_swap_run`, run on this loop."""
        beat: Heartbeat | None = self.__dict__.get("_beat")
        if beat is None:
            loop = asyncio.get_running_loop()

            def swap(expected: Run, new: Run) -> bool:
                return asyncio.run_coroutine_threadsafe(self._swap_run(expected, new), loop).result(timeout=60)

            beat = self.__dict__["_beat"] = Heartbeat(swap)
        return beat

    async def clean(self, etl_time: datetime, *, force: bool = False) -> int:
        """`DuplicateStorage.clean`."""
        etl = to_epoch_seconds(etl_time)
        runs.check_clean(await self.runs(), etl, runs.now_seconds(), force=force)
        removed = await self._delete_entries(etl)
        for run in await self.runs():
            if run.etl_seconds == etl:
                await self._swap_run(run, None)
        return removed

    async def _runs(self) -> list[Run]:
        raise runs.no_ledger(self)

    async def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        raise runs.no_ledger(self)

    async def _delete_entries(self, etl_seconds: int) -> int:
        raise runs.no_ledger(self)

    async def close(self) -> None:
        """Release connections. Runs still started stay unfinished in the ledger."""
        beat: Heartbeat | None = self.__dict__.get("_beat")
        if beat is not None:
            await asyncio.to_thread(beat.stop_all)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class AsyncManifestAdapter(AsyncManifestBase):
    """Any sync manifest behind `await`: each call runs in a worker thread, never on the loop."""

    def __init__(self, manifest: DuplicateStorage) -> None:
        self.manifest = manifest

    def __repr__(self) -> str:
        return f"AsyncManifestAdapter({self.manifest!r})"

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]:
        return await asyncio.to_thread(self.manifest.try_put_many, list(items))

    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        return await asyncio.to_thread(self.manifest.lookup, event_id, fingerprint)

    async def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]:
        return await asyncio.to_thread(self.manifest.entries_of, list(event_ids))

    async def _runs(self) -> list[Run]:
        return await asyncio.to_thread(self.manifest.runs)

    async def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        return await asyncio.to_thread(self.manifest._swap_run, expected, new)

    async def _delete_entries(self, etl_seconds: int) -> int:
        return await asyncio.to_thread(self.manifest._delete_entries, etl_seconds)

    async def close(self) -> None:
        await super().close()
        await asyncio.to_thread(self.manifest.close)


def to_async(manifest: DuplicateStorage) -> AsyncManifestAdapter:
    return AsyncManifestAdapter(manifest)


class AsyncDynamoDbManifest(AsyncManifestBase):
    """The DynamoDB manifest for asyncio, through an aioboto3 client, with up to `concurrency`
    PutItem requests in flight.

    Build it with `await AsyncDynamoDbManifest.open(options, table)` (a client of its own, closed
    with the manifest), or pass your own aioboto3 client: `AsyncDynamoDbManifest(client, table)`.
    The requests, their conditions and the meaning of every answer are the sync manifest's own
    (`operations`); only the I/O differs.
    """

    def __init__(
        self,
        client: AsyncDynamoDBClient,
        table: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        self.client = client
        self.table = table
        self.concurrency = max(1, concurrency)
        self._ttl_seconds = ttl_seconds(ttl)
        self._send = operations.call_with(client)
        self._owned: contextlib.AsyncExitStack | None = None

    @property
    def ttl(self) -> timedelta:
        return timedelta(seconds=self._ttl_seconds)

    def __repr__(self) -> str:
        return f"AsyncDynamoDbManifest(table={self.table!r}, ttl={self.ttl}, concurrency={self.concurrency})"

    @classmethod
    async def open(
        cls,
        options: ClientOptions,
        table: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        concurrency: int = DEFAULT_CONCURRENCY,
        create: bool = False,
    ) -> AsyncDynamoDbManifest:
        """Check (or create) the table, then open an aioboto3 client of the manifest's own, with a
        connection per request in flight. Table administration runs in a thread (boto3)."""
        import aioboto3

        def prepare() -> None:
            admin = make_client(admin_options(options))
            try:
                (create_table if create else check_table)(admin, table)
            finally:
                admin.close()

        await asyncio.to_thread(prepare)
        options = attrs.evolve(options, max_pool_connections=max(options.max_pool_connections, concurrency))
        owned = contextlib.AsyncExitStack()
        client = await owned.enter_async_context(aioboto3.Session().client("dynamodb", **options.client_kwargs()))
        manifest = cls(client, table, ttl=ttl, concurrency=concurrency)
        manifest._owned = owned
        return manifest

    async def _run(self, exchange: operations.Exchange[T]) -> T:
        return await operations.drive_async(exchange, self._send)

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]:
        batch = PutBatch.of(items)
        results: list[Outcome] = [False] * len(batch)
        groups = iter(batch.pair_groups())
        table, ttl = self.table, self._ttl_seconds

        async def worker() -> None:
            for group in groups:  # one shared iterator: each worker takes the next pair's puts
                for i in group:
                    results[i] = await self._run(operations.put(table, *batch.keys[i], batch.etl_seconds[i], ttl))

        workers = min(concurrency or self.concurrency, len(batch)) or 1
        async with asyncio.TaskGroup() as tasks:
            for _ in range(workers):
                tasks.create_task(worker())
        return results

    async def _many(self, exchanges: list[operations.Exchange[T]]) -> list[T]:
        """Several operations, up to `concurrency` in flight."""
        limit = asyncio.Semaphore(self.concurrency)

        async def one(exchange: operations.Exchange[T]) -> T:
            async with limit:
                return await self._run(exchange)

        return list(await asyncio.gather(*(one(exchange) for exchange in exchanges)))

    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        return await self._run(
            operations.lookup(self.table, normalize_event_id(event_id), check_fingerprint(fingerprint))
        )

    async def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        """One Query per id (paginated), up to `concurrency` in flight."""
        found = await self._many([operations.entries_of_id(self.table, event_id) for event_id in event_ids])
        return [entry for entries in found for entry in entries]

    async def _runs(self) -> list[Run]:
        return await self._run(operations.runs(self.table))

    async def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        return await self._run(operations.swap_run(self.table, expected, new))

    async def _delete_entries(self, etl_seconds: int) -> int:
        keys = await self._run(operations.entry_keys_of_run(self.table, etl_seconds))
        return sum(await self._many([operations.delete_entry(self.table, key, etl_seconds) for key in keys]))

    async def close(self) -> None:
        await super().close()
        if self._owned is not None:
            await self._owned.aclose()
            self._owned = None


async def async_manifest_from_url(url: str) -> AsyncEventsManifest:
    """`manifest_from_url` for asyncio: DynamoDB natively, every other scheme through the adapter."""
    from events_manifest import factory

    if urlsplit(url).scheme == "dynamodb":
        table, options, create, ttl, concurrency = factory.dynamodb_url_parts(url)
        return await AsyncDynamoDbManifest.open(options, table, ttl=ttl, concurrency=concurrency, create=create)
    opened = await asyncio.to_thread(functools.partial(factory.manifest_from_url, url))
    return to_async(opened)
