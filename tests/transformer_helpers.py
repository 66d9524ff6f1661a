"""Enriched lines, configs and schema checks for the transformer's tests."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from events_manifest._iglu.keys import SchemaKey
from events_manifest._transformer.config import TransformerConfig
from events_manifest._transformer.decode.event import Event, decode
from events_manifest._transformer.monitoring import Monitoring
from events_manifest.iglu import Resolver
from tests.shred_helpers import line

IGLU_CENTRAL = Path(__file__).parent / "iglu_central"
RESOLVER: dict[str, Any] = {
    "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
    "data": {
        "cacheSize": 500,
        "cacheTtl": 600,
        "repositories": [
            {
                "name": "central copy",
                "priority": 0,
                "vendorPrefixes": [],
                "connection": {"embedded": {"path": str(IGLU_CENTRAL)}},
            }
        ],
    },
}
_resolver = Resolver.parse(json.dumps(RESOLVER))


def event(event_id: str, fingerprint: str = "", etl: str = "2026-11-01 06:00:00.000", **values: str) -> str:
    """An enriched line the Analytics SDK decodes (v_collector and v_etl set)."""
    fields: dict[str, Any] = {"v_collector": "ssc-3.2.0", "v_etl": "enrich-5.1.0", **values}
    return line(event_id, fingerprint, etl, **fields)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config(input_path: Path | str, output_path: Path | str, extra: str = "") -> str:
    return json.dumps({"input": str(input_path), "output": {"path": str(output_path)}})[:-1] + (
        ', "formats": {"transformationType": "widerow"}' + (", " + extra if extra else "") + "}"
    )


def schema_errors(document: dict[str, Any] | str) -> list[str]:
    """The messages of validating a self-describing document against its Iglu Central schema."""
    parsed = json.loads(document) if isinstance(document, str) else document
    key = SchemaKey.parse(parsed["schema"].replace(".storage.rdbloader/", ".storage/"))
    assert key is not None
    return _resolver.validate_data(key, parsed["data"])


def dynamodb_config(table: str) -> dict[str, Any]:
    """An `amazon_dynamodb_config` 2-0-0 naming `table`, with static keys a local server takes."""
    return {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/amazon_dynamodb_config/jsonschema/2-0-0",
        "data": {
            "name": "manifest",
            "auth": {"accessKeyId": "x", "secretAccessKey": "y"},
            "awsRegion": "us-east-1",
            "dynamodbTable": table,
            "id": "1b2c3d4e-0000-4000-8000-000000000000",
            "purpose": "EVENTS_MANIFEST",
        },
    }


PRODUCT_1 = "iglu:com.acme/product/jsonschema/1-0-0"
PRODUCT_2 = "iglu:com.acme/product/jsonschema/1-0-2"
CLICK = "iglu:com.acme/click/jsonschema/1-0-0"


def fields_of(line: str) -> Event:
    """A line the Analytics SDK's decoding accepts, decoded."""
    decoded = decode(line, None)
    assert isinstance(decoded, Event), decoded
    return decoded


def monitoring_of(section: dict[str, Any]) -> Monitoring:
    """The `monitoring` section of a batch transformer config, as the config reads it."""
    config = {"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
    return TransformerConfig.parse(json.dumps({**config, "monitoring": section})).monitoring


FIFO = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
"""A FIFO queue's attributes, as the loader's queue is made."""


def lines(data: bytes, name: str) -> list[str]:
    return (gzip.decompress(data) if name.endswith(".gz") else data).decode().splitlines()


def local_run(base: Path) -> dict[str, Any]:
    """A run folder: its good and bad lines, sorted, and its message."""
    found: dict[str, Any] = {"good": [], "bad": []}
    for part in sorted(base.rglob("part-*")):
        found["good" if "output=good" in str(part) else "bad"] += lines(part.read_bytes(), part.name)
    found["good"].sort()
    found["bad"].sort()
    found["message"] = json.loads((base / "shredding_complete.json").read_text())
    return found


def same(ours: dict[str, Any], reference: dict[str, Any]) -> None:
    """The same rows and bad rows, and a message of the same counts and types (its times are the run's)."""
    assert ours["good"] == reference["good"] and ours["bad"] == reference["bad"]
    mine, theirs = ours["message"]["data"], reference["message"]["data"]
    assert (mine["count"], mine["typesInfo"]) == (theirs["count"], theirs["typesInfo"])


START = 1_794_997_800.0
"""A stream window's start: 2026-11-18 10:30:00 UTC (ten-minute windows start at :00, :10, ...)."""


class Clock:
    """The processing time a stream sees, moved by the test."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
