"""DynamoDB manifest (boto3): one conditional PutItem per event, many in flight."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from events_manifest._backends.dynamodb import operations
from events_manifest._backends.dynamodb.client import DEFAULT_CONCURRENCY, ClientOptions, make_client
from events_manifest._backends.dynamodb.operations import Exchange
from events_manifest._backends.dynamodb.processing import DynamoDbProcessingManifest
from events_manifest._manifest.contract import DuplicateStorage, raise_first
from events_manifest._manifest.ledger import Run
from events_manifest._manifest.processing import ProcessingManifest
from events_manifest.errors import ManifestRequestError
from events_manifest.model import (
    DEFAULT_TTL,
    EventId,
    ManifestEntry,
    PutBatch,
    PutItem,
    check_fingerprint,
    normalize_event_id,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")


class DynamoDbManifest(DuplicateStorage):
    """The reference layout (docs/dynamodb.md) on a DynamoDB table, through a boto3 client.

    BatchWriteItem takes no conditions, so every put is its own PutItem; `put_many` keeps up to
    `concurrency` of them in flight on a thread pool (boto3 clients are thread-safe). Everything
    goes through the client, so the SDK's settings apply: retries (standard mode when the client
    comes from this library), proxies, CA bundles, timeouts. A retry of a put that had in fact
    succeeded is accepted as a rerun of the same etl. Each request and what its answer means is
    written once, in `operations`, for this manifest and the async one.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        concurrency: int = DEFAULT_CONCURRENCY,
        close_client: bool = False,
    ) -> None:
        super().__init__(ttl=ttl)
        self.client = client
        self.table = table
        self.concurrency = max(1, concurrency)
        self._close_client = close_client
        self._options: ClientOptions | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._send = operations.call_with(client)

    @classmethod
    def from_options(
        cls,
        options: ClientOptions,
        table: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> DynamoDbManifest:
        """A manifest with a client of its own, with a connection per request in flight; picklable,
        so Spark can ship it to its Python workers (each opens its own client)."""
        options = attrs.evolve(options, max_pool_connections=max(options.max_pool_connections, concurrency))
        manifest = cls(make_client(options), table, ttl=ttl, concurrency=concurrency, close_client=True)
        manifest._options = options
        return manifest

    def __repr__(self) -> str:
        return f"DynamoDbManifest(table={self.table!r}, ttl={self.ttl}, concurrency={self.concurrency})"

    def __getstate__(self) -> dict[str, Any]:
        if self._options is None:
            raise TypeError(
                "a DynamoDbManifest built on your own boto3 client cannot be pickled: "
                "use DynamoDbManifest.from_options, init_storage or a dynamodb:// URL"
            )
        return {"options": self._options, "table": self.table, "ttl": self.ttl, "concurrency": self.concurrency}

    def __setstate__(self, state: dict[str, Any]) -> None:
        options, table = state.pop("options"), state.pop("table")
        self.__dict__.update(DynamoDbManifest.from_options(options, table, **state).__dict__)

    def _run(self, exchange: Exchange[T]) -> T:
        return operations.drive(exchange, self._send)

    def put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[bool]:
        """`put` for many items with up to `concurrency` PutItem requests in flight."""
        return raise_first(self.try_put_many(items, concurrency=concurrency))

    def try_put_many(
        self, items: Iterable[PutItem], *, concurrency: int | None = None
    ) -> list[bool | ManifestRequestError]:
        batch = PutBatch.of(items)
        return self._put_batch(batch, concurrency) if len(batch) else []

    def _put_batch(self, batch: PutBatch, concurrency: int | None = None) -> list[bool | ManifestRequestError]:
        results: list[bool | ManifestRequestError] = [False] * len(batch)
        table, ttl = self.table, self._ttl_seconds

        def run(group: list[int]) -> None:  # the puts of one pair, in order
            for i in group:
                results[i] = self._run(operations.put(table, *batch.keys[i], batch.etl_seconds[i], ttl))

        groups = batch.pair_groups()
        workers = min(concurrency or self.concurrency, len(groups))
        if workers <= 1:
            for group in groups:
                run(group)
        else:
            for _ in self._executor(workers).map(run, groups):
                pass
        return results

    def _executor(self, workers: int) -> ThreadPoolExecutor:
        if self._pool is None or self._pool._max_workers < workers:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
            self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events-manifest")
        return self._pool

    def _many(self, exchanges: list[Exchange[T]]) -> list[T]:
        """Several operations, up to `concurrency` in flight."""
        if len(exchanges) <= 1:
            return [self._run(exchange) for exchange in exchanges]
        return list(self._executor(min(self.concurrency, len(exchanges))).map(self._run, exchanges))

    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        return self._run(operations.lookup(self.table, normalize_event_id(event_id), check_fingerprint(fingerprint)))

    def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        """One Query per id (paginated), up to `concurrency` in flight."""
        found = self._many([operations.entries_of_id(self.table, event_id) for event_id in event_ids])
        return [entry for entries in found for entry in entries]

    def processing_manifest(self, table: str, *, create: bool = True) -> ProcessingManifest:
        return DynamoDbProcessingManifest(self.client, table, create=create)

    def _runs(self) -> list[Run]:
        return self._run(operations.runs(self.table))

    def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        return self._run(operations.swap_run(self.table, expected, new))

    def _delete_entries(self, etl_seconds: int) -> int:
        """A Scan of the table for the entries of this etl time, each deleted (if it still holds
        that etl time) with up to `concurrency` requests in flight."""
        keys = self._run(operations.entry_keys_of_run(self.table, etl_seconds))
        return sum(self._many([operations.delete_entry(self.table, key, etl_seconds) for key in keys]))

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._close_client:
            self.client.close()
