"""The manifest for asyncio: the same contract with `await`, for services without Spark.

- `AsyncEventsManifest`: the protocol every async manifest follows;
- `AsyncDynamoDbManifest`: DynamoDB without blocking the loop (the lean path on aiohttp, or your
  own aioboto3 client), many puts in flight;
- `AsyncManifestAdapter` / `to_async`: any sync manifest (in-memory, SQLite, a plugin) with its
  calls run in a worker thread, so the loop never blocks;
- `async_manifest_from_url`: the async twin of `manifest_from_url`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from events_manifest import runs
from events_manifest.backends.dynamodb import requests
from events_manifest.backends.dynamodb.client import DEFAULT_CONCURRENCY, ClientOptions, admin_options, make_client
from events_manifest.backends.dynamodb.requests import Page
from events_manifest.backends.dynamodb.table import check_table, create_table
from events_manifest.backends.dynamodb.wire import AsyncWireClient, Endpoint
from events_manifest.base import DuplicateStorage, not_listable, raise_first
from events_manifest.errors import ManifestRequestError, ManifestUnavailableError
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    PutItem,
    check_fingerprint,
    entries_by_id,
    from_epoch_seconds,
    normalize_event_id,
    to_epoch_seconds,
    ttl_seconds,
)
from events_manifest.runs import Run

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

    async def start_run(self, item: str | None, etl_time: datetime | None = None, *, explicit: bool = False) -> Run: ...

    async def finish_run(self, run: Run) -> Run: ...

    async def clean(self, etl_time: datetime) -> int: ...

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

    async def start_run(self, item: str | None, etl_time: datetime | None = None, *, explicit: bool = False) -> Run:
        """`DuplicateStorage.start_run`: the same decision (`runs.plan`), awaited."""
        item = runs.check_item(item)
        requested = from_epoch_seconds(runs.now_seconds()) if etl_time is None else etl_time
        for _ in range(runs.MAX_ATTEMPTS):
            decided = runs.plan(await self.runs(), item, requested, explicit=explicit, now=runs.now_seconds())
            if await self._swap_run(decided.expected, decided.record):
                for warning in decided.warnings:
                    log.warning(warning)
                return decided.record
        raise runs.lost_race(item or str(requested))

    async def finish_run(self, run: Run) -> Run:
        """`DuplicateStorage.finish_run`."""
        done = runs.finished(run, runs.now_seconds())
        if not await self._swap_run(run, done):
            raise ManifestUnavailableError(runs.taken_over(run))
        return done

    async def clean(self, etl_time: datetime) -> int:
        """`DuplicateStorage.clean`."""
        etl = to_epoch_seconds(etl_time)
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
        """Release connections."""

    async def __aenter__(self) -> AsyncManifestBase:
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
        await asyncio.to_thread(self.manifest.close)


def to_async(manifest: DuplicateStorage) -> AsyncManifestAdapter:
    return AsyncManifestAdapter(manifest)


class AsyncDynamoDbManifest(AsyncManifestBase):
    """The DynamoDB manifest for asyncio, with up to `concurrency` PutItem requests in flight.

    Build it with `await AsyncDynamoDbManifest.open(options, table)` (the lean path), or pass your
    own aioboto3 client: `AsyncDynamoDbManifest(client, table)`. The request, its condition and
    the meaning of every answer are the sync manifest's own (`requests`); only the I/O differs.
    """

    def __init__(
        self,
        client: AsyncDynamoDBClient | None,
        table: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        concurrency: int = DEFAULT_CONCURRENCY,
        wire: AsyncWireClient | None = None,
    ) -> None:
        if client is None and wire is None:
            raise ValueError("give an aioboto3 client, or use AsyncDynamoDbManifest.open")
        self.client = client
        self.table = table
        self.concurrency = max(1, concurrency)
        self._ttl_seconds = ttl_seconds(ttl)
        self._wire = wire

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
        """Check (or create) the table, then open the lean path; table administration runs in a thread."""

        def prepare() -> Endpoint:
            admin = make_client(admin_options(options))
            try:
                (create_table if create else check_table)(admin, table)
            finally:
                admin.close()
            return Endpoint.resolve(options)

        endpoint = await asyncio.to_thread(prepare)
        wire = AsyncWireClient(
            endpoint, max_attempts=options.max_attempts, pool_size=concurrency, timeout=options.read_timeout
        )
        return cls(None, table, ttl=ttl, concurrency=concurrency, wire=wire)

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]:
        batch = PutBatch.of(items)
        results: list[Outcome] = [False] * len(batch)
        groups = iter(batch.pair_groups())

        async def worker() -> None:
            for group in groups:  # one shared iterator: each worker takes the next pair's puts
                for i in group:
                    results[i] = await self._put_one(*batch.keys[i], batch.etl_seconds[i])

        workers = min(concurrency or self.concurrency, len(batch)) or 1
        async with asyncio.TaskGroup() as tasks:
            for _ in range(workers):
                tasks.create_task(worker())
        return results

    async def _put_one(self, event_id: str, fingerprint: str, etl: int) -> Outcome:
        request = requests.put_request(self.table, event_id, fingerprint, etl, self._ttl_seconds)
        if self._wire is not None:
            return (await self._wire.call("PutItem", request)).put_outcome(self.table)
        assert self.client is not None
        try:
            await self.client.put_item(**request)
        except (ClientError, BotoCoreError) as e:
            return requests.put_outcome(e, self.table)
        return True

    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        request = requests.get_request(self.table, normalize_event_id(event_id), check_fingerprint(fingerprint))
        if self._wire is not None:
            return (await self._wire.call("GetItem", request)).lookup_outcome(self.table)
        assert self.client is not None
        try:
            response: dict[str, Any] = dict(await self.client.get_item(**request))
        except (ClientError, BotoCoreError) as e:
            raise requests.manifest_error(e, self.table) from e
        return requests.entry_from_item(response.get("Item"))

    async def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        """One Query per id (paginated), up to `concurrency` in flight."""
        limit = asyncio.Semaphore(self.concurrency)

        async def one(event_id: str) -> list[ManifestEntry]:
            found: list[ManifestEntry] = []
            start: dict[str, Any] | None = None
            async with limit:
                while True:
                    page = await self._query(requests.query_request(self.table, event_id, start))
                    entries, start = requests.entries_from_page(page)
                    found += entries
                    if not start:
                        return found

        return [e for entries in await asyncio.gather(*(one(i) for i in event_ids)) for e in entries]

    async def _query(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._wire is not None:
            return (await self._wire.call("Query", request)).query_page(self.table)
        assert self.client is not None
        try:
            return dict(await self.client.query(**request))
        except (ClientError, BotoCoreError) as e:
            raise requests.manifest_error(e, self.table) from e

    async def _call(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """One request, through the lean path or the aioboto3 client; a failure is a ClientError
        or BotoCoreError, for the shared meanings of `requests`."""
        if self._wire is not None:
            reply = await self._wire.call(operation, request)
            if reply.status != 200:
                raise reply.error(operation)
            page: dict[str, Any] = json.loads(reply.body)
            return page
        assert self.client is not None
        return dict(await getattr(self.client, requests.METHODS[operation])(**request))

    async def _checked(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self._call(operation, request)
        except (ClientError, BotoCoreError) as e:
            raise requests.manifest_error(e, self.table) from e

    async def _read_pages(
        self,
        operation: str,
        make: Callable[[Page | None], dict[str, Any]],
        read: Callable[[Page], tuple[list[T], Page | None]],
    ) -> list[T]:
        found: list[T] = []
        start: Page | None = None
        while True:
            items, start = read(await self._checked(operation, make(start)))
            found += items
            if not start:
                return found

    async def _runs(self) -> list[Run]:
        return await self._read_pages(
            "Query", lambda start: requests.runs_request(self.table, start), requests.runs_from_page
        )

    async def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        operation, request = requests.swap_run_request(self.table, expected, new)
        try:
            await self._call(operation, request)
        except (ClientError, BotoCoreError) as e:
            if requests.condition_failed(e):
                return False
            raise requests.manifest_error(e, self.table) from e
        return True

    async def _delete_entries(self, etl_seconds: int) -> int:
        keys = await self._read_pages(
            "Scan",
            lambda start: requests.entries_of_run_request(self.table, etl_seconds, start),
            lambda page: (page.get("Items", []), page.get("LastEvaluatedKey")),
        )
        limit = asyncio.Semaphore(self.concurrency)

        async def delete(key: dict[str, Any]) -> bool:
            async with limit:
                try:
                    await self._call("DeleteItem", requests.delete_entry_request(self.table, key, etl_seconds))
                except (ClientError, BotoCoreError) as e:
                    if requests.condition_failed(e):
                        return False
                    raise requests.manifest_error(e, self.table) from e
                return True

        return sum(await asyncio.gather(*(delete(key) for key in keys)))

    async def close(self) -> None:
        if self._wire is not None:
            await self._wire.close()


async def async_manifest_from_url(url: str) -> AsyncEventsManifest:
    """`manifest_from_url` for asyncio: DynamoDB natively, every other scheme through the adapter."""
    from events_manifest import factory

    if urlsplit(url).scheme == "dynamodb":
        table, options, create, ttl, concurrency = factory.dynamodb_url_parts(url)
        return await AsyncDynamoDbManifest.open(options, table, ttl=ttl, concurrency=concurrency, create=create)
    opened = await asyncio.to_thread(functools.partial(factory.manifest_from_url, url))
    return to_async(opened)
