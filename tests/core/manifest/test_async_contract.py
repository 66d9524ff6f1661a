"""Async specifics: many requests in flight on racing pairs, throttling mid-batch, a loop never blocked."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from events_manifest import ClientOptions, SqliteManifest, manifest_from_url
from events_manifest.aio import AsyncDynamoDbManifest, AsyncEventsManifest, async_manifest_from_url, to_async
from events_manifest.testing import FaultProxy, LocalServer
from tests.backends import unique_table

ETL = datetime(2026, 11, 1, 6, 0)


def options(endpoint: str, max_attempts: int = 10) -> ClientOptions:
    return ClientOptions(region="us-east-1", endpoint_url=endpoint, max_attempts=max_attempts, max_pool_connections=128)


def test_async_manifests_follow_the_protocol(tmp_path: Path) -> None:
    adapted = to_async(SqliteManifest(tmp_path / "m.db"))
    assert isinstance(adapted, AsyncEventsManifest)
    asyncio.run(adapted.close())


def test_128_in_flight_on_racing_pairs_accept_each_once(dynalite: LocalServer) -> None:
    pairs = [(str(uuid.uuid4()), f"fp-{i}") for i in range(64)]

    async def race() -> list[list[bool]]:
        async with await AsyncDynamoDbManifest.open(
            options(dynalite.endpoint), unique_table(), concurrency=128, create=True
        ) as manifest:
            calls = [
                manifest.put_many([(*p, ETL + timedelta(seconds=n)) for p in pairs], concurrency=128) for n in range(4)
            ]
            return list(await asyncio.gather(*calls))

    answers = asyncio.run(race())
    assert [sum(a[i] for a in answers) for i in range(len(pairs))] == [1] * len(pairs)


def test_sync_put_many_with_128_threads_accepts_each_once(dynalite: LocalServer) -> None:
    table = unique_table()
    manifest = manifest_from_url(f"dynamodb://{table}?region=us-east-1&endpoint={dynalite.endpoint}&create=true")
    pairs = [(str(uuid.uuid4()), f"fp-{i}") for i in range(200)]
    first = manifest.put_many([(*p, ETL) for p in pairs], concurrency=128)  # type: ignore[call-arg]
    mixed = [(*p, ETL if i % 2 else ETL + timedelta(days=1)) for i, p in enumerate(pairs)]
    again = manifest.put_many(mixed, concurrency=128)  # type: ignore[call-arg]
    assert first == [True] * 200
    assert again == [i % 2 == 1 for i in range(200)]
    manifest.close()


@pytest.mark.usefixtures("sdk_pauses_cut")
@pytest.mark.parametrize("own_client", [False, True], ids=["opened", "own-aioboto3-client"])
def test_throttling_mid_batch_is_retried_without_reordering(dynalite: LocalServer, own_client: bool) -> None:
    table = unique_table()
    known = [(str(uuid.uuid4()), "fp") for _ in range(40)]
    manifest_from_url(f"dynamodb://{table}?region=us-east-1&endpoint={dynalite.endpoint}&create=true").put_many(
        [(*p, ETL) for p in known]
    )
    fresh = [(str(uuid.uuid4()), "fp") for _ in range(40)]
    items = [(*p, ETL + timedelta(days=1)) for pair in zip(known, fresh, strict=True) for p in pair]
    expected = [False, True] * 40

    async def run(proxy: FaultProxy) -> list[bool]:
        if not own_client:
            manifest = await AsyncDynamoDbManifest.open(options(proxy.endpoint), table, concurrency=32)
            async with manifest:
                return await manifest.put_many(items)
        import aioboto3

        async with aioboto3.Session().client("dynamodb", **options(proxy.endpoint).client_kwargs()) as client:
            return await AsyncDynamoDbManifest(client, table, concurrency=32).put_many(items)

    with FaultProxy(dynalite.endpoint, throttle_rate=0.3, seed=3) as proxy:
        assert asyncio.run(run(proxy)) == expected
        assert proxy.throttled >= 10


def test_adapter_keeps_the_loop_free(tmp_path: Path) -> None:
    items = [(str(uuid.uuid4()), "fp", ETL) for _ in range(200_000)]

    async def main() -> tuple[int, float]:
        manifest = await async_manifest_from_url(f"sqlite://{tmp_path}/m.db")
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)  # the tick: counts how often the loop was free

        task = asyncio.create_task(ticker())
        started = time.monotonic()
        assert await manifest.put_many(items) == [True] * len(items)
        elapsed = time.monotonic() - started
        done.set()
        await task
        await manifest.close()
        return ticks, elapsed

    ticks, elapsed = asyncio.run(main())
    assert elapsed > 0.2, "the batch is long enough to see the loop"
    assert ticks >= 10, f"{ticks} ticks in {elapsed:.2f} s: the loop was blocked (a blocked loop ticks once or twice)"


def test_the_run_ledger_awaited_directly(dynalite: LocalServer) -> None:
    """The async twin of the ledger's decisions (start, clean refused while running, finish, clean)."""
    from events_manifest import ManifestConfigError, RunConflictError

    async def scenario() -> None:
        async with await AsyncDynamoDbManifest.open(options(dynalite.endpoint), unique_table(), create=True) as m:
            first = await m.start_run("a", ETL)
            second = await m.start_run("b", ETL)
            assert (first.etl_time, second.etl_time) == (ETL, ETL + timedelta(seconds=1)), "an etl time each"
            assert await m.put_many([("c6ef3124-b53a-4b13-a233-0088f79dcbcb", "FP", second.etl_time)]) == [True]
            with pytest.raises(RunConflictError, match="is still running"):
                await m.clean(second.etl_time)
            with pytest.raises(ManifestConfigError, match="no run with etl time"):
                await m.clean(ETL + timedelta(hours=1))
            await m.finish_run(second)
            assert await m.clean(second.etl_time) == 1
            assert [run.item for run in await m.runs()] == ["a"]
            assert await m.lookup("c6ef3124-b53a-4b13-a233-0088f79dcbcb", "FP") is None

    asyncio.run(scenario())
