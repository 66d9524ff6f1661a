"""A Kinesis stream on the suite's moto server, made and deleted around a test, and lines put in it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3

from events_manifest._transformer.stream.kinesis_input import KinesisInput, ShardReader


@contextmanager
def kinesis_stream(endpoint: str, *, shards: int, max_records: int) -> Iterator[tuple[Any, KinesisInput]]:
    """A new stream of `shards` shards, and the input reading it from `TRIM_HORIZON`."""
    client = boto3.client("kinesis", endpoint_url=endpoint)
    name = f"enriched-{time.time_ns()}"
    client.create_stream(StreamName=name, ShardCount=shards)
    yield client, KinesisInput(name, "us-east-1", endpoint, position="TRIM_HORIZON", max_records=max_records)
    client.delete_stream(StreamName=name)


def put(client: Any, source: KinesisInput, lines: list[str]) -> None:
    """One record a line, spread over the shards by their partition keys."""
    for n, line in enumerate(lines):
        client.put_record(StreamName=source.stream, Data=line.encode(), PartitionKey=f"key-{n}")


def ahead(reader: ShardReader, seconds: float) -> None:
    """Move `reader`'s clock `seconds` past this machine's: a later trigger, not waited for (what it
    reads arrived by the server's clock, which a test cannot move)."""
    reader.clock = lambda: time.time() + seconds


def a_pace_on(reader: ShardReader) -> None:
    """Move `reader`'s clock one pace past where it is: the next trigger that cuts its shards."""
    ahead(reader, reader.clock() - time.time() + reader.pace_ms / 1000)
