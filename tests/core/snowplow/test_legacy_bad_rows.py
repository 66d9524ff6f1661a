"""The shred job's bad rows, in the 2018 format: each message worded as the reference words it, the
document (`line`, `errors`, `failure_tstamp`) as Spark's JSON writer spells it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa

from events_manifest._snowplow import legacy_bad_rows as bad_rows
from events_manifest.errors import ManifestRequestError


def test_each_message_quotes_the_whole_value_and_null_when_empty() -> None:
    assert bad_rows.not_a_uuid("") == "Field [event_id]: [null] is not a valid UUID"
    assert bad_rows.not_a_timestamp("etl_tstamp", "x" * 300).endswith(
        f"[{'x' * 300}] is not in the expected Redshift/Postgres timestamp format"
    )
    assert bad_rows.too_few_fields(3).endswith("(expected 108+ fields; found 3)")
    assert bad_rows.too_many_fields(200).endswith("(expected at most 131 fields; found 200)")
    assert bad_rows.invalid_json("contexts", "{", "eof").startswith("Field [context]: invalid JSON [{]")
    assert bad_rows.not_self_describing("unstruct_event", "{}", "no schema").startswith("Field [ue_properties]: [{}]")
    assert bad_rows.manifest_failure(ManifestRequestError("gone")) == (
        "Cross-batch deduplication unexpected failure: gone"
    )
    assert bad_rows.unexpected_error(KeyError("x")).endswith("KeyError: 'x'")


def test_a_failure_tstamp_is_utc_milliseconds_and_naive_means_utc() -> None:
    moment = datetime(2026, 11, 1, 7, 0, 0, 123_456, tzinfo=timezone(timedelta(hours=1)))
    assert bad_rows.failure_tstamp(moment) == "2026-11-01T06:00:00.123Z"
    assert bad_rows.failure_tstamp(datetime(2026, 11, 1, 6)) == "2026-11-01T06:00:00.000Z"
    assert bad_rows.failure_tstamp(datetime(2026, 11, 1, 6, tzinfo=UTC)) == "2026-11-01T06:00:00.000Z"


def test_the_document_keeps_the_line_and_spells_control_characters_as_jackson_does() -> None:
    line = "a\tb\x01é\\u00ff".encode() + b"\xff"
    text = bad_rows.bad_row(line, ["first", "second"], "2026-11-01T06:00:00.000Z")
    assert text.startswith('{"line":"a\\tb\\u0001é\\\\u00ff\ufffd","errors":[{"level":"error","message":"first"}')
    assert json.loads(text)["errors"][1] == {"level": "error", "message": "second"}
    assert json.loads(bad_rows.bad_row(b"\x1f", [], "t"))["line"] == "\x1f"
    assert '"\\u001F"' in bad_rows.bad_row(b"\x1f", [], "t"), "upper-case hex, as Spark writes it"


def test_a_line_is_valid_when_it_has_no_message() -> None:
    errors = pa.array([[], ["bad"], []], pa.list_(pa.string()))
    assert bad_rows.without_messages(errors).tolist() == [True, False, True]
