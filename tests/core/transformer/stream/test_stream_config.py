"""The stream transformer's config: its source, its windows, the batch job's keys beside them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from events_manifest._jobs.storage import LocalStorage
from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.output.formats import WideRowJson
from events_manifest._transformer.stream.stream_config import INPUT_WORDS, StreamConfig


def test_the_config_s_refusals_name_the_key(tmp_path: Path) -> None:
    def refused(document: dict[str, Any]) -> str:
        with pytest.raises(TransformerConfigError) as caught:
            StreamConfig.parse(json.dumps({"output": {"path": str(tmp_path / "out")}, **document}))
        return str(caught.value)

    assert ".input.subscription: Missing required field" in refused({"input": {"type": "pubsub"}})
    assert ".input.subscription: enriched is not of the form projects/PROJECT/subscriptions/NAME" in refused(
        {"input": {"subscription": "enriched"}}
    )
    gcp = {"subscription": "projects/p/subscriptions/enriched"}
    assert ".input.bufferSize: 0 is not a positive integer" in refused({"input": {**gcp, "bufferSize": 0}})
    assert ".input.awaitTerminatePeriod: soon is not a finite duration" in refused(
        {"input": {**gcp, "awaitTerminatePeriod": "soon"}}
    )
    kinesis = {"type": "kinesis", "streamName": "enriched", "region": "eu-west-1"}
    assert ".input.streamName: Missing required field" in refused({"input": {"type": "kinesis"}})
    assert ".input.position: NOW is not LATEST" in refused({"input": {**kinesis, "position": "NOW"}})
    assert ".input.retrievalMode.maxRecords: 20000 is out of range" in refused(
        {"input": {**kinesis, "retrievalMode": {"type": "Polling", "maxRecords": 20000}}}
    )
    assert "Region mars-1 is unknown" in refused({"input": {**kinesis, "region": "mars-1"}})
    assert "Input type sqs is not supported" in refused({"input": {"type": "sqs"}})
    assert ".input.dir: Missing required field" in refused({"input": {"type": "file"}})
    assert ".input.dir: Missing required field" in refused({}), "no input: a folder's, without its dir"
    assert ".input.dir: Missing required field" in refused({"input": {"type": "file", **gcp}}), "a folder, as typed"
    assert ".input.topicName" in refused({"input": {"type": "kafka", "bootstrapServers": "localhost:9092"}})
    assert "7 seconds does not divide a day" in refused({"input": {"type": "file", "dir": "in"}, "windowing": "7 s"})
    assert ".trigger: 0.05 seconds; give from 100 milliseconds" in refused(
        {"input": {"type": "file", "dir": "in"}, "trigger": "50 ms"}
    )
    assert "runInterval is the batch transformer's" in refused(
        {"input": {"type": "file", "dir": "in"}, "runInterval": {"sinceAge": "1 day"}}
    )
    config = StreamConfig.parse(
        json.dumps(
            {
                "input": {
                    "type": "kafka",
                    "topicName": "enriched",
                    "bootstrapServers": "localhost:9092",
                    "consumerConf": {"security.protocol": "SSL", "group": {"id": "x"}},
                },
                "output": {"path": "out"},
                "windowing": "5 minutes",
            }
        )
    )
    assert config.window_seconds == 300 and config.run.formats == WideRowJson()
    assert config.source.options == (("group.id", "x"), ("security.protocol", "SSL"))


def test_the_defaults_are_ten_minute_windows_of_wide_rows_and_the_batch_job_s_keys_apply() -> None:
    config = StreamConfig.parse(
        'input { type = file, dir = "in" }\noutput.path = "out"\ndeduplication.synthetic.type = none\n'
        "featureFlags.truncateAtomicFields = true"
    )
    assert config.window_seconds == 600 and config.trigger_seconds == 10 and config.source.describe() == "folder in"
    run = config.run
    assert (run.formats, run.output) == (WideRowJson(), "out")
    assert run.synthetic_threshold is None
    assert run.truncate_atomic_fields and run.compression == "GZIP"
    with pytest.raises(TransformerConfigError, match="Unknown Compression"):
        StreamConfig.parse('input { type = file, dir = "in" }\noutput { path = "out", compression = ZSTD }')


@pytest.mark.parametrize("written", ["99999999999 days", '"99999999999 days"', "99999999999999 hours", "9223372037 s"])
def test_a_duration_past_scala_s_limit_is_refused_quoted_or_not(written: str) -> None:
    """HOCON reads an unquoted duration itself: past what a timedelta holds too, it is the same refusal."""
    text = '{"input": {"type": "file", "dir": "in"}, "output": {"path": "out"}, "windowing": ' + written + "}"
    refusal = r"^Cannot resolve config: DecodingFailure at \.windowing: Duration is limited"
    with pytest.raises(TransformerConfigError, match=refusal):
        StreamConfig.parse(text)


def test_the_reference_s_kinesis_input_reads_with_its_defaults() -> None:
    """The reference's section: KCL's keys (appName, bufferSize, FanOut, the DynamoDB and CloudWatch
    endpoints) read, and kept only to be said; `position` LATEST by default, or AT_TIMESTAMP."""
    from events_manifest._transformer.stream.kinesis_input import KinesisInput

    def source(section: dict[str, Any]) -> KinesisInput | None:
        document = {"input": {"type": "kinesis", "streamName": "enriched", "region": "us-east-1", **section}}
        return StreamConfig.parse(json.dumps({"output": {"path": "out"}, **document})).source.kinesis

    assert source({}) == KinesisInput("enriched", "us-east-1")
    given = source(
        {
            "appName": "acme",
            "position": {"type": "AT_TIMESTAMP", "timestamp": "2026-11-27T10:00:00.250Z"},
            "retrievalMode": {"type": "FanOut"},
            "customEndpoint": "http://localhost:4566",
        }
    )
    assert given is not None and (given.position, given.timestamp_ms) == ("AT_TIMESTAMP", 1_795_773_600_250)
    assert (given.app_name, given.fan_out, given.endpoint) == ("acme", True, "http://localhost:4566")


def test_the_reference_s_pubsub_input_reads_with_its_defaults() -> None:
    """The reference's GCP section, which has no `type`: the subscription and the client's settings."""
    from events_manifest._transformer.stream.pubsub_input import PubsubInput

    def source(section: dict[str, Any]) -> PubsubInput | None:
        document = {"input": {"subscription": "projects/acme/subscriptions/enriched", **section}}
        return StreamConfig.parse(json.dumps({"output": {"path": "out"}, **document})).source.pubsub

    assert source({}) == PubsubInput("projects/acme/subscriptions/enriched", 1, 500, 3600.0, 60.0, 60.0)
    given = source(
        {
            "type": "pubsub",
            "parallelPullCount": 3,
            "bufferSize": 1000,
            "maxAckExtensionPeriod": "30 minutes",
            "minDurationPerAckExtension": "10 seconds",
            "awaitTerminatePeriod": "5 seconds",
        }
    )
    assert given == PubsubInput("projects/acme/subscriptions/enriched", 3, 1000, 1800.0, 10.0, 5.0)


def test_a_checkpoint_another_kind_of_input_wrote_is_refused(tmp_path: Path) -> None:
    """Spark's offset log as each input writes it (a folder's `logOffset`, the Kinesis input's
    `shards`, Kafka's partitions): given to another kind of input, refused in one line; to its own,
    or new, taken."""
    checkpoint = tmp_path / "checkpoint"
    offsets = checkpoint / "spark" / "offsets"
    offsets.mkdir(parents=True)
    metadata = '{"batchWatermarkMs":0,"batchTimestampMs":1764000000000,"conf":{}}'
    written = {
        "file": '{"logOffset":3}',
        "kinesis": '{"shards":{"shardId-000000000000":{"after":"4959","from":null,"ts":null,"at":null,"done":false}}}',
        "kafka": '{"enriched":{"0":1024,"1":998}}',
        "pubsub": '{"logOffset":3}',  # the file source over the staged messages, beside them
    }
    sources = {
        "file": {"type": "file", "dir": "in"},
        "kinesis": {"type": "kinesis", "streamName": "enriched", "region": "eu-west-1"},
        "kafka": {"type": "kafka", "topicName": "enriched", "bootstrapServers": "localhost:9092"},
        "pubsub": {"subscription": "projects/acme/subscriptions/enriched"},
    }
    storage = LocalStorage()
    for writer, offset in written.items():
        (offsets / "0").write_text(f"v1\n{metadata}\n{{}}\n")  # an earlier batch, not the last
        (offsets / "1").write_text(f"v1\n{metadata}\n{offset}\n")
        (offsets / ".1.crc").write_bytes(b"crc")
        if writer == "pubsub":  # the last writer: its staged messages beside the offsets
            (checkpoint / "pubsub").mkdir()
        for reader, section in sources.items():
            source = StreamConfig.parse(json.dumps({"input": section, "output": {"path": "out"}})).source
            if reader == writer:
                source.check_checkpoint(storage, str(offsets), str(checkpoint))
                continue
            with pytest.raises(TransformerConfigError) as refused:
                source.check_checkpoint(storage, str(offsets), str(checkpoint))
            assert str(refused.value).startswith(
                f"checkpoint [{checkpoint}] holds the positions of {INPUT_WORDS[writer]}, and "
            )
            advice = "give this input an output.path of its own (its checkpoint goes there)"
            assert str(refused.value).endswith(f"{advice}; nothing was written")
    source = StreamConfig.parse(json.dumps({"input": sources["file"], "output": {"path": "out"}})).source
    source.check_checkpoint(storage, str(tmp_path / "new" / "offsets"), "new")
