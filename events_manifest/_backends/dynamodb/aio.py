"""The DynamoDB manifest for asyncio: the sync manifest's requests and answers (`operations`) through
an aioboto3 client."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

import attrs

from events_manifest._aws import aioboto3_session
from events_manifest._backends.dynamodb import operations
from events_manifest._backends.dynamodb.client import DEFAULT_CONCURRENCY, ClientOptions, admin_options, make_client
from events_manifest._backends.dynamodb.table import check_table, create_table
from events_manifest._manifest.async_contract import AsyncManifestBase, Outcome
from events_manifest._manifest.ledger import Run
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    PutItem,
    check_fingerprint,
    normalize_event_id,
    ttl_seconds,
)

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient as AsyncDynamoDBClient

T = TypeVar("T")


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

        def prepare() -> None:
            admin = make_client(admin_options(options))
            try:
                (create_table if create else check_table)(admin, table)
            finally:
                admin.close()

        await asyncio.to_thread(prepare)
        options = attrs.evolve(options, max_pool_connections=max(options.max_pool_connections, concurrency))
        owned = contextlib.AsyncExitStack()
        client = await owned.enter_async_context(aioboto3_session().client("dynamodb", **options.client_kwargs()))
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
