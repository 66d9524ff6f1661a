"""The transformer's config: defaults, the reference's messages, command-line values."""

from __future__ import annotations

from typing import Any

import pytest

from events_manifest._transformer.config import TransformerConfig, TransformerConfigError, decode_value
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
        "output.bad.type = s3": f"Bad output type 's3' {supported} 'kinesis', 'file'",
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
