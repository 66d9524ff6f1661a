"""The stream transformer's config: its source, its windows, the batch job's keys beside them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.stream_config import StreamConfig


def test_the_config_s_refusals_name_the_key(tmp_path: Path) -> None:
    def refused(document: dict[str, Any]) -> str:
        with pytest.raises(TransformerConfigError) as caught:
            StreamConfig.parse(json.dumps({"output": {"path": str(tmp_path / "out")}, **document}))
        return str(caught.value)

    assert "input.type kinesis" in refused({"input": {"type": "kinesis", "streamName": "enriched"}})
    assert "Input type sqs is not supported" in refused({"input": {"type": "sqs"}})
    assert ".input.dir: Missing required field" in refused({"input": {"type": "file"}})
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
    assert config.window_seconds == 300 and config.run.transformation == "widerow"
    assert config.source.options == (("group.id", "x"), ("security.protocol", "SSL"))


def test_the_defaults_are_ten_minute_windows_of_wide_rows_and_the_batch_job_s_keys_apply() -> None:
    config = StreamConfig.parse(
        'input { type = file, dir = "in" }\noutput.path = "out"\ndeduplication.synthetic.type = none\n'
        "featureFlags.truncateAtomicFields = true"
    )
    assert config.window_seconds == 600 and config.trigger_seconds == 10 and config.source.describe() == "folder in"
    run = config.run
    assert (run.transformation, run.file_format, run.output) == ("widerow", "json", "out")
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
