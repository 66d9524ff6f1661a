"""The stream transformer on a Pub/Sub subscription (the emulator of the Google Cloud CLI), in this
process on the suite's Spark session with a clock the test moves: the two sample batches published
one window apart give the batch job's two runs, with messages a killed start had pulled (and
staged, or not) coming back to this one; a subscription that does not exist is one line; the
reference's GCP config from the command line. (A real kill is not tested on the emulator: it gives
back what a killed subscriber held in waves, minutes later.)"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events_manifest._transformer.stream.pubsub_input import STAGED, data_of
from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest.iglu import ResolverConfig
from events_manifest.snowplow import sample_batches
from events_manifest.testing import LocalServer
from tests.commands import in_process, told
from tests.pubsub_helpers import subscribed
from tests.spark.stream.test_windows import committed
from tests.transformer_helpers import RESOLVER, START, Clock, b64, local_run

pytestmark = pytest.mark.every_line
DEADLINE = 10
"""The subscription's ack deadline, in seconds (Pub/Sub's least): when a message pulled and not
acknowledged comes back."""


@pytest.fixture
def topic(pubsub_emulator: LocalServer) -> Iterator[tuple[Any, str, str]]:
    """A publisher, a new topic and a subscription of it."""
    with subscribed(DEADLINE) as made:
        yield made


def _publish(publisher: Any, topic: str, lines: list[bytes]) -> None:
    for future in [publisher.publish(topic, line) for line in lines]:
        future.result(timeout=60)


class StagedLines:
    """Every message the stream's puller stages, counted as it is written (a redelivered message
    counts again: a wait on counts alone could end with one of them missing). The puller's threads
    write while the test reads, so both hold the lock."""

    def __init__(self) -> None:
        self._seen: Counter[bytes] = Counter()
        self._lock = threading.Lock()

    def add(self, lines: list[bytes]) -> None:
        with self._lock:
            self._seen.update(lines)

    def missing(self, wanted: Counter[bytes]) -> Counter[bytes]:
        with self._lock:
            return wanted - self._seen


@pytest.fixture
def staged_lines(monkeypatch: pytest.MonkeyPatch) -> StagedLines:
    """The messages the stream's puller stages, recorded as `HadoopStorage` writes them."""
    from spark_integration._spark.storage import HadoopStorage

    seen = StagedLines()
    original = HadoopStorage.write_text

    def recording(self: HadoopStorage, path: str, text: str) -> None:
        original(self, path, text)
        if f"/{STAGED}/" in path:
            seen.add([data_of(line) for line in text.splitlines()])

    monkeypatch.setattr(HadoopStorage, "write_text", recording)
    return seen


def _staged(stream: Any, seen: StagedLines, lines: list[bytes]) -> None:
    """Wait until the stream's puller has staged each of `lines` (as often as it is there)."""
    wanted, deadline = Counter(lines), time.monotonic() + 120
    while missing := seen.missing(wanted):
        assert time.monotonic() < deadline, f"{missing.total()} of {len(lines)} messages not staged"
        stream._stager.check()
        time.sleep(0.1)


@pytest.mark.long
def test_a_subscription_fed_while_the_stream_runs_gives_the_batch_job_s_windows(
    spark: Any,
    tmp_path: Path,
    batch_runs: list[dict[str, Any]],
    topic: tuple[Any, str, str],
    staged_lines: StagedLines,
) -> None:
    """Before the start, a killed start had pulled the first 40 messages and not acknowledged them,
    and had staged the first 20 of them: the 40 come back once their deadline passed (moved to now
    by the test: the emulator's clock is its own), the 20 known by their ids and not staged again,
    and each window is the batch job's run of its batch, exactly:
    its rows, its bad rows, its counts and types (were the 20 read twice, an event among them
    without a fingerprint would be two events with new ids). The reference's input keys are read."""
    from google.cloud import pubsub_v1

    from spark_integration.stream_transformer import StreamTransformer

    publisher, name, subscription = topic
    lines = [gzip.decompress(sorted(batch.glob("part-*"))[0].read_bytes()).splitlines() for batch in sample_batches()]
    out, db = tmp_path / "out", tmp_path / "m.db"
    _publish(publisher, name, lines[0])
    subscriber = pubsub_v1.SubscriberClient()
    pulled = subscriber.pull(subscription=subscription, max_messages=40, timeout=30)
    assert len(pulled.received_messages) == 40
    subscriber.modify_ack_deadline(  # the killed start's deadline passed: the 40 are the subscription's again
        subscription=subscription, ack_ids=[m.ack_id for m in pulled.received_messages], ack_deadline_seconds=0
    )
    killed = [(m.message.message_id, m.message.data) for m in pulled.received_messages]
    staged = out / "_checkpoint" / STAGED
    staged.mkdir(parents=True)
    (staged / "1-killed.txt").write_text("".join(f"{i} {base64.b64encode(data).decode()}\n" for i, data in killed[:20]))
    by_hand = Counter(data for _, data in killed[:20])
    section = {
        "subscription": subscription,
        "parallelPullCount": 2,
        "bufferSize": 500,
        "maxAckExtensionPeriod": "1 hour",
        "minDurationPerAckExtension": "60 seconds",
        "awaitTerminatePeriod": "60 seconds",
    }
    config = StreamConfig.parse(
        json.dumps({"input": section, "output": {"path": str(out)}, "trigger": "100 milliseconds"})
    )
    assert config.source.pubsub is not None and config.source.pubsub.parallel_pull_count == 2
    clock = Clock(START)
    iglu = ResolverConfig.parse(json.dumps(RESOLVER))
    with StreamTransformer(spark, config, iglu=iglu, manifest=f"sqlite:///{db}", clock=clock) as stream:
        query = stream.start()
        first = list((Counter(lines[0]) - by_hand).elements())  # the 40 pulled before among them
        _staged(stream, staged_lines, first)  # the 40 back, the 20 staged before not again
        query.processAllAvailable()
        clock.now += 600
        _publish(publisher, name, lines[1])
        _staged(stream, staged_lines, first + lines[1])
        query.processAllAvailable()
    windows = committed(out)
    assert [w.name[4:23] for w in windows] == ["2026-11-18-10-30-00", "2026-11-18-10-40-00"]
    for window, run in zip(windows, batch_runs, strict=True):
        found = local_run(window)
        assert found["good"] == run["good"], "each event once: a message staged before is not staged again"
        assert sorted(found["bad"]) == sorted(run["bad"])
        mine, theirs = found["message"]["data"], run["message"]["data"]
        assert (mine["count"], mine["typesInfo"]) == (theirs["count"], theirs["typesInfo"])
    assert stream._stager is None and stream.results[0].lines == len(lines[0]), "each line of the batch read once"
    assert not (staged / "1-killed.txt").exists(), "a staged file deleted once its micro-batch is committed"


def test_a_subscription_that_does_not_exist_is_one_line_and_exit_1(
    spark: Any, tmp_path: Path, pubsub_emulator: LocalServer
) -> None:
    """The reference's GCP input (a subscription, no type): a subscription that is not there is
    said in one line before anything is written."""
    from spark_integration.stream_transformer import main

    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    missing = f"projects/acme/subscriptions/none-{time.time_ns()}"
    config = b64(json.dumps({"input": {"subscription": missing}, "output": {"path": "out"}}))
    done = in_process(main, tmp_path, "--iglu-config", "iglu.json", "--config", config)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"stream transformer: error: Pub/Sub subscription {missing} does not exist (deleted, or never created): "
        "create it, or correct input.subscription"
    ]
    assert not (tmp_path / "out").exists()


REFERENCE = """
{
  "input": {
    "subscription": "%(subscription)s"
    "parallelPullCount": 1
    "bufferSize": 500
    "maxAckExtensionPeriod": "1 hour"
    "minDurationPerAckExtension": "60 seconds"
    "awaitTerminatePeriod": "60 seconds"
  }
  "output": {
    "path": "out"
    "compression": "GZIP"
    "bad": {
      "type": "pubsub"
      "topic": "%(bad)s"
      "batchSize": 1000
      "requestByteThreshold": 8000000
      "delayThreshold": 200 milliseconds
    }
  }
  "queue": { "topic": "%(queue)s" }
  "windowing": "5 minutes"
  "formats": { "transformationType": "widerow", "fileFormat": "json" }
  "validations": { "minimumTimestamp": "2021-11-18T11:00:00.00Z" }
  "featureFlags": { "legacyMessageFormat": false, "truncateAtomicFields": false }
  "monitoring": { "metrics": { "stdout": { "period": "1 minute", "prefix": "snowplow.transformer." } } }
  "telemetry": { "disable": true }
}
"""
"""The reference's `transformer.pubsub.config.reference.hocon`, its names pointed at the emulator's."""


@pytest.mark.long
def test_the_reference_s_gcp_config_runs_from_the_command_line(
    spark: Any, tmp_path: Path, batch_runs: list[dict[str, Any]], topic: tuple[Any, str, str]
) -> None:
    """The first sample batch on the subscription, `--available-now`: one window of its good rows
    (the batch job's), its bad rows on the bad topic, the window's message on the loader's topic."""
    from google.cloud import pubsub_v1

    from spark_integration.stream_transformer import main

    publisher, name, subscription = topic
    subscriber = pubsub_v1.SubscriberClient()
    made = {}
    for role in ("bad", "queue"):
        made[role] = publisher.create_topic(name=f"{name}-{role}").name
        subscriber.create_subscription(name=f"{subscription}-{role}", topic=made[role])
    lines = gzip.decompress(sorted(sample_batches()[0].glob("part-*"))[0].read_bytes()).splitlines()
    _publish(publisher, name, lines)
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    (tmp_path / "transformer.hocon").write_text(REFERENCE % {"subscription": subscription, **made})
    flags = ["--iglu-config", "iglu.json", "--config", "transformer.hocon", "--available-now"]
    done = in_process(main, tmp_path, *flags)
    assert done.returncode == 0, told(done.stderr)
    [window] = committed(tmp_path / "out")
    assert sorted(p.name for p in window.iterdir()) == ["output=good", "shredding_complete.json"]
    found = local_run(window)
    assert found["good"] == batch_runs[0]["good"]

    def received(role: str, wanted: set[bytes]) -> set[bytes]:
        """What the topic of `role` got, read until it holds `wanted` (a message published twice is one)."""
        got: set[bytes] = set()
        while not wanted <= got:
            answer = subscriber.pull(subscription=f"{subscription}-{role}", max_messages=1000, timeout=30)
            assert answer.received_messages, f"{len(wanted - got)} messages missing on the {role} topic"
            got.update(message.message.data for message in answer.received_messages)
            subscriber.acknowledge(
                subscription=f"{subscription}-{role}", ack_ids=[m.ack_id for m in answer.received_messages]
            )
        return got

    expected = {row.encode() for row in batch_runs[0]["bad"]}
    assert received("bad", expected) == expected
    message = (window / "shredding_complete.json").read_bytes()
    assert received("queue", {message}) == {message}, "the window's message, the text of its commit"
