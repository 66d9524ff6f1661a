"""The Kinesis input's reads, against moto's server: every shard read from its offsets, a batch
read again the same (a replay), `LATEST` pinned, records the KPL aggregated split, a child shard read
after its parents, throttling and expired iterators survived with nothing lost or doubled, a missing
stream and a range its shard no longer leads to in one line each."""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from aws_kinesis_agg import DIGEST_SIZE, MAGIC
from aws_kinesis_agg.aggregator import RecordAggregator
from aws_kinesis_agg.deaggregator import messages_pb2

from events_manifest._jobs.storage import LocalStorage
from events_manifest._transformer.stream.kinesis_input import (
    KinesisInput,
    KinesisInputError,
    ShardRange,
    ShardReader,
    pinned,
)
from events_manifest.testing import FaultProxy, LocalServer
from events_manifest.testing._proxy import EXPIRED_ITERATOR, THROTTLED
from tests.kinesis_helpers import a_pace_on, ahead, kinesis_stream, put


@pytest.fixture
def stream(moto_server: LocalServer) -> Iterator[tuple[Any, KinesisInput]]:
    with kinesis_stream(moto_server.endpoint, shards=2, max_records=7) as made:
        yield made


def drain(reader: ShardReader, offsets: dict[str, Any], count: int) -> tuple[list[bytes], dict[str, Any]]:
    """The records after `offsets`, micro-batch by micro-batch as Spark would ask, a pace apart on
    the reader's clock (moved on, not waited for: `PACE_MS`), until `count` are read (or a hundred
    triggers: then some are missing)."""
    records: list[bytes] = []
    for trigger in range(100):
        if len(records) >= count:
            break
        ahead(reader, trigger * reader.pace_ms / 1000)
        batch, offsets = reader.read(offsets)
        records += batch
    return records, offsets


def test_every_shard_is_read_once_and_a_replay_reads_the_same(stream: tuple[Any, KinesisInput]) -> None:
    client, source = stream
    lines = [f"line {n}" for n in range(100)]
    put(client, source, lines)
    reader = ShardReader(source)
    start = reader.initial()
    first, after = reader.read(start)
    assert 0 < len(first) < 100, "a shard read by the driver to a record at most CALLS_PER_TRIGGER reads on"
    assert ShardReader(source).between(start, after) == first, "a batch replayed after a crash: the same records"
    rest, end = drain(reader, after, 100 - len(first))
    assert sorted(record.decode() for record in first + rest) == sorted(lines)
    put(client, source, ["line 100"])
    assert reader.read(end)[0] == [], "within a pace of the last cut: the shards left where they were"
    a_pace_on(reader)
    assert reader.read(end)[0] == [b"line 100"]


def test_a_busy_shard_is_cut_at_a_recent_record_without_the_driver_reading_the_batch(
    stream: tuple[Any, KinesisInput], moto_server: LocalServer
) -> None:
    """Records that arrived before the margin end the batch at the first one after it (the driver
    reads one record a shard: no GetRecords page of the batch); a backlog is cut a span at a time,
    and in halves when nothing arrives any more."""
    client, source = stream
    groups = [[f"{group} {n}" for n in range(6)] for group in ("old", "older", "recent")]
    for group in groups[:2]:
        put(client, source, group)
        time.sleep(2.2)  # Kinesis takes a time to the second: a cut falls between groups this far apart
    put(client, source, groups[2])
    put_end = time.time()
    with FaultProxy(moto_server.endpoint, throttle_rate=0.0, operations=frozenset({"GetRecords"})) as proxy:
        through = KinesisInput(source.stream, source.region, proxy.endpoint, position="TRIM_HORIZON", max_records=7)
        spans = ShardReader(through, span_ms=1200)
        start = spans.initial()
        cut = spans.latest(start)
        assert proxy.counts["GetRecords"] == 2 * 2, "a shard: its first record, and one at the cut"
    assert all(state["from"] and not state["after"] for state in cut["shards"].values()), cut
    assert sorted(spans.between(start, cut)) == sorted(line.encode() for line in groups[0]), "one span"
    recent = ShardReader(source, margin_ms=1000, pace_ms=0)  # its clock set below, the pace tested above
    middle = recent.latest(cut)
    assert sorted(recent.between(cut, middle)) == sorted(line.encode() for line in groups[1])
    # a trigger whose margin ends at the second after the last record's (Kinesis cuts to the second): all
    # arrived before it, within two seconds of it, so read to the last (at a trigger sooner, those of the
    # last record's second would wait for the next)
    recent.clock = lambda: math.floor(put_end) + 1 + recent.margin_ms / 1000
    assert sorted(recent.read(middle)[0]) == sorted(line.encode() for line in groups[2]), "the rest: read to the end"
    with FaultProxy(moto_server.endpoint, throttle_rate=0.0, operations=frozenset({"GetRecords"})) as proxy:
        through = KinesisInput(source.stream, source.region, proxy.endpoint, position="TRIM_HORIZON", max_records=7)
        late = ShardReader(through, clock=lambda: time.time() + 2)  # two seconds on, nothing arrived: halves
        start = late.initial()
        half = late.latest(start)
        assert proxy.counts["GetRecords"] == 2 * 3, "a shard: its first record, none at the cut, one at the middle"
    first = late.between(start, half)
    assert set(groups[0]) <= {line.decode() for line in first} and not set(groups[2]) & {r.decode() for r in first}
    rest, _ = drain(late, half, 18 - len(first))
    assert sorted(first + rest) == sorted(line.encode() for group in groups for line in group)


def test_a_shard_is_read_within_kinesis_s_limits_whatever_the_trigger(moto_server: LocalServer) -> None:
    """Triggers as fast as the calls allow on a busy shard, for four seconds: the cuts and the
    tasks' reads make at most five GetRecords and five GetShardIterator calls a second on it
    (Kinesis's limits), and every record is read once."""
    with kinesis_stream(moto_server.endpoint, shards=1, max_records=10000) as (client, source):
        with FaultProxy(moto_server.endpoint, throttle_rate=0.0, operations=frozenset()) as proxy:
            reader = ShardReader(attrs.evolve(source, endpoint=proxy.endpoint))
            offsets, records, lines, began, triggers = reader.initial(), [], [], time.time(), 0
            while time.time() - began < 4:
                triggers += 1
                lines += [f"{triggers} {n}" for n in range(5)]
                put(client, source, lines[-5:])
                batch, offsets = reader.read(offsets)
                records += batch
            calls = dict(proxy.counts)
        assert triggers > 20 and calls["GetRecords"] <= 5 * 4 and calls["GetShardIterator"] <= 5 * 4, calls
        rest, _ = drain(ShardReader(source), offsets, len(lines) - len(records))
    assert sorted(records + rest) == sorted(line.encode() for line in lines)


def test_offsets_an_earlier_version_wrote_are_read_on(stream: tuple[Any, KinesisInput]) -> None:
    """A checkpoint of the reader before the cut (each shard `after`, `at`, `done`): its last batch
    replayed, and read on from it."""
    client, source = stream
    put(client, source, [f"line {n}" for n in range(6)])
    reader = ShardReader(source)
    shards = sorted(reader.initial()["shards"])
    old = {"shards": {shard: {"after": None, "at": None, "done": False} for shard in shards}}
    replayed = reader.between(old, {"shards": {shards[0]: {"after": "2", "at": None, "done": False}}})
    assert len(replayed) == 2, "the first two records of the first shard"
    records, _ = drain(reader, old, 6)
    assert sorted(records) == sorted(f"line {n}".encode() for n in range(6))


def test_latest_reads_what_arrives_after_the_first_start_and_is_pinned_in_the_checkpoint(
    stream: tuple[Any, KinesisInput], tmp_path: Path
) -> None:
    """`LATEST` is the time of the first start on a checkpoint, kept in it: after a crash Spark asks a
    new reader for the first micro-batch's start again, and the replay reads the same records."""
    client, source = stream
    put(client, source, ["before"])
    time.sleep(0.2)
    latest = KinesisInput(source.stream, source.region, source.endpoint, position="LATEST")
    checkpoint, storage = str(tmp_path), LocalStorage()
    first = ShardReader(pinned(latest, storage, checkpoint))
    start = first.initial()
    time.sleep(0.2)
    put(client, source, ["after 1", "after 2"])
    records, end = drain(first, start, 2)
    assert sorted(records) == [b"after 1", b"after 2"]
    restarted = ShardReader(pinned(latest, storage, checkpoint, clock=lambda: time.time() + 60))  # a minute on
    assert restarted.initial() == start
    assert sorted(restarted.between(restarted.initial(), end)) == [b"after 1", b"after 2"], "the replay: the same"
    assert ShardReader(latest).initial() != start, "without the checkpoint's pin, a later time"


def test_latest_with_max_records_1_gets_past_a_busy_second_and_reads_nothing_before_its_pin(
    stream: tuple[Any, KinesisInput],
) -> None:
    """`LATEST` pinned within a second that already holds records (a busy shard), with
    `retrievalMode.maxRecords = 1`: the driver gets past them (a read from a time skips that second
    in one call), and the micro-batch holds only what arrived at or after the pin, first or not."""
    client, source = stream
    one = KinesisInput(source.stream, source.region, source.endpoint, position="LATEST", max_records=1)
    time.sleep(1.02 - time.time() % 1)  # the start of a second: the records before the pin share it
    before = [f"before {n}" for n in range(12)]
    for line in before:  # one shard: the pin's second holds more records than the driver's calls a trigger
        client.put_record(StreamName=source.stream, Data=line.encode(), PartitionKey="busy")
    latest = ShardReader(one)
    time.sleep(0.05)  # apart from the pin by more than the millisecond the arrival times are given to
    start = latest.initial()
    time.sleep(0.05)
    assert int(start["shards"][next(iter(start["shards"]))]["at"]) // 1000 == int(time.time()), "still that second"
    for line in ("after 1", "after 2"):
        client.put_record(StreamName=source.stream, Data=line.encode(), PartitionKey="busy")
    records, end = drain(latest, start, 2)
    assert records == [b"after 1", b"after 2"]
    assert latest.between(start, end) == records, "a replay of the batch: the same"


def test_a_kpl_user_record_that_cannot_be_read_is_a_line_that_says_so_and_none_is_dropped(
    stream: tuple[Any, KinesisInput],
) -> None:
    """An aggregate whose second user record names a partition key its table lacks (the checksum
    right): the others read, that one a line saying so (a bad row downstream); an aggregate whose
    checksum fails is one plain record, as KCL takes it."""
    client, source = stream
    aggregator = RecordAggregator()
    for n in range(4):
        aggregator.add_user_record(f"key-{n}", f"user record {n}".encode())
    key, _, data = aggregator.clear_and_get().get_contents()
    aggregate = messages_pb2.AggregatedRecord.FromString(data[len(MAGIC) : -DIGEST_SIZE])
    aggregate.records[1].partition_key_index = 99
    body = aggregate.SerializeToString()
    client.put_record(StreamName=source.stream, Data=MAGIC + body + hashlib.md5(body).digest(), PartitionKey=key)
    broken = MAGIC + body + b"\0" * DIGEST_SIZE
    client.put_record(StreamName=source.stream, Data=broken, PartitionKey=key)
    records, _ = drain(ShardReader(source), ShardReader(source).initial(), 5)
    said = [record for record in records if record.startswith(b"user record 1 of the KPL record ")]
    assert len(said) == 1 and said[0].endswith(b"cannot be read: its key index 99 is not in the record's table of 4")
    assert sorted(set(records) - set(said)) == sorted([broken, b"user record 0", b"user record 2", b"user record 3"])


def test_records_the_kpl_aggregated_are_split_and_each_is_one_event_but_for_its_last_line_end(
    stream: tuple[Any, KinesisInput],
) -> None:
    """User records, plain or aggregated, whole whatever line ends they hold, but for the one a
    line-oriented producer adds at the end (LF, CRLF or CR), which a file's line does not keep."""
    client, source = stream
    aggregator = RecordAggregator()
    for n in range(5):
        aggregator.add_user_record(f"key-{n}", f"user record {n}{['', chr(10)][n % 2]}".encode())
    key, _, data = aggregator.clear_and_get().get_contents()
    client.put_record(StreamName=source.stream, Data=data, PartitionKey=key)
    put(client, source, ["plain\r\n", "a\rlone CR\r", "two\nline ends\n\n", "\n"])
    records, _ = drain(ShardReader(source), ShardReader(source).initial(), 9)
    users = [f"user record {n}".encode() for n in range(5)]
    assert sorted(records) == sorted([b"plain", b"a\rlone CR", b"two\nline ends\n", b"", *users])


def test_a_split_shard_ends_and_its_children_are_read_from_their_start(stream: tuple[Any, KinesisInput]) -> None:
    """A split during the run: the closed parent is read to its end, its two children are found and
    read from their start, each record once. (moto puts a split shard's records again by their hash,
    where Kinesis leaves them in the closed parent; the merge test below shows the order.)"""
    client, source = stream
    put(client, source, [f"line {n}" for n in range(10)])
    reader = ShardReader(source)
    start = reader.initial()
    [parent, _] = sorted(start["shards"])
    shard = client.describe_stream(StreamName=source.stream)["StreamDescription"]["Shards"][0]
    middle = (int(shard["HashKeyRange"]["StartingHashKey"]) + int(shard["HashKeyRange"]["EndingHashKey"])) // 2
    client.split_shard(StreamName=source.stream, ShardToSplit=parent, NewStartingHashKey=str(middle))
    first, after = reader.read(start)
    assert after["shards"][parent]["done"], "the closed parent is read to its end"
    children = [shard for shard in after["shards"] if shard not in start["shards"]]
    assert len(children) == 2 and all(after["shards"][child]["after"] is None for child in children), "not yet"
    rest, _ = drain(reader, after, 10 - len(first))
    assert sorted(first + rest) == sorted(f"line {n}".encode() for n in range(10))


def test_a_merged_shard_is_read_after_both_its_parents_end(stream: tuple[Any, KinesisInput]) -> None:
    """moto copies the parents' records into the merged shard (Kinesis does not): the child holds
    records from the start, and is read only once both parents are done."""
    client, source = stream
    put(client, source, [f"line {n}" for n in range(10)])
    reader = ShardReader(source)
    start = reader.initial()
    first, second = sorted(start["shards"])
    client.merge_shards(StreamName=source.stream, ShardToMerge=first, AdjacentShardToMerge=second)
    read, after = reader.read(start)
    assert after["shards"][first]["done"] and after["shards"][second]["done"]
    assert sorted(read) == sorted(f"line {n}".encode() for n in range(10)), "the parents' records, once"
    [child] = [shard for shard in after["shards"] if shard not in start["shards"]]
    assert after["shards"][child]["after"] is None, "read once both parents are done: at the next trigger"


@pytest.mark.parametrize(
    ("fault", "rate", "seed", "limit"),
    [(THROTTLED, 0.3, 3, 4), (EXPIRED_ITERATOR, 0.4, 5, 3)],
    ids=["throttled", "expired iterator"],
)
@pytest.mark.usefixtures("sdk_pauses_cut")
def test_a_refused_read_loses_nothing_and_doubles_nothing(
    stream: tuple[Any, KinesisInput], moto_server: LocalServer, fault: str, rate: float, seed: int, limit: int
) -> None:
    """Throttling waited out; an expired iterator taken again after the last record read: in the
    reads and in the replay."""
    client, source = stream
    lines = [f"line {n}" for n in range(20)]
    put(client, source, lines)
    with FaultProxy(
        moto_server.endpoint, throttle_rate=rate, operations=frozenset({"GetRecords"}), seed=seed, fault=fault
    ) as proxy:
        through = KinesisInput(source.stream, source.region, proxy.endpoint, position="TRIM_HORIZON", max_records=limit)
        pauses: list[float] = []
        reader = ShardReader(through, sleep=pauses.append)  # the pauses counted, not waited
        start = reader.initial()
        records, end = drain(reader, start, len(lines))
        again = reader.between(start, end)
    assert proxy.throttled > 3
    assert bool(pauses) == (fault == THROTTLED), "throttling waited out; an expired iterator taken again at once"
    assert sorted(records) == sorted(again) == sorted(line.encode() for line in lines)
    assert len(records) == len(lines), "nothing read twice"


@pytest.mark.usefixtures("sdk_pauses_cut")
def test_a_refusal_after_an_answer_is_waited_out_from_the_first_pause(moto_server: LocalServer) -> None:
    """Refusals in a row wait 0.2, 0.4, 0.8 s and on; once the shard answers, a later refusal
    waits 0.2 s again, not the storm's longest pause: a task reads at full speed once a storm has
    passed, where each refusal after it cost up to 5 s."""
    with kinesis_stream(moto_server.endpoint, shards=1, max_records=1) as (client, source):
        put(client, source, ["first", "second", "third"])
        reader = ShardReader(source)
        ahead(reader, 3)
        start = reader.initial()
        [part] = reader.ranges(start, reader.latest(start))
        with FaultProxy(moto_server.endpoint, throttle_rate=1.0, operations=frozenset({"GetRecords"})) as proxy:
            pauses: list[float] = []

            def pause(seconds: float) -> None:  # the storm passes after three refusals, the later one after one
                pauses.append(seconds)
                if len(pauses) >= 3:
                    proxy.throttle_rate = 0.0

            records = ShardReader(attrs.evolve(source, endpoint=proxy.endpoint), sleep=pause).records(part)
            first = next(records)
            proxy.throttle_rate = 1.0
            read = [first, *records]
    assert read == [b"first", b"second", b"third"]
    assert pauses == [0.2, 0.4, 0.8, 0.2]


@pytest.mark.usefixtures("sdk_pauses_cut")
def test_what_an_available_now_run_has_left_is_said_through_throttling(
    stream: tuple[Any, KinesisInput], moto_server: LocalServer
) -> None:
    """`behind`: records after the offsets that arrived before the run started; none once read to
    them, nor before the records arrived. With half of every call refused (a throttling storm), the
    refusals are waited out, never taken for a stream read to its end."""
    client, source = stream
    before = int(time.time() * 1000) - 1
    put(client, source, [f"line {n}" for n in range(10)])
    started = int(time.time() * 1000) + 1
    calls = frozenset({"ListShards", "GetShardIterator", "GetRecords"})
    with FaultProxy(moto_server.endpoint, throttle_rate=0.5, operations=calls, seed=3) as proxy:
        through = KinesisInput(source.stream, source.region, proxy.endpoint, position="TRIM_HORIZON")
        waits: list[float] = []
        storm = ShardReader(through, sleep=waits.append)  # the pauses counted, not waited
        start = storm.initial()
        assert storm.behind(start, started)
        records, end = drain(ShardReader(source), start, 10)
        assert len(records) == 10 and not storm.behind(end, started)
    assert proxy.throttled > 3 and waits, "refusals waited out"
    assert not ShardReader(source).behind(start, before), "what arrived after the run started is not left"


def test_a_stream_that_does_not_exist_is_one_line(moto_server: LocalServer) -> None:
    reader = ShardReader(KinesisInput("nowhere", "us-east-1", moto_server.endpoint))
    with pytest.raises(KinesisInputError) as caught:
        reader.initial()
    said = str(caught.value)
    assert said == (
        "Kinesis stream nowhere in us-east-1 does not exist (deleted, or never created): create it, or correct "
        "input.streamName and input.region"
    )


def test_a_range_its_shard_no_longer_leads_to_is_one_line_and_a_new_checkpoint_reads_the_stream(
    stream: tuple[Any, KinesisInput], subtests: pytest.Subtests
) -> None:
    """A task's range whose end its shard does not lead to (records trimmed past the stream's
    retention, a checkpoint of another stream, or a defect: a `LATEST` taken anew after a crash made
    a replay start past its end): read past the end's record, or to the shard's latest without
    meeting it, the read stops in one line, where it read an open shard for ever. The advice
    followed, a new checkpoint, reads the stream from `input.position`."""
    client, source = stream
    put(client, source, [f"line {n}" for n in range(10)])
    reader = ShardReader(source)
    start = reader.initial()
    records, end = drain(reader, start, 10)
    shard, state = next((shard, state) for shard, state in sorted(end["shards"].items()) if state["after"])
    [first, second, *_] = client.get_records(
        ShardIterator=client.get_shard_iterator(
            StreamName=source.stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
    )["Records"]
    gone = str(int(first["SequenceNumber"]) - 1)  # before the shard's first record: trimmed
    ranges = {
        "its end's record gone, the records after it there": ShardRange(
            shard, {**state, "after": None}, {**state, "after": gone}
        ),
        "started past its end": ShardRange(shard, state, {**state, "after": first["SequenceNumber"]}),
        "started past its first record not to read": ShardRange(
            shard, state, {**state, "after": None, "from": second["SequenceNumber"]}
        ),
    }
    for name, part in ranges.items():
        with subtests.test(name):
            failures: list[BaseException] = []

            def read(part: ShardRange = part, failures: list[BaseException] = failures) -> None:
                try:
                    list(ShardReader(source).records(part))
                except KinesisInputError as e:
                    failures.append(e)

            reading = threading.Thread(target=read, daemon=True)
            reading.start()
            reading.join(30)
            assert not reading.is_alive(), "read for ever"
            assert [str(failure) for failure in failures] == [
                f"Kinesis stream {source.stream} in us-east-1: shard {shard} no longer holds a micro-batch's records "
                f"up to sequence number {part.end['after'] or part.end['from']}, where Spark's checkpoint ends it "
                "(trimmed past the stream's retention, or a checkpoint of another stream): give this input an "
                "output.path of its own, read from input.position"
            ]
    anew = ShardReader(source)
    again, _ = drain(anew, anew.initial(), 10)
    assert sorted(again) == sorted(records) and len(again) == 10, "a new checkpoint reads the stream from its position"
