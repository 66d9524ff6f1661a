"""A line decoded as the Analytics SDK decodes it: each field's decoder, the line's shapes, every
error in field order, truncation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from events_manifest._transformer.decode.event import Event, atomic_limits, decode, java_cut, parse_instant
from events_manifest.errors import ManifestConfigError
from tests.shred_helpers import sdj
from tests.transformer_helpers import RESOLVER, event, fields_of

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def errors_of(line: str) -> list[dict[str, str]]:
    decoded = decode(line, None)
    assert isinstance(decoded, dict) and decoded["type"] == "RowDecodingError", decoded
    errors: list[dict[str, str]] = decoded["errors"]
    return errors


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("txn_id", "42", 42),
        ("txn_id", "-2147483648", -(2**31)),
        ("txn_id", "+7", 7),
        ("geo_latitude", " 1.5 ", 1.5),
        ("geo_latitude", "1e3", 1000.0),
        ("geo_latitude", "0x1.8p1", 3.0),
        ("geo_latitude", "2.5f", 2.5),
        ("geo_latitude", ".5", 0.5),
        ("br_cookies", "1", True),
        ("br_cookies", "0", False),
        ("dvce_created_tstamp", "2024-01-02 03:04:05.123456", parse_instant("2024-01-02T03:04:05.123456Z")),
        ("event_id", "1-2-3-4-5", "00000001-0002-0003-0004-000000000005"),
        ("event_id", A.upper(), A),
    ],
)
def test_each_decoder_accepts_what_java_accepts(name: str, text: str, value: Any) -> None:
    line = event(text) if name == "event_id" else event(A, **{name: text})
    assert fields_of(line).get(name) == value


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("txn_id", "2147483648", "Cannot parse key txn_id into integer"),
        ("txn_id", "1.0", "Cannot parse key txn_id into integer"),
        ("txn_id", "1_0", "Cannot parse key txn_id into integer"),
        ("geo_latitude", "inf", "Cannot parse key geo_latitude into double"),
        ("geo_latitude", "1,5", "Cannot parse key geo_latitude into double"),
        ("geo_latitude", "0x10", "Cannot parse key geo_latitude into double"),
        ("br_cookies", "true", "Cannot parse key br_cookies into boolean"),
        ("dvce_created_tstamp", "2024-01-02T03:04:05Z", "Cannot parse key dvce_created_tstamp into datetime"),
        ("dvce_created_tstamp", "2024-01-02 03:04", "Cannot parse key dvce_created_tstamp into datetime"),
        ("event_id", "{" + A + "}", "Cannot parse key event_id into UUID"),
        ("event_id", A.replace("-", ""), "Cannot parse key event_id into UUID"),
        ("event_id", "", "Field event_id cannot be empty"),
        ("v_etl", "", "Field v_etl cannot be empty"),
        ("collector_tstamp", "", "Field collector_tstamp cannot be empty"),
    ],
)
def test_each_decoder_refuses_what_java_refuses(name: str, text: str, message: str) -> None:
    values = {name: text} if name != "event_id" else {}
    line = event(text if name == "event_id" else A, **values)
    assert errors_of(line) == [{"type": "InvalidValue", "key": name, "value": text, "message": message}]


def test_line_shapes_and_every_error_in_field_order() -> None:
    assert decode("no tabs at all", None) == {"type": "NotTSV"}
    assert decode("", None) == {"type": "NotTSV"}
    assert decode("a\tb", None) == {"type": "FieldNumberMismatch", "fieldCount": 2}
    assert decode(event(A) + "\textra", None) == {"type": "FieldNumberMismatch", "fieldCount": 132}
    errors = errors_of(
        event("nope", txn_id="x", contexts="%%", unstruct_event=sdj("iglu:com.acme/x/jsonschema/1-0-0", "{}"))
    )
    assert [(e["key"], e["message"]) for e in errors] == [
        ("event_id", "Cannot parse key event_id into UUID"),
        ("txn_id", "Cannot parse key txn_id into integer"),
        ("contexts", errors[2]["message"]),
        ("unstruct_event", "Unknown payload: iglu:com.acme/x/jsonschema/1-0-0"),
    ]
    assert errors[2]["message"].startswith("ParsingFailure: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"data":[]}', "DecodingFailure at : schema key is not available"),
        (
            '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"}',
            "DecodingFailure at : data key is not available",
        ),
        (
            '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1","data":{}}',
            "Got value '{}' with wrong type, expecting array",
        ),
        (
            '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/2-0-0","data":[]}',
            "Unknown payload: iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/2-0-0",
        ),
        ('{"schema":"not a uri","data":[]}', "Invalid Iglu URI: not a uri, code: INVALID_IGLUURI"),
        (
            '{"schema":"iglu:com.acme/x/jsonschema/1-0","data":[]}',
            "Invalid schema version: 1-0, code: INVALID_SCHEMAVER",
        ),
        ('{"schema":7,"data":[]}', "Got value '7' with wrong type, expecting string"),
        ("&&&", "ParsingFailure: expected json value got '&&&' (line 1, column 1)"),
        ('{"schema":"x",,', "ParsingFailure: expected \" got ',' (line 1, column 15)"),
        ('{"schema":', "ParsingFailure: exhausted input"),
    ],
)
def test_contexts_errors_as_the_sdk_words_them(text: str, message: str) -> None:
    assert errors_of(event(A, contexts=text))[0]["message"] == message


def test_truncation_limits_come_from_the_atomic_schema() -> None:
    from events_manifest.iglu import ResolverConfig

    limits = atomic_limits(ResolverConfig.parse(json.dumps(RESOLVER)))
    assert (limits["app_id"], limits["geo_country"], limits["page_url"], limits["useragent"]) == (255, 2, 4096, 1000)
    assert "event_id" in limits and "contexts" not in limits  # a UUID field is never cut: decode skips it
    empty = {**RESOLVER, "data": {**RESOLVER["data"], "repositories": []}}
    with pytest.raises(ManifestConfigError, match="atomic/jsonschema/1-0-0 could not be fetched"):
        atomic_limits(ResolverConfig.parse(json.dumps(empty)))


def test_truncation_counts_utf16_units_before_the_empty_check() -> None:
    assert java_cut("abcdef", 3) == "abc"
    assert java_cut("😀😀", 3) == "😀\ud83d"
    limits = {"app_id": 2, "v_etl": 3}
    decoded = decode(event(A, app_id="abcdef", v_etl="enrich"), limits)
    assert isinstance(decoded, Event) and (decoded.get("app_id"), decoded.get("v_etl")) == ("ab", "enr")
