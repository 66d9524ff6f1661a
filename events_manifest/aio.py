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
import functools
from urllib.parse import urlsplit

from events_manifest._backends.dynamodb.aio import AsyncDynamoDbManifest
from events_manifest._manifest.async_contract import (
    AsyncEventsManifest,
    AsyncManifestAdapter,
    AsyncManifestBase,
    to_async,
)
from events_manifest._opening import urls

__all__ = [
    "AsyncDynamoDbManifest",
    "AsyncEventsManifest",
    "AsyncManifestAdapter",
    "AsyncManifestBase",
    "async_manifest_from_url",
    "to_async",
]


async def async_manifest_from_url(url: str) -> AsyncEventsManifest:
    """`manifest_from_url` for asyncio: DynamoDB natively, every other scheme through the adapter."""
    if urlsplit(url).scheme == "dynamodb":
        table, options, create, ttl, concurrency = urls.dynamodb_url_parts(url)
        return await AsyncDynamoDbManifest.open(options, table, ttl=ttl, concurrency=concurrency, create=create)
    opened = await asyncio.to_thread(functools.partial(urls.manifest_from_url, url))
    return to_async(opened)
