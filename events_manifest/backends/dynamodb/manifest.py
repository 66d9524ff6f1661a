"""DynamoDB manifest (boto3): one conditional PutItem per event, many in flight."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from events_manifest.backends.dynamodb import requests
from events_manifest.backends.dynamodb.client import DEFAULT_CONCURRENCY, ClientOptions, make_client
from events_manifest.backends.dynamodb.wire import Endpoint, WireClient
from events_manifest.base import DuplicateStorage, raise_first
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
from events_manifest.runs import Run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoDbManifest(DuplicateStorage):
    """The reference layout (docs/dynamodb.md) on a DynamoDB table, through a boto3 client.

    BatchWriteItem takes no conditions, so every put is its own PutItem; `put_many` keeps up to
    `concurrency` of them in flight on a thread pool (boto3 clients are thread-safe). Retries of
    throttled or failed requests are botocore's (standard mode when the client comes from this
    library); a retry of a put that had in fact succeeded is accepted as a rerun of the same etl.
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
        self._wire: WireClient | None = None
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_options(
        cls,
        options: ClientOptions,
        table: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        concurrency: int = DEFAULT_CONCURRENCY,
        lean: bool = True,
    ) -> DynamoDbManifest:
        """A manifest with its own clients; picklable, so Spark can ship it to its Python workers.

        With `lean` (the default) puts take the lean signed-HTTP path of `wire`, a fraction of
        boto3's CPU per request with the same retries and errors; table administration and
        `lean=False` use boto3.
        """
        manifest = cls(make_client(options), table, ttl=ttl, concurrency=concurrency, close_client=True)
        manifest._options = options
        if lean:
            manifest._wire = WireClient(
                Endpoint.resolve(options),
                max_attempts=options.max_attempts,
                pool_size=max(concurrency, 1),
                timeout=options.read_timeout,
            )
        return manifest

    def __repr__(self) -> str:
        return f"DynamoDbManifest(table={self.table!r}, ttl={self.ttl}, concurrency={self.concurrency})"

    def __getstate__(self) -> dict[str, Any]:
        if self._options is None:
            raise TypeError(
                "a DynamoDbManifest built on your own boto3 client cannot be pickled: "
                "use DynamoDbManifest.from_options, init_storage or a dynamodb:// URL"
            )
        return {
            "options": self._options,
            "table": self.table,
            "ttl": self.ttl,
            "concurrency": self.concurrency,
            "lean": self._wire is not None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        options, table = state.pop("options"), state.pop("table")
        self.__dict__.update(DynamoDbManifest.from_options(options, table, **state).__dict__)

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

        def run(group: list[int]) -> None:
            for i in group:
                results[i] = self._put_one(*batch.keys[i], batch.etl_seconds[i])

        groups = batch.pair_groups()
        workers = min(concurrency or self.concurrency, len(groups))
        if workers <= 1:
            for group in groups:
                run(group)
        else:
            for _ in self._executor(workers).map(run, groups):
                pass
        return results

    def _put_one(self, event_id: str, fingerprint: str, etl: int) -> bool | ManifestRequestError:
        request = requests.put_request(self.table, event_id, fingerprint, etl, self._ttl_seconds)
        if self._wire is not None:
            return (self._wire.call("PutItem", request)).put_outcome(self.table)
        try:
            self.client.put_item(**request)
        except (ClientError, BotoCoreError) as e:
            return requests.put_outcome(e, self.table)
        return True

    def _executor(self, workers: int) -> ThreadPoolExecutor:
        if self._pool is None or self._pool._max_workers < workers:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
            self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events-manifest")
        return self._pool

    def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        """One Query per id (paginated), up to `concurrency` in flight."""
        if len(event_ids) <= 1:
            return [e for i in event_ids for e in self._entries_of_one(i)]
        pool = self._executor(min(self.concurrency, len(event_ids)))
        return [e for entries in pool.map(self._entries_of_one, event_ids) for e in entries]

    def _entries_of_one(self, event_id: str) -> list[ManifestEntry]:
        found: list[ManifestEntry] = []
        start: dict[str, Any] | None = None
        while True:
            entries, start = requests.entries_from_page(
                self._query(requests.query_request(self.table, event_id, start))
            )
            found += entries
            if not start:
                return found

    def _query(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._wire is not None:
            return self._wire.call("Query", request).query_page(self.table)
        try:
            return dict(self.client.query(**request))
        except (ClientError, BotoCoreError) as e:
            raise requests.manifest_error(e, self.table) from e

    def _call(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """One request through boto3 (`PutItem` -> `client.put_item`); a failure is a ClientError
        or BotoCoreError, for the shared meanings of `requests`."""
        method = getattr(self.client, requests.METHODS[operation])
        return dict(method(**request))

    def _runs(self) -> list[Run]:
        return requests.read_pages(
            lambda start: self._checked("Query", requests.runs_request(self.table, start)), requests.runs_from_page
        )

    def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        operation, request = requests.swap_run_request(self.table, expected, new)
        try:
            self._call(operation, request)
        except (ClientError, BotoCoreError) as e:
            if requests.condition_failed(e):
                return False
            raise requests.manifest_error(e, self.table) from e
        return True

    def _delete_entries(self, etl_seconds: int) -> int:
        """A Scan of the table for the entries of this etl time, each deleted (if it still holds
        that etl time) with up to `concurrency` requests in flight."""

        def delete(key: dict[str, Any]) -> bool:
            try:
                self._call("DeleteItem", requests.delete_entry_request(self.table, key, etl_seconds))
            except (ClientError, BotoCoreError) as e:
                if requests.condition_failed(e):
                    return False
                raise requests.manifest_error(e, self.table) from e
            return True

        keys = requests.read_pages(
            lambda start: self._checked("Scan", requests.entries_of_run_request(self.table, etl_seconds, start)),
            lambda page: (page.get("Items", []), page.get("LastEvaluatedKey")),
        )
        return sum(self._executor(self.concurrency).map(delete, keys)) if keys else 0

    def _checked(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._call(operation, request)
        except (ClientError, BotoCoreError) as e:
            raise requests.manifest_error(e, self.table) from e

    def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        request = requests.get_request(self.table, normalize_event_id(event_id), check_fingerprint(fingerprint))
        try:
            response: dict[str, Any] = dict(self.client.get_item(**request))
        except (ClientError, BotoCoreError) as e:
            raise requests.manifest_error(e, self.table) from e
        return requests.entry_from_item(response.get("Item"))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._wire is not None:
            self._wire.close()
        if self._close_client:
            self.client.close()
