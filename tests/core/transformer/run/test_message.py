"""The `shredding_complete` message, valid against its schema."""

from __future__ import annotations

import json

from events_manifest._transformer.output.formats import WideRowJson
from events_manifest._transformer.run.message import shredding_complete
from tests.transformer_helpers import CLICK, PRODUCT_1, schema_errors


def test_the_message_is_valid_against_its_schema() -> None:
    message = shredding_complete(
        "s3://bucket/out/run=1/",
        [(PRODUCT_1, "CONTEXT", ""), (CLICK, "SELF_DESCRIBING_EVENT", ""), (PRODUCT_1, "CONTEXT", "")],
        formats=WideRowJson(),
        started=1,
        completed=2_500_000_000,
        earliest=None,
        latest=None,
        compression="GZIP",
        good=3,
        bad=1,
    )
    assert schema_errors(message) == []
    data = json.loads(message)["data"]
    assert list(data) == ["base", "typesInfo", "timestamps", "compression", "processor", "count"]
    assert data["typesInfo"]["types"] == [
        {"schemaKey": CLICK, "snowplowEntity": "SELF_DESCRIBING_EVENT"},
        {"schemaKey": PRODUCT_1, "snowplowEntity": "CONTEXT"},
    ]
    assert data["timestamps"] == {
        "jobStarted": "1970-01-01T00:00:00.000000001Z",
        "jobCompleted": "1970-01-01T00:00:02.500Z",
        "min": None,
        "max": None,
    }
