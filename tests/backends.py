"""The suite's manifests of every kind, made fresh for each test: the `backend` fixture (conftest)
hands them out; the same conformance tests run against each."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest import DEFAULT_TTL, ClientOptions, DuplicateStorage, manifest_from_url
from events_manifest._backends.dynamodb import make_client
from events_manifest._opening.urls import dynamodb_url_parts
from events_manifest.aio import AsyncDynamoDbManifest, AsyncEventsManifest
from events_manifest.testing import LocalServer
from events_manifest.testing._blocking import BlockingManifest


def ttl_text(ttl: timedelta) -> str:
    return f"{int(ttl.total_seconds())}s"


@attrs.define
class Backend:
    """Makes fresh, empty manifests of one kind; `url` names one that other processes can open.

    An `async_open` backend is the async manifest of that URL, driven through `BlockingManifest`
    so that the same sync tests run against it unchanged.
    """

    name: str
    fresh: Callable[[], Callable[[timedelta], str]]
    shared_across_processes: bool
    async_open: Callable[[str], Awaitable[AsyncEventsManifest]] | None = None
    opened: list[DuplicateStorage] = attrs.field(factory=list)
    url: Callable[[timedelta], str] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.url = self.fresh()

    def renew(self) -> None:
        """Point at a new, empty store (file or table) for the next manifests."""
        self.url = self.fresh()

    def make(self, ttl: timedelta = DEFAULT_TTL) -> DuplicateStorage:
        url = self.url(ttl)
        opener = self.async_open
        manifest = manifest_from_url(url) if opener is None else BlockingManifest(lambda: opener(url))
        self.opened.append(manifest)
        return manifest


async def aioboto3_manifest(url: str) -> AsyncEventsManifest:
    """The async DynamoDB manifest on the user's own aioboto3 client (not one it opened itself)."""
    import aioboto3

    table, options, _, ttl, concurrency = dynamodb_url_parts(url)
    await asyncio.to_thread(lambda: manifest_from_url(url).close())  # creates the table
    stack = contextlib.AsyncExitStack()
    client = await stack.enter_async_context(aioboto3.Session().client("dynamodb", **options.client_kwargs()))

    class Owned(AsyncDynamoDbManifest):
        async def close(self) -> None:
            await super().close()
            await stack.aclose()

    return Owned(client, table, ttl=ttl, concurrency=concurrency)


def unique_table() -> str:
    return f"manifest-{uuid.uuid4().hex[:12]}"


SERVERS = {"dynalite": "dynalite", "moto": "moto_server"}
"""The session fixture that serves each DynamoDB-compatible backend."""
BACKENDS = ["memory", "sqlite", "dynalite", "moto"]
ASYNC_BACKENDS = ["async-memory", "async-sqlite", "async-dynalite", "async-moto", "aioboto3-dynalite"]


def backend_of(request: pytest.FixtureRequest, name: str, tmp_path: Path) -> Backend:
    """A backend of kind `name`, its server (if any) taken from the session's fixtures."""
    server = request.getfixturevalue(SERVERS[name]) if name in SERVERS else None
    return make_backend(name, tmp_path, server)


def make_backend(name: str, tmp_path: Path, server: LocalServer | None) -> Backend:
    """A backend of kind `name` (memory, sqlite, dynalite, moto) storing under `tmp_path` or on `server`."""
    if name == "memory":
        return Backend(name, lambda: lambda ttl: f"memory://?ttl={ttl_text(ttl)}", shared_across_processes=False)
    if name == "sqlite":

        def sqlite_url() -> Callable[[timedelta], str]:
            path = tmp_path / f"manifest-{uuid.uuid4().hex[:8]}.db"
            return lambda ttl: f"sqlite://{path}?ttl={ttl_text(ttl)}"

        return Backend(name, sqlite_url, shared_across_processes=True)
    assert server is not None, f"{name} needs its server"

    def dynamodb_url() -> Callable[[timedelta], str]:
        table = unique_table()
        return lambda ttl: (
            f"dynamodb://{table}?region=us-east-1&endpoint={server.endpoint}&create=true"
            f"&ttl={ttl_text(ttl)}&max_attempts=3"
        )

    return Backend(name, dynamodb_url, shared_across_processes=True)


def client_for(endpoint: str, max_attempts: int = 3) -> Any:
    """A DynamoDB client for a local server, as the manifest makes them."""
    return make_client(ClientOptions(region="us-east-1", endpoint_url=endpoint, max_attempts=max_attempts))


REFERENCE_ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
REFERENCE_FP = "AADCE520E20C2899F4CED228A79A3083"
REFERENCE_ETL = datetime(2017, 1, 26, 0, 1, 25, 292000)
"""An item as the reference's manifest stores it: an event id, a fingerprint, an etl time."""
