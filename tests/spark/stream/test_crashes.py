"""The stream transformer killed at two steps, in this process (`tests.crashes`), on the suite's
Spark session with a clock the test moves: the two bundled sample batches arrive one window apart,
and an unbroken stream commits them as two windows, the batch job's two runs of the same lines. A
kill once the first batch's lines are written, and once the first window is committed but before
Spark's checkpoint knows the batch that committed it (`STEPS`): the next start on the same
checkpoint commits both windows as the unbroken stream did, every event in exactly one window. On
a folder at both steps; on Kinesis (moto's, a task a shard) at the first, where Spark replays a batch
from the shards' offsets in its checkpoint (the second is the book's, the same whatever the input);
every step without Spark in `tests/core/transformer/stream/test_window_flow.py`; a real kill of the
process group of each input in `tests/integration/test_stream.py`."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from events_manifest._transformer.stream.kinesis_input import MARGIN_MS, PACE_MS
from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest.iglu import ResolverConfig
from events_manifest.snowplow import sample_batches
from events_manifest.testing import LocalServer
from tests.commands import in_process, told
from tests.crashes import Crashes
from tests.kinesis_helpers import kinesis_stream
from tests.spark.stream.test_windows import committed
from tests.transformer_helpers import RESOLVER, START, Clock, b64, local_run, same

pytestmark = pytest.mark.every_line

STEPS = ["batch-written", "window-committed"]
"""Where a restart meets what Spark keeps: the first batch's lines written, not staged (Spark replays
the batch, which overwrites them); the first window committed, the batch that committed it not in
Spark's checkpoint (Spark replays it, the book says its window is closed). Every step of the
stream, a window's commit at each of its steps among them, without Spark:
`tests/core/transformer/stream/test_window_flow.py`."""
COMPLETE = "shredding_complete.json"


def crashed_and_continued(
    spark: Any,
    tmp_path: Path,
    batch_runs: list[dict[str, Any]],
    source: dict[str, Any],
    arrive: Callable[[int], None],
    steps: list[str],
    subtests: pytest.Subtests,
    *,
    latest: bool = False,
    kept: tuple[str, ...] = (),
) -> tuple[Crashes, list[dict[str, Any]]]:
    """An unbroken stream over the two batches (`arrive(n)` delivers batch n), recorded at `steps`:
    the batch job's two runs; then, from what a kill at each step left, a start that reads on to the
    end and stops: the same windows. A `latest` input reads what arrives once the stream started;
    the files at the `kept` steps are recorded too, for the caller (`Crashes.restore`)."""
    from spark_integration.stream_transformer import StreamTransformer

    out, db = tmp_path / "out", tmp_path / "m.db"
    document = {"input": source, "output": {"path": str(out)}, "trigger": "100 milliseconds"}
    config = StreamConfig.parse(json.dumps(document))
    iglu = ResolverConfig.parse(json.dumps(RESOLVER))
    crashes, clock = Crashes(out, db, tmp_path / "crashes"), Clock(START)
    unbroken_start = StreamTransformer(spark, config, iglu=iglu, manifest=f"sqlite:///{db}", clock=clock)
    if not latest:
        arrive(0)  # whole before the first trigger: the first batch one micro-batch, whose steps are recorded
    with crashes.recording([*steps, *kept]), unbroken_start as stream:
        query = stream.start()
        if latest:
            arrive(0)
        query.processAllAvailable()
        clock.now += 600
        arrive(1)
        query.processAllAvailable()
    unbroken = [local_run(window) for window in committed(out)]
    assert [w.name[4:23] for w in committed(out)] == ["2026-11-18-10-30-00", "2026-11-18-10-40-00"]
    for window, run in zip(unbroken, batch_runs, strict=True):
        same(window, run)  # each batch in its window, the second's re-delivered events dropped

    for step in steps:
        with subtests.test(step=step):
            url = crashes.restore(step)
            with StreamTransformer(spark, config, iglu=iglu, manifest=url, clock=Clock(START + 600)) as again:
                again.start().processAllAvailable()  # then stopped: the windows it filled committed
            windows = committed(out)
            assert [w.name[4:23] for w in windows] == ["2026-11-18-10-30-00", "2026-11-18-10-40-00"], windows
            for folder, expected in zip(windows, unbroken, strict=True):
                same(local_run(folder), expected)
                assert sorted(p.name for p in folder.iterdir()) == ["output=bad", "output=good", COMPLETE]
            assert sorted(p.name for p in out.iterdir()) == ["_checkpoint", *(w.name for w in windows)]
    return crashes, unbroken


@pytest.mark.long
def test_a_stream_on_a_folder_killed_at_each_step_restarts_with_nothing_lost_or_doubled(
    spark: Any, tmp_path: Path, batch_runs: list[dict[str, Any]], subtests: pytest.Subtests
) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    batches = [sorted(batch.glob("part-*"))[0] for batch in sample_batches()]

    def arrive(n: int) -> None:
        (inp / f"{n}.tsv.gz").write_bytes(batches[n].read_bytes())

    crashed_and_continued(spark, tmp_path, batch_runs, {"type": "file", "dir": str(inp)}, arrive, STEPS, subtests)


@pytest.mark.long
def test_a_stream_on_kinesis_killed_once_its_batch_is_written_replays_it_with_nothing_lost_or_doubled(
    spark: Any, tmp_path: Path, batch_runs: list[dict[str, Any]], moto_server: LocalServer, subtests: pytest.Subtests
) -> None:
    """The reference's Kinesis input section (three shards, `LATEST`): each batch's records put once
    the stream started, then read once they are older than the reader's margin (a shard is cut
    before what arrived within it), so that a micro-batch reads a whole batch, by a stage of a task a
    shard. The first batch replayed after a kill reads from the first start's `LATEST`, kept in the
    checkpoint. A stream deleted is one line that says so, exit 1."""
    from spark_integration.stream_transformer import StreamTransformer, main

    if spark.version.startswith("3."):
        pytest.skip("the Kinesis input needs Spark 4 (refused on 3.5: tests/spark/stream/test_windows.py)")
    client = boto3.client("kinesis", endpoint_url=moto_server.endpoint, region_name="us-east-1")
    name = f"enriched-crashes-{time.time_ns()}"
    client.create_stream(StreamName=name, ShardCount=3)
    lines = [gzip.decompress(sorted(batch.glob("part-*"))[0].read_bytes()).splitlines() for batch in sample_batches()]

    def arrive(n: int) -> None:
        time.sleep(1.05 - time.time() % 1)  # within one second (Kinesis cuts to the second): one micro-batch
        began = time.monotonic()
        for at in range(0, len(lines[n]), 500):
            records = [{"Data": x, "PartitionKey": f"{n}-{at + i}"} for i, x in enumerate(lines[n][at : at + 500])]
            client.put_records(StreamName=name, Records=records)
        # older than the margin, and than the time they took to arrive: a shard's middle time falls after
        # them; and a pace on, a shard's next cut
        time.sleep((MARGIN_MS + PACE_MS) / 1000 + 0.2 + (time.monotonic() - began))

    section = {
        "type": "kinesis",
        "appName": "acme-snowplow-transformer",
        "streamName": name,
        "region": "us-east-1",
        "position": "LATEST",
        "retrievalMode": {"type": "Polling", "maxRecords": 1000},
        "bufferSize": 3,
        "customEndpoint": moto_server.endpoint,
        "dynamodbCustomEndpoint": "http://localhost:4569",
        "cloudwatchCustomEndpoint": "http://localhost:4582",
    }
    tracker = spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup())
    crashes, unbroken = crashed_and_continued(
        spark, tmp_path, batch_runs, section, arrive, STEPS[:1], subtests, latest=True, kept=("batch-staged",)
    )
    jobs = set(tracker.getJobIdsForGroup()) - jobs_before
    stages = [tracker.getStageInfo(stage) for job in jobs for stage in tracker.getJobInfo(job).stageIds]
    assert 3 in {stage.numTasks for stage in stages if stage}, "a micro-batch read by a task a shard"

    # the stream deleted while the job runs, a batch staged in its window: that window committed, then said
    out = tmp_path / "out"
    config = StreamConfig.parse(json.dumps({"input": section, "output": {"path": str(out)}, "trigger": "100 ms"}))
    iglu = ResolverConfig.parse(json.dumps(RESOLVER))
    stopped: list[BaseException] = []
    with StreamTransformer(spark, config, iglu=iglu, clock=Clock(START + 1200)) as stream:
        running = threading.Thread(target=lambda: _failed(stream.run, stopped), daemon=True)
        running.start()
        client.put_records(StreamName=name, Records=[{"Data": x, "PartitionKey": "k"} for x in lines[0][:20]])

        def staged() -> bool:
            with stream.flow.lock:  # the stream prunes its book under it: a record listed, then gone
                return any(b.staged and b.window.start >= START + 1200 for b in stream.book.batches())

        while not staged() and running.is_alive():
            time.sleep(0.1)
        client.delete_stream(StreamName=name)
        running.join(120)
    windows = committed(out)
    assert [w.name[4:23] for w in windows][-1] == "2026-11-18-10-50-00" and len(windows) == 3, windows
    assert [result.counts.lines for result in stream.results] == [20], "every record of the batch staged"
    [failure] = stopped
    assert str(failure).startswith(f"the stream stopped: Kinesis stream {name} in us-east-1 does not exist"), failure
    assert str(failure).endswith("the windows whose batches were all staged are committed"), failure

    # a start killed once it staged the first batch, the stream gone since: the next start commits that window
    url = crashes.restore("batch-staged")
    assert url is not None and committed(out) == []
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    main_config = b64(json.dumps({"input": section, "output": {"path": "out"}}))
    flags = ["--iglu-config", "iglu.json", "--config", main_config, "--manifest", url, "--available-now"]
    gone = in_process(main, tmp_path, *flags)
    [first] = committed(out)
    same(local_run(first), unbroken[0])
    assert gone.returncode == 1 and gone.stderr.strip().splitlines()[-1] == (
        f"stream transformer: error: Kinesis stream {name} in us-east-1 does not exist (deleted, or never created): "
        f"create it, or correct input.streamName and input.region; what an earlier start staged is committed: "
        f"{first.name}"
    )
    again = in_process(main, tmp_path, *flags)
    assert again.stderr.strip().splitlines()[-1].endswith("region; nothing staged was left to commit")

    # this Kinesis checkpoint given to a folder's start: one line, exit 2, nothing written; the advice
    # followed (an output of its own, its checkpoint there) reads the folder (each way, and Kafka's:
    # tests/core/transformer/stream/test_stream_config.py)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder/a.tsv.gz").write_bytes(gzip.compress(lines[0][0] + b"\n"))
    folder = {"input": {"type": "file", "dir": "folder"}, "output": {"path": "out"}}
    folder_flags = ["--iglu-config", "iglu.json", "--available-now", "--config"]
    before = sorted(str(path) for path in out.rglob("*"))
    refused = in_process(main, tmp_path, *folder_flags, b64(json.dumps(folder)))
    [line] = refused.stderr.splitlines()
    assert refused.returncode == 2 and "holds the positions of a Kinesis stream's shards, and this config reads" in line
    assert "give this input an output.path of its own" in line and "nothing was written" in line
    assert sorted(str(path) for path in out.rglob("*")) == before, "nothing written"
    own = {**folder, "output": {"path": "folder-out"}}
    done = in_process(main, tmp_path, *folder_flags, b64(json.dumps(own)))
    assert done.returncode == 0, told(done.stderr)
    assert len(committed(tmp_path / "folder-out")) == 1


def _failed(run: Callable[[], int], failures: list[BaseException]) -> None:
    try:
        run()
    except Exception as e:
        failures.append(e)


@pytest.mark.long
def test_an_available_now_run_reads_to_the_stream_s_end_through_a_throttling_storm_each_record_one_event(
    spark: Any, tmp_path: Path, moto_server: LocalServer
) -> None:
    """Every read of the stream refused for three seconds (GetShardIterator, GetRecords), then a
    third of them: `--available-now` reads every record the stream held when it started, each
    once, and exits 0, where its first trigger, refused, read nothing and was taken for the
    stream's end (Spark's available-now for a Python source is one micro-batch).

    And each record is read whole, however many line ends it holds: a lone CR in a field stays in
    it, a gzip record and a KPL-framed one whose checksum fails are one bad row each; the one line
    end a line-oriented producer adds at a record's end (LF or CRLF) is not the event's, as a
    file's is not (before, staged as text and read again, each was cut at every CR and LF)."""
    if spark.version.startswith("3."):
        pytest.skip("the Kinesis input needs Spark 4 (refused on 3.5: tests/spark/stream/test_windows.py)")
    from aws_kinesis_agg import MAGIC

    lines = _distinct(60)
    fields = lines[0].split(b"\t")
    fields[77] = b"Mozilla/5.0\rX-Evil: 1"  # useragent
    shaped = [b"\t".join(fields), lines[1] + b"\n", lines[2] + b"\r\n"]
    unreadable = [gzip.compress(b"\n".join(lines[:3])), MAGIC + b"not\nan\naggregate\n" + bytes(16)]
    records = [*shaped, *lines[3:], *unreadable]
    with kinesis_stream(moto_server.endpoint, shards=2, max_records=10000) as (client, source):
        run = _stormed(tmp_path, moto_server, client, source.stream, records)
    assert len(run["good"]) + len(run["bad"]) == 62, "each record, once"
    good = {row["event_id"]: row for row in map(json.loads, run["good"])}
    assert {line.split(b"\t")[6].decode() for line in lines[:4]} <= good.keys()
    assert good[fields[6].decode()]["useragent"] == "Mozilla/5.0\rX-Evil: 1"


def _distinct(count: int) -> list[bytes]:
    """The first `count` events of the first sample batch, of distinct ids."""
    first = gzip.decompress(sorted(sample_batches()[0].glob("part-*"))[0].read_bytes()).splitlines()
    return list({line.split(b"\t")[6]: line for line in first if line.count(b"\t") > 6}.values())[:count]


def _available_now(tmp_path: Path, name: str, endpoint: str) -> dict[str, list[str]]:
    """The command's `--available-now` run over stream `name` from its start (at `endpoint`): the good
    and bad lines of the windows it committed (one, unless the run crossed a window's end on this
    machine's clock, which the command reads)."""
    from spark_integration.stream_transformer import main

    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    section = {"type": "kinesis", "streamName": name, "region": "us-east-1", "position": "TRIM_HORIZON"}
    document = {"input": {**section, "customEndpoint": endpoint}, "output": {"path": "out"}}
    config = b64(json.dumps({**document, "trigger": "100 milliseconds"}))
    done = in_process(main, tmp_path, "--iglu-config", "iglu.json", "--config", config, "--available-now")
    assert done.returncode == 0, told(done.stderr)
    runs = [local_run(window) for window in committed(tmp_path / "out")]
    assert 1 <= len(runs) <= 2, runs
    return {kind: [line for run in runs for line in run[kind]] for kind in ("good", "bad")}


def _stormed(
    tmp_path: Path, moto_server: LocalServer, client: Any, name: str, records: list[bytes]
) -> dict[str, list[str]]:
    """The command's `--available-now` run over `records`, through the storm; its windows' lines."""
    from events_manifest.testing import FaultProxy

    client.put_records(StreamName=name, Records=[{"Data": x, "PartitionKey": str(n)} for n, x in enumerate(records)])
    time.sleep(MARGIN_MS / 1000 + 0.2)
    calls = frozenset({"GetShardIterator", "GetRecords"})
    with FaultProxy(moto_server.endpoint, throttle_rate=1.0, operations=calls, seed=11) as proxy:

        def abate() -> None:  # three seconds after the first refusal: past the first trigger's patience
            while not proxy.throttled:
                time.sleep(0.05)
            time.sleep(3)
            proxy.throttle_rate = 0.3

        threading.Thread(target=abate, daemon=True).start()
        run = _available_now(tmp_path, name, proxy.endpoint)
    assert proxy.throttled > 3
    return run
