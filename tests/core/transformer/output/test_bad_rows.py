"""The transformer's bad rows, valid against their schemas."""

from __future__ import annotations

import json

from events_manifest._snowplow.fields import FIELD_NAMES
from events_manifest._transformer.decode.event import decode, parse_instant
from events_manifest._transformer.output import bad_rows
from tests.shred_helpers import contexts, sdj
from tests.transformer_helpers import PRODUCT_1, event, fields_of, schema_errors

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def test_bad_rows_are_valid_against_their_schemas() -> None:
    parsing = bad_rows.parsing_error("a\tb", {"type": "FieldNumberMismatch", "fieldCount": 2})
    line = event("x" + A[1:], contexts="%%")
    failure = decode(line, None)
    assert isinstance(failure, dict)
    decoding = bad_rows.parsing_error(line, failure)
    good = fields_of(event(A, contexts=contexts(sdj(PRODUCT_1, '{"sku":"a"}')), geo_latitude="NaN"))
    runtime = bad_rows.runtime_error(good, "Cross-batch deduplication failed: the table is gone")
    early = bad_rows.too_early(good, parse_instant("2030-01-01T00:00:00Z") or 0, 0)
    assert early is not None
    for row in (parsing, decoding, runtime, early):
        assert schema_errors(row) == [], row
    payload = json.loads(runtime)["data"]["payload"]
    assert list(payload) == list(FIELD_NAMES) and payload["geo_latitude"] is None
    assert payload["contexts"]["schema"].endswith("/contexts/jsonschema/1-0-0") and payload["derived_contexts"] == {}
    generic = json.loads(early)["data"]
    assert generic["failure"]["errors"] == [
        "Timestamp 2026-11-01T05:59:00Z is before than minimum timestamp, at column collector_tstamp",
        "Timestamp 2026-11-01T06:00:00Z is before than minimum timestamp, at column etl_tstamp",
    ]
    assert json.loads(generic["payload"])["event_id"] == A
