"""Manifest throughput, measured side by side in one run (run on demand, not in the test suite).

    python benchmarks/manifest_throughput.py [--delay-ms 5] [--events 2000]

Sections:
1. The reference pattern (one blocking boto3 `put` per event) against `put_many` at concurrency
   1, 8, 32, 128 (sync threads and asyncio), on dynalite directly and behind a loopback relay (a
   process of its own) that holds each answer for a fixed delay (a same-region round trip).
2. Client CPU per conditional put: the manifest (through its boto3 client) against a plain boto3
   `put_item` loop, for the record.
3. In-memory and SQLite `put_many` rates.
The last line gives the headline ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")

from events_manifest import ClientOptions, DynamoDbManifest, InMemoryManifest, SqliteManifest, create_table  # noqa: E402
from events_manifest._backends.dynamodb import make_client  # noqa: E402
from events_manifest._backends.dynamodb.requests import put_request  # noqa: E402
from events_manifest.aio import AsyncDynamoDbManifest  # noqa: E402
from events_manifest.testing import start_dynalite  # noqa: E402

ETL = datetime(2026, 11, 1, 6, 0)
CONCURRENCY = (1, 8, 32, 128)


def items(n: int) -> list[tuple[str, str, datetime]]:
    return [(str(uuid.uuid4()), uuid.uuid4().hex.upper(), ETL) for _ in range(n)]


def _put_chunks(manifest: SqliteManifest, chunks: list[list[Any]]) -> None:
    for chunk in chunks:
        manifest.put_many(chunk)


def rate(n: int, run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return n / (time.perf_counter() - started)


def options(endpoint: str, pool: int = 128) -> ClientOptions:
    return ClientOptions(region="us-east-1", endpoint_url=endpoint, max_pool_connections=pool)


def throughput(endpoint: str, table: str, events: int, sequential_events: int) -> dict[str, float]:
    results: dict[str, float] = {}
    reference = DynamoDbManifest(make_client(options(endpoint, 10)), table)
    batch = items(sequential_events)
    results["sequential put (boto3)"] = rate(len(batch), lambda: [reference.put(*item) for item in batch])
    manifest = DynamoDbManifest.from_options(options(endpoint), table, concurrency=128)
    for c in CONCURRENCY:
        batch = items(events)
        results[f"put_many threads c={c}"] = rate(
            len(batch), functools.partial(manifest.put_many, batch, concurrency=c)
        )

    async def run_async() -> None:
        manifest = await AsyncDynamoDbManifest.open(options(endpoint), table, concurrency=128)
        async with manifest:
            for c in CONCURRENCY:
                batch = items(events)
                started = time.perf_counter()
                await manifest.put_many(batch, concurrency=c)
                results[f"put_many asyncio c={c}"] = len(batch) / (time.perf_counter() - started)

    asyncio.run(run_async())
    manifest.close()
    return results


def process_cpu(pid: int) -> float:
    """CPU seconds a process has used (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_per_put(endpoint: str, table: str, pid: int, n: int) -> float:
    """Server CPU microseconds per conditional put, at concurrency 32."""
    manifest = DynamoDbManifest.from_options(options(endpoint), table, concurrency=32)
    batch = items(n)
    before = process_cpu(pid)
    manifest.put_many(batch)
    used = process_cpu(pid) - before
    manifest.close()
    return used / n * 1e6


def cpu_per_put(endpoint: str, table: str, n: int, rounds: int = 4) -> tuple[float, float]:
    """Client CPU microseconds per conditional put, one request at a time: the manifest and plain
    boto3 `put_item` on the same client settings, in alternating rounds (median of each)."""
    client = make_client(options(endpoint, 10))
    manifest = DynamoDbManifest.from_options(options(endpoint), table, concurrency=1)

    def plain() -> None:
        for r in [put_request(table, str(uuid.uuid4()), "FP", 1000, 2000) for _ in range(n)]:
            client.put_item(**r)

    def ours() -> None:
        for item in items(n):
            manifest.put(*item)

    measured: dict[str, list[float]] = {"manifest": [], "boto3": []}
    for _ in range(rounds):
        for name, run in (("manifest", ours), ("boto3", plain)):
            started = time.process_time()
            run()
            measured[name].append((time.process_time() - started) / n * 1e6)
    manifest.close()
    client.close()
    return statistics.median(measured["manifest"]), statistics.median(measured["boto3"])


def embedded_rates() -> dict[str, float]:
    memory_items = items(1_000_000)
    results = {"in-memory put_many": rate(len(memory_items), lambda: InMemoryManifest().put_many(memory_items))}
    sqlite_items = items(200_000)
    chunks = [sqlite_items[i : i + 10_000] for i in range(0, len(sqlite_items), 10_000)]
    for name, durable in (("SQLite put_many (10k a call)", False), ("SQLite durable=True", True)):
        with tempfile.TemporaryDirectory() as folder:
            manifest = SqliteManifest(Path(folder) / "bench.db", durable=durable)
            results[name] = rate(len(sqlite_items), functools.partial(_put_chunks, manifest, chunks))
            manifest.close()
    return results


@contextlib.contextmanager
def delay_proxy(upstream: str, delay: float) -> Iterator[str]:
    """A network `delay` seconds away: a TCP relay, in a process of its own (its work takes neither
    the client's GIL nor much CPU), that holds each answer `delay` before passing it on."""
    command = [sys.executable, __file__, "--relay", upstream, "--delay-ms", str(delay * 1000)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stdin is not None
        try:
            yield process.stdout.readline().strip()
        finally:
            process.stdin.close()
            process.wait(timeout=30)


async def relay(upstream: str, delay: float) -> None:
    """Serve the relay on a free loopback port (printed as an endpoint) until stdin closes."""
    host, port = upstream.removeprefix("http://").rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hold: float) -> None:
        loop = asyncio.get_running_loop()
        pending: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await pending.get()
                if not data:
                    writer.close()
                    return
                await asyncio.sleep(max(0.0, due - loop.time()))
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(send())
        while data := await reader.read(65536):
            pending.put_nowait((loop.time() + hold, data))
        pending.put_nowait((0.0, b""))
        await sender

    async def connection(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(
            pipe(client_reader, server_writer, 0.0), pipe(server_reader, client_writer, delay), return_exceptions=True
        )

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-ms", type=float, default=5.0, help="delay the proxy adds per request")
    parser.add_argument("--events", type=int, default=2000, help="events per put_many measurement")
    parser.add_argument("--sequential-events", type=int, default=300)
    parser.add_argument("--cpu-events", type=int, default=500, help="puts per round of the CPU measurement")
    parser.add_argument("--embedded-only", action="store_true", help="only the in-memory and SQLite rates")
    parser.add_argument("--relay", metavar="UPSTREAM", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.relay:
        asyncio.run(relay(args.relay, args.delay_ms / 1000))
        return 0
    if args.embedded_only:
        for name, value in embedded_rates().items():
            print(f"{'embedded':<24}{name:<34}{value:>12,.0f}")
        return 0
    rows: list[tuple[str, str, float]] = []
    with start_dynalite(ROOT) as server:
        table = f"bench-{uuid.uuid4().hex[:8]}"
        create_table(make_client(options(server.endpoint, 10)), table)
        for name, value in throughput(server.endpoint, table, args.events, args.sequential_events).items():
            rows.append(("dynalite direct", name, value))
        with delay_proxy(server.endpoint, args.delay_ms / 1000) as proxy_endpoint:
            for name, value in throughput(proxy_endpoint, table, args.events, args.sequential_events).items():
                rows.append((f"+{args.delay_ms:g} ms per request", name, value))
        manifest_cpu, boto3_cpu = cpu_per_put(server.endpoint, table, args.cpu_events)
        server_cpu = server_cpu_per_put(server.endpoint, table, server.process.pid, args.events)
    embedded = embedded_rates()

    print(f"{'setting':<24}{'pattern':<34}{'puts/s':>12}")
    for setting, name, value in rows:
        print(f"{setting:<24}{name:<34}{value:>12,.0f}")
    for name, value in embedded.items():
        print(f"{'embedded':<24}{name:<34}{value:>12,.0f}")
    print(f"{'client CPU per put':<24}{'the manifest (boto3)':<34}{manifest_cpu:>10,.0f} us")
    print(f"{'client CPU per put':<24}{'plain boto3 put_item':<34}{boto3_cpu:>10,.0f} us")
    print(f"{'server CPU per put':<24}{'dynalite (node), c=32':<34}{server_cpu:>10,.0f} us")
    delayed = {name: value for setting, name, value in rows if setting.startswith("+")}
    best = max((v, n) for n, v in delayed.items() if n.startswith("put_many"))
    sequential = delayed["sequential put (boto3)"]
    threads32, async32 = delayed["put_many threads c=32"], delayed["put_many asyncio c=32"]
    print(
        f"headline: at {args.delay_ms:g} ms, put_many c=32 = {threads32 / sequential:.1f}x (threads) and "
        f"{async32 / sequential:.1f}x (asyncio) the sequential pattern (best: {best[1]} {best[0] / sequential:.1f}x); "
        f"client CPU per put = {manifest_cpu / boto3_cpu:.2f}x plain boto3; "
        f"SQLite {embedded['SQLite put_many (10k a call)']:,.0f}/s; in-memory {embedded['in-memory put_many']:,.0f}/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
