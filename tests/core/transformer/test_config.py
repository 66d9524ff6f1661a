"""The transformer's config: defaults, the reference's messages, command-line values."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from events_manifest._transformer.config import (
    DEFAULTS,
    TransformerConfig,
    TransformerConfigError,
    decode_value,
    merged,
)
from tests.transformer_helpers import b64


def test_config_defaults_and_the_references_messages() -> None:
    minimal = '{input: "s3://in/", output: {path: "s3://out/"}, formats: {transformationType: WIDEROW}}'
    parsed = TransformerConfig.parse(minimal)
    assert (parsed.compression, parsed.synthetic, parsed.cardinality, parsed.natural, parsed.queue) == (
        "GZIP",
        "broadcast",
        1,
        True,
        None,
    )
    wrapped = TransformerConfig.parse("snowplow " + minimal)
    assert wrapped == parsed
    supported = "is not supported yet. Supported types:"
    cases = {
        "output.compression = gzip": "Unknown Compression [gzip]",
        "output.bad.type = s3": f"Bad output type 's3' {supported} 'kinesis', 'pubsub', 'file'",
        "queue {type = kafka}": f"Queue type kafka {supported} 'SNS' and 'SQS'",
        "formats.fileFormat = avro": f"Widerow file format type avro {supported} 'json'",
        "deduplication.synthetic.type = magic": "Type magic is unknown for synthetic deduplication",
        'skipSchemas = ["iglu:a/x/jsonschema/01-*-*"]': "iglu:a/x/jsonschema/01-*-* is invalid Iglu schema criterion",
        "runInterval.sinceAge = forever": (
            "DecodingFailure at .runInterval.sinceAge: forever is not a finite duration, such as 14 days"
        ),
    }
    messages = {extra: "Cannot resolve config: " + message for extra, message in cases.items()}
    messages["deduplication.natural = false"] = (
        "Natural deduplication needs to be enabled when synthetic deduplication is enabled"
    )
    for extra, message in messages.items():
        with pytest.raises(TransformerConfigError) as raised:
            TransformerConfig.parse(minimal[:-1] + ", " + extra + "}")
        assert str(raised.value) == message


def test_the_gcp_transformer_s_bad_rows_and_queue_on_pub_sub_topics() -> None:
    """The reference's GCP sections: `output.bad` of type `pubsub` with its batching keys (their
    defaults when absent), and a `queue` with a `topic` and no type."""
    from events_manifest._transformer.config import BadSink, Queue

    def parsed(output: dict[str, Any], **more: Any) -> TransformerConfig:
        base = {"input": "in", "formats": {"transformationType": "widerow"}}
        return TransformerConfig.parse(json.dumps({**base, "output": {"path": "out", **output}, **more}))

    topic = "projects/acme/topics/bad"
    batching = {"batchSize": 100, "requestByteThreshold": 1000000, "delayThreshold": "50 milliseconds"}
    given = parsed({"bad": {"type": "pubsub", "topic": topic, **batching}}, queue={"topic": "projects/acme/topics/ld"})
    assert given.bad == BadSink("pubsub", topic=topic, batch_size=100, request_bytes=1_000_000, delay=0.05)
    assert given.queue == Queue("pubsub", "projects/acme/topics/ld", None)
    defaults = parsed({"bad": {"type": "pubsub", "topic": topic}})
    assert (defaults.bad.batch_size, defaults.bad.request_bytes, defaults.bad.delay) == (1000, 8_000_000, 0.2)
    refusals: list[tuple[dict[str, Any], dict[str, Any], str]] = [
        ({}, {"queue": {"topic": "loader"}}, ".queue.topic: loader is not of the form projects/PROJECT/topics/NAME"),
        ({"bad": {"type": "pubsub"}}, {}, ".output.bad.topic: Missing required field"),
        ({"bad": {"type": "pubsub", "topic": topic, "batchSize": 0}}, {}, "output.bad.batchSize: 0 is out of range"),
    ]
    for output, more, said in refusals:
        with pytest.raises(TransformerConfigError, match=re.escape(said)):
            parsed(output, **more)


def test_command_line_values_base64_then_a_path(tmp_path: Any) -> None:
    text = '{"a": 1}'
    assert decode_value(b64(text)) == text
    assert decode_value(b64(text).rstrip("=")) == text
    (tmp_path / "c.hocon").write_text(text)
    assert decode_value(str(tmp_path / "c.hocon")) == text
    with pytest.raises(
        TransformerConfigError, match=r"Error reading /.*/missing\.hocon file from filesystem: No such file"
    ):
        decode_value(str(tmp_path / "missing.hocon"))


def test_the_defaults_are_parsed_once_and_each_load_resolves_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defaults' `${?ACCEPT_LIMITED_USE_LICENSE}` is read from the environment of each load (the
    parsed defaults are kept, not a resolution of them), and a user's values stay in their load."""
    monkeypatch.setenv("ACCEPT_LIMITED_USE_LICENSE", "true")
    assert merged("{}", DEFAULTS)["license"] == {"accept": "true"}
    monkeypatch.delenv("ACCEPT_LIMITED_USE_LICENSE")
    assert merged("{}", DEFAULTS)["license"] == {"accept": False}
    assert merged("license.accept = true\nformats.default = JSON", DEFAULTS)["formats"]["default"] == "JSON"
    again = merged("{}", DEFAULTS)
    assert again["formats"]["default"] == "TSV" and again["license"] == {"accept": False}
