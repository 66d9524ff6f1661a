"""Real components for the suite: dynalite and moto servers on free loopback ports, and backends."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest import DEFAULT_TTL, DuplicateStorage, manifest_from_url
from events_manifest.aio import AsyncDynamoDbManifest, AsyncEventsManifest, async_manifest_from_url
from events_manifest.factory import dynamodb_url_parts
from events_manifest.testing import LocalServer, start_dynalite, start_moto
from events_manifest.testing.blocking import BlockingManifest

ROOT = Path(__file__).resolve().parent.parent

# Local servers accept any credentials; never let the suite pick up a real account's.
os.environ.update(
    AWS_ACCESS_KEY_ID="test-access-key",
    AWS_SECRET_ACCESS_KEY="test-secret-key",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_EC2_METADATA_DISABLED="true",
)
# The suite's JVMs (its Spark session and every job it starts as a process) handle small data:
# their start-up, not their throughput, is the cost; the quick JIT alone and one GC thread save a
# third of it on two cores.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
    os.environ.pop(variable, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests, those that start a job as a process, first (in their order): the
    workers share the rest and end together."""
    items.sort(key=lambda item: item.get_closest_marker("process") is None)


@pytest.fixture(scope="session")
def dynalite() -> Iterator[LocalServer]:
    with start_dynalite(ROOT, table_ms=20) as server:
        yield server


@pytest.fixture(scope="session")
def moto_server() -> Iterator[LocalServer]:
    with start_moto() as server:
        yield server


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


async def _aioboto3_manifest(url: str) -> AsyncEventsManifest:
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


BACKENDS = ["memory", "sqlite", "dynalite", "moto"]
ASYNC_BACKENDS = ["async-memory", "async-sqlite", "async-dynalite", "async-moto", "aioboto3-dynalite"]


@pytest.fixture(params=BACKENDS + ASYNC_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    made = _backend(request, request.param.removeprefix("async-").removeprefix("aioboto3-"), tmp_path)
    if request.param.startswith("async-"):
        made.async_open = async_manifest_from_url
    elif request.param.startswith("aioboto3-"):
        made.async_open = _aioboto3_manifest
    made.name = request.param
    yield made
    for manifest in made.opened:
        manifest.close()


def _backend(request: pytest.FixtureRequest, name: str, tmp_path: Path) -> Backend:
    if name == "memory":
        return Backend(name, lambda: lambda ttl: f"memory://?ttl={ttl_text(ttl)}", shared_across_processes=False)
    if name == "sqlite":

        def sqlite_url() -> Callable[[timedelta], str]:
            path = tmp_path / f"manifest-{uuid.uuid4().hex[:8]}.db"
            return lambda ttl: f"sqlite://{path}?ttl={ttl_text(ttl)}"

        return Backend(name, sqlite_url, shared_across_processes=True)
    server: LocalServer = request.getfixturevalue("dynalite" if name == "dynalite" else "moto_server")

    def dynamodb_url() -> Callable[[timedelta], str]:
        table = unique_table()
        return lambda ttl: (
            f"dynamodb://{table}?region=us-east-1&endpoint={server.endpoint}&create=true"
            f"&ttl={ttl_text(ttl)}&max_attempts=3"
        )

    return Backend(name, dynamodb_url, shared_across_processes=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local Spark session of the suite (its Python workers can import `tests`)."""
    pytest.importorskip("pyspark")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    from spark_integration.session import local_session

    settings: dict[str, Any] = {"spark.sql.shuffle.partitions": "2"}
    session = local_session("local[2]", "events-manifest-tests", **settings)
    yield session
    session.stop()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Spark's handler would reach a stopped context
