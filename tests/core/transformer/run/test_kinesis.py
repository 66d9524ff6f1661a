"""Bad rows to a Kinesis stream, against moto's server: calls within the record and byte limits, a
row over Kinesis's record limit sent as a `size_violation`, a throttled stream waited out (nothing
lost, nothing doubled), and a stream that keeps refusing named after the last retry."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from events_manifest._transformer.config import Backoff, BadSink
from events_manifest._transformer.run.kinesis import KinesisSink, KinesisSinkError, Stream
from events_manifest.testing import FaultProxy, LocalServer


@pytest.fixture
def stream(moto_server: LocalServer) -> Iterator[tuple[Any, str]]:
    client = boto3.client("kinesis", endpoint_url=moto_server.endpoint)
    name = f"bad-rows-{time.time_ns()}"
    client.create_stream(StreamName=name, ShardCount=1)
    yield client, name
    client.delete_stream(StreamName=name)


def records_of(client: Any, name: str) -> list[bytes]:
    shard = client.list_shards(StreamName=name)["Shards"][0]["ShardId"]
    iterator = client.get_shard_iterator(StreamName=name, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    return [record["Data"] for record in client.get_records(ShardIterator=iterator["ShardIterator"])["Records"]]


def sink_to(name: str, proxy: FaultProxy, pauses: list[float], **limits: Any) -> KinesisSink:
    """The sink the transformer makes, its client the job's (no retries of the SDK's own)."""
    sink = BadSink("kinesis", name, "us-east-1", **limits)
    return KinesisSink(sink, Stream(sink, "us-east-1", proxy.endpoint).client(), sleep=pauses.append, now=lambda: 0)


def test_rows_go_in_calls_within_the_record_and_byte_limits(stream: tuple[Any, str], moto_server: LocalServer) -> None:
    client, name = stream
    rows = [json.dumps({"n": n}) for n in range(7)]
    pauses: list[float] = []
    with FaultProxy(moto_server.endpoint) as proxy:
        assert sink_to(name, proxy, pauses, record_limit=3).write(rows) == 7
        assert proxy.requests == 3, "3 + 3 + 1 records"
    with FaultProxy(moto_server.endpoint) as proxy:
        assert sink_to(name, proxy, pauses, byte_limit=40).write(rows[:4]) == 4
        assert proxy.requests == 2, "two records of about 18 bytes with their keys fill 40"
    assert records_of(client, name) == [row.encode() for row in [*rows, *rows[:4]]] and pauses == []


def test_a_row_over_the_record_limit_goes_as_a_size_violation(
    stream: tuple[Any, str], moto_server: LocalServer
) -> None:
    client, name = stream
    with FaultProxy(moto_server.endpoint) as proxy:
        sink_to(name, proxy, [], byte_limit=600).write(["x" * 1000])
    [record] = records_of(client, name)
    violation = json.loads(record)
    assert violation["schema"].startswith("iglu:com.snowplowanalytics.snowplow.badrows/size_violation/")
    assert violation["data"]["failure"]["actualSizeBytes"] == 1000 and len(record) <= 600
    assert violation["data"]["payload"].startswith("xxxx")


def test_a_throttled_stream_is_waited_out_and_loses_nothing(stream: tuple[Any, str], moto_server: LocalServer) -> None:
    client, name = stream
    rows = [json.dumps({"n": n}) for n in range(20)]
    pauses: list[float] = []
    with FaultProxy(moto_server.endpoint, throttle_rate=0.5, operations=frozenset({"PutRecords"}), seed=1) as proxy:
        assert sink_to(name, proxy, pauses, record_limit=4).write(rows) == 20
    assert proxy.throttled > 0 and len(pauses) == proxy.throttled
    assert all(0.1 <= pause <= 1.0 for pause in pauses), "Fibonacci steps from minBackoff to maxBackoff"
    assert sorted(records_of(client, name)) == sorted(row.encode() for row in rows), "each row once"


def test_a_stream_that_keeps_refusing_stops_the_run_after_its_retries(moto_server: LocalServer) -> None:
    pauses: list[float] = []
    with FaultProxy(moto_server.endpoint) as proxy:
        sink = sink_to("no-such-stream", proxy, pauses, backoff=Backoff(0.1, 0.5, 2))
        with pytest.raises(KinesisSinkError) as refused:
            sink.write(["row"])
    assert str(refused.value).startswith("Kinesis stream no-such-stream refused 1 bad rows after 2 retries")
    assert "ResourceNotFoundException" in str(refused.value) and "run the transformer again" in str(refused.value)
    assert len(pauses) == 2 and all(0.1 <= pause <= 0.5 for pause in pauses), "full jitter within the policy"
