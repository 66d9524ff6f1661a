"""The stream transformer where its users run it: enriched files on S3 read by Spark's file source
(the S3A connector on moto's server), or a Kinesis stream (moto's), windows written to S3, the
manifest on DynamoDB (dynalite), the message on SQS (moto). Killed (SIGKILL to the process group,
under spark-submit) at a named step, then started again on its checkpoint: every event ends in
exactly one committed window, as the batch job writes the same events as two runs. Every step is
killed in the suite's own process too (`tests/spark/stream/test_crashes.py`); here a real kill
proves that nothing lives only in the killed process."""

from __future__ import annotations

import gzip
import json
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from events_manifest.snowplow import sample_batches
from events_manifest.testing import LocalServer
from tests.commands import in_process, killed, signalled, told, wait_for
from tests.integration import stream_driver
from tests.integration.conftest import S3, spark_submit, submit_env
from tests.integration.outputs import manifest, queue, reference, s3_run
from tests.transformer_helpers import same

START = 1_794_997_800
"""2026-11-18 10:30:00 UTC, a ten-minute window's start."""
STEPS = {
    "batch-written": 0,  # the first batch's lines staged, the book not told
    "window-committed": 1,  # the first window committed, the second batch not yet in Spark's checkpoint
}
"""The steps killed here, and the micro-batch during which each is reached."""


def put_batch(s3: S3, n: int, key: str) -> None:
    [part] = sorted(list(sample_batches())[n].glob("part-*"))
    s3.client.put_object(Bucket=s3.bucket, Key=key, Body=part.read_bytes())


def stream_config(s3: S3, queue_url: str) -> str:
    return json.dumps(
        {
            "input": {"type": "file", "dir": s3.url("stream")},
            "output": {"path": s3.url("out")},
            "queue": {"type": "sqs", "queueName": queue_url, "region": "us-east-1"},
            "trigger": "1 second",
        }
    )


@pytest.mark.every_line
def test_a_stream_killed_once_its_window_is_committed_restarts_with_nothing_lost_or_doubled(
    runs: Path, s3: S3, s3_server: LocalServer, dynalite: LocalServer, spark: Any
) -> None:
    from spark_integration.stream_transformer import main

    step = "window-committed"

    expected = reference(runs, dynalite)
    sqs, url = queue(s3_server)
    (runs / "stream.hocon").write_text(stream_config(s3, url))
    stream_driver.set_clock(runs / "clock", START)
    put_batch(s3, 0, "stream/a.tsv.gz")
    flags = ["--iglu-config", "iglu.json", "--config", "stream.hocon", "--manifest", manifest(dynalite)]

    def second_window() -> None:
        if STEPS[step] == 1:  # the first batch staged: the clock moves on and the second file arrives
            wait_for(lambda: bool(s3.keys("out/_checkpoint/book/batch-0.staged")), "the first batch staged")
            stream_driver.set_clock(runs / "clock", START + 600)
            put_batch(s3, 1, "stream/b.tsv.gz")

    command = spark_submit(stream_driver.__file__, *flags, "--clock", "clock", server=s3_server)
    killed(command, runs, step, submit_env(AWS_ENDPOINT_URL_SQS=s3_server.endpoint), second_window)
    if STEPS[step] == 0:
        put_batch(s3, 1, "stream/b.tsv.gz")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL_SQS", s3_server.endpoint)
        done = in_process(main, runs, *flags, "--available-now")
    assert done.returncode == 0, told(done.stderr)
    windows = sorted(key.split("/")[1] for key in s3.keys("out/run=") if key.endswith("/shredding_complete.json"))
    assert len(windows) == 2 and windows[0].startswith("run=2026-11-18-10-30-00-"), windows
    for window, run in zip(windows, ("run=1", "run=2"), strict=True):
        found = s3_run(s3, window)
        same(found, expected[run])
        assert found["message"]["data"]["base"] == f"s3://{s3.bucket}/out/{window}/"
        assert not [n for n in found["names"] if n.startswith((".staging", "_claim"))], "nothing left behind"
    runs_left = {key.split("/")[1] for key in s3.keys("out/run=")}
    assert runs_left == set(windows), "no window begun and left uncommitted"
    assert not [k for k in s3.keys("out/") if k.rsplit("/", 1)[-1].startswith(("_claim", "_alive"))]
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    committed = [s3.read(f"out/{w}/shredding_complete.json").decode() for w in windows]
    assert sorted(set(bodies)) == sorted(committed), "each window's message, the text of its commit"


def put_records(kinesis: Any, stream: str, n: int) -> None:
    """Sample batch `n`'s lines, a record each, spread over the stream's shards."""
    [part] = sorted(list(sample_batches())[n].glob("part-*"))
    lines = gzip.decompress(part.read_bytes()).splitlines()
    for at in range(0, len(lines), 500):
        records = [{"Data": line, "PartitionKey": f"{n}-{at + i}"} for i, line in enumerate(lines[at : at + 500])]
        kinesis.put_records(StreamName=stream, Records=records)


def test_a_kinesis_stream_killed_once_a_batch_is_staged_restarts_with_nothing_lost_or_doubled(
    runs: Path, s3: S3, s3_server: LocalServer, dynalite: LocalServer, spark: Any
) -> None:
    """The enriched events in a Kinesis stream of two shards (moto's), killed once the first batch's
    lines are staged: the next start replays that batch from Spark's offsets, the same records, and
    reads on; every record in exactly one window, the windows the batch job's two runs."""
    from spark_integration.stream_transformer import main

    step = "batch-written"

    if spark.version.startswith("3."):
        pytest.skip("the Kinesis input needs Spark 4 (refused on 3.5: tests/spark/stream/test_windows.py)")
    expected = reference(runs, dynalite)
    sqs, url = queue(s3_server)
    kinesis = boto3.client("kinesis", endpoint_url=s3_server.endpoint, region_name="us-east-1")
    stream = f"enriched-{step}-{time.time_ns()}"
    kinesis.create_stream(StreamName=stream, ShardCount=2)
    config = json.loads(stream_config(s3, url))
    config["input"] = {
        "type": "kinesis",
        "streamName": stream,
        "region": "us-east-1",
        "position": "TRIM_HORIZON",
        "customEndpoint": s3_server.endpoint,
    }
    (runs / "stream.hocon").write_text(json.dumps(config))
    stream_driver.set_clock(runs / "clock", START)
    put_records(kinesis, stream, 0)
    flags = ["--iglu-config", "iglu.json", "--config", "stream.hocon", "--manifest", manifest(dynalite)]

    def second_window() -> None:
        if STEPS[step] == 1:
            wait_for(lambda: bool(s3.keys("out/_checkpoint/book/batch-0.staged")), "the first batch staged")
            stream_driver.set_clock(runs / "clock", START + 600)
            put_records(kinesis, stream, 1)

    command = spark_submit(stream_driver.__file__, *flags, "--clock", "clock", server=s3_server)
    killed(command, runs, step, submit_env(AWS_ENDPOINT_URL_SQS=s3_server.endpoint), second_window)
    if STEPS[step] == 0:
        put_records(kinesis, stream, 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL_SQS", s3_server.endpoint)
        done = in_process(main, runs, *flags, "--available-now")  # reads on after the batch it replays
    assert done.returncode == 0, told(done.stderr)
    windows = sorted(key.split("/")[1] for key in s3.keys("out/run=") if key.endswith("/shredding_complete.json"))
    assert len(windows) == 2, (windows, done.stdout)
    for window, run in zip(windows, ("run=1", "run=2"), strict=True):
        same(s3_run(s3, window), expected[run])
    assert {key.split("/")[1] for key in s3.keys("out/run=")} == set(windows)
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    assert sorted(set(bodies)) == sorted(s3.read(f"out/{w}/shredding_complete.json").decode() for w in windows)


def staged_lines(runs: Path) -> int:
    """The records the stream has staged so far, every batch of every window (Parquet, a record a row)."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(part).num_rows for part in runs.glob("out/_checkpoint/lines/*/*/part-*.parquet"))


def test_a_kinesis_stream_split_and_merged_while_the_stream_runs_reads_every_record_once(
    runs: Path, s3_server: LocalServer, spark: Any
) -> None:
    """Three shards, the first batch's lines in the first; while the stream runs, the second shard is
    split and its right child merged with the third, and the second batch's lines go to the new
    shards and the first: every record is staged once, and the window committed by the next start
    holds each once. (The reshaped shards hold no records before, so that moto, which moves a split
    shard's records into its children and copies merged ones, where Kinesis keeps them in the closed
    parents, doubles none.)"""
    from spark_integration.stream_transformer import main

    if spark.version.startswith("3."):
        pytest.skip("the Kinesis input needs Spark 4 (refused on 3.5: tests/spark/stream/test_windows.py)")
    kinesis = boto3.client("kinesis", endpoint_url=s3_server.endpoint, region_name="us-east-1")
    stream = f"enriched-reshard-{time.time_ns()}"
    kinesis.create_stream(StreamName=stream, ShardCount=3)
    shards = kinesis.list_shards(StreamName=stream)["Shards"]
    shards.sort(key=lambda shard: int(shard["HashKeyRange"]["StartingHashKey"]))
    starts = [int(shard["HashKeyRange"]["StartingHashKey"]) for shard in shards]
    batches = [gzip.decompress(sorted(batch.glob("part-*"))[0].read_bytes()).splitlines() for batch in sample_batches()]
    total = len(batches[0]) + len(batches[1])

    def put_at(lines: list[bytes], hash_key: int) -> None:
        for at in range(0, len(lines), 500):
            records = [
                {"Data": line, "PartitionKey": str(at + i), "ExplicitHashKey": str(hash_key)}
                for i, line in enumerate(lines[at : at + 500])
            ]
            kinesis.put_records(StreamName=stream, Records=records)

    def reshard() -> None:
        wait_for(lambda: staged_lines(runs) == len(batches[0]), "the first batch's lines staged")
        middle = (starts[1] + starts[2]) // 2
        kinesis.split_shard(StreamName=stream, ShardToSplit=shards[1]["ShardId"], NewStartingHashKey=str(middle))
        [right] = [
            shard["ShardId"]
            for shard in kinesis.list_shards(StreamName=stream)["Shards"]
            if shard["HashKeyRange"]["StartingHashKey"] == str(middle)
        ]
        kinesis.merge_shards(StreamName=stream, ShardToMerge=right, AdjacentShardToMerge=shards[2]["ShardId"])
        third = len(batches[1]) // 3
        put_at(batches[1][:third], starts[1])  # the split's left child
        put_at(batches[1][third : 2 * third], middle)  # the merged shard
        put_at(batches[1][2 * third :], starts[0])

    put_at(batches[0], starts[0])
    section = {"type": "kinesis", "streamName": stream, "region": "us-east-1", "position": "TRIM_HORIZON"}
    config = {"input": {**section, "customEndpoint": s3_server.endpoint}, "output": {"path": "out"}}
    (runs / "stream.hocon").write_text(json.dumps({**config, "trigger": "1 second"}))
    stream_driver.set_clock(runs / "clock", START)
    flags = ["--iglu-config", "iglu.json", "--config", "stream.hocon", "--manifest", "sqlite://m.db"]
    command = [sys.executable, stream_driver.__file__, *flags, "--clock", "clock"]
    signalled(
        command, runs, submit_env(), [signal.SIGKILL], ready=lambda: staged_lines(runs) >= total, meanwhile=reshard
    )
    assert staged_lines(runs) == total, "every record staged once"
    assert len(kinesis.list_shards(StreamName=stream)["Shards"]) == 6
    done = in_process(main, runs, *flags, "--available-now")
    assert done.returncode == 0, told(done.stderr)
    assert re.findall(r"^run=\S+: (\d+) lines, ", done.stdout, re.MULTILINE) == [str(total)], done.stdout
