"""The Kinesis stream reader Spark calls (`spark_integration._stream.kinesis`), called as Spark calls it,
against moto's server: one partition a shard that moved, each read by a pickled copy of the reader
(as an executor gets it), and the start taken from Spark's calls where Spark 4.0 and 4.1 do not give
it. The stream transformer's run on it is in stream/test_windows.py."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from events_manifest._transformer.stream.kinesis_input import KinesisInput
from events_manifest.testing import LocalServer
from tests.kinesis_helpers import ahead, kinesis_stream, put

pytestmark = pytest.mark.every_line

pytest.importorskip("pyspark.sql.datasource", reason="Spark 3.5 has no Python stream source")


@pytest.fixture
def stream(moto_server: LocalServer) -> Iterator[tuple[Any, KinesisInput]]:
    with kinesis_stream(moto_server.endpoint, shards=3, max_records=4) as made:
        yield made


def read(reader: Any, start: dict[str, Any], end: dict[str, Any]) -> list[bytes]:
    """A micro-batch as Spark reads it: the driver plans, each partition read by a copy of the reader."""
    parts = reader.partitions(start, end)
    assert len({part.value for part in parts}) == len(parts), "one partition a shard"
    copy = pickle.loads(pickle.dumps(reader))
    return [record for part in pickle.loads(pickle.dumps(parts)) for (record,) in copy.read(part)]


def test_a_partition_a_shard_read_by_a_copy_of_the_reader(stream: tuple[Any, KinesisInput]) -> None:
    from spark_integration._stream.kinesis import KinesisStreamReader

    client, source = stream
    lines = [f"line {n}" for n in range(30)]
    put(client, source, lines)
    reader = KinesisStreamReader(source)
    start = reader.initialOffset()
    assert reader.initialOffset() == start, "pinned once"
    end = reader.latestOffset(start, None)  # Spark 4.2 and newer give the start
    assert len(reader.partitions(start, end)) == 3, "every shard holds lines: three tasks"
    first = read(reader, start, end)
    rest: list[bytes] = []
    for trigger in range(1, 50):
        if len(first) + len(rest) >= len(lines):
            break
        ahead(reader.shards, trigger / 10)
        start, end = end, reader.latestOffset()  # 4.0 and 4.1 give none: the reader's last end
        rest += read(reader, start, end)
    assert sorted(first + rest) == sorted(line.encode() for line in lines)
    assert reader.partitions(end, end) == [], "no shard moved: no task"


@pytest.mark.parametrize("call", ["partitions", "commit"])
def test_a_restarted_reader_goes_on_from_what_spark_gives_it(stream: tuple[Any, KinesisInput], call: str) -> None:
    """After a restart Spark plans the last batch of its log again or commits its end before it asks
    4.0's `latestOffset()` (as Spark's own wrapper of a simple reader expects): the reader goes on
    from there, not from the initial offset."""
    from spark_integration._stream.kinesis import KinesisStreamReader

    client, source = stream
    put(client, source, ["before"])
    first = KinesisStreamReader(source)
    start = first.initialOffset()
    end = first.latestOffset()
    assert read(first, start, end) == [b"before"]
    put(client, source, ["after"])
    again = KinesisStreamReader(source)
    if call == "partitions":
        assert read(again, start, end) == [b"before"], "the batch replayed: the same"
    else:
        again.commit(end)
    later: list[bytes] = []
    for trigger in range(1, 50):
        if later:
            break
        ahead(again.shards, trigger / 10)
        later = read(again, end, again.latestOffset())
    assert later == [b"after"]


@pytest.mark.parametrize("change", ["split", "merge"])
def test_a_shard_split_or_merged_while_the_stream_runs_is_followed_into_its_children(
    stream: tuple[Any, KinesisInput], change: str
) -> None:
    """A split or a merge between two micro-batches: the children get partitions of their own once
    their parents are done, every record once. (moto moves a split shard's records into its children
    and copies merged shards' records into the child, where Kinesis keeps them in the closed parents:
    the parents here hold none, so that nothing is read twice.)"""
    from spark_integration._stream.kinesis import KinesisStreamReader

    client, source = stream
    shards = client.list_shards(StreamName=source.stream)["Shards"]
    ranges = {shard["ShardId"]: int(shard["HashKeyRange"]["StartingHashKey"]) for shard in shards}
    [first, second, third] = sorted(ranges)

    def put_at(hash_key: int, lines: list[str]) -> None:
        for line in lines:
            client.put_record(
                StreamName=source.stream, Data=line.encode(), PartitionKey=line, ExplicitHashKey=str(hash_key)
            )

    put_at(ranges[first], ["a 1", "a 2"])
    reader = KinesisStreamReader(source)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    seen = read(reader, start, end)
    if change == "split":
        parents, middle = [second], ranges[second] + 2**100
        client.split_shard(StreamName=source.stream, ShardToSplit=second, NewStartingHashKey=str(middle))
    else:
        parents, middle = [second, third], ranges[third]
        client.merge_shards(StreamName=source.stream, ShardToMerge=second, AdjacentShardToMerge=third)
    put_at(ranges[second], ["child 1", "child 2"])
    put_at(middle + 1, ["child 3"])
    put_at(ranges[first], ["a 3"])
    moved: list[tuple[set[str], bool]] = []
    for trigger in range(1, 50):
        if len(seen) >= 6:
            break
        ahead(reader.shards, trigger / 10)
        start, end = end, reader.latestOffset(end, None)
        done = all(start["shards"][parent]["done"] for parent in parents)
        moved.append(({part.value for part in reader.partitions(start, end)}, done))
        seen += read(reader, start, end)
    assert sorted(seen) == sorted(line.encode() for line in ["a 1", "a 2", "a 3", "child 1", "child 2", "child 3"])
    children = set(end["shards"]) - set(ranges)
    assert len(children) == {"split": 2, "merge": 1}[change]
    assert all(end["shards"][parent]["done"] for parent in parents)
    assert all(done for shards, done in moved if shards & children), "a child read once its parents are done"
