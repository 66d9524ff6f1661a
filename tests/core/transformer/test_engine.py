"""The transformer's engine, in plain Python: the JVM's renderings, the Analytics SDK's decoders and
their errors, wide-row lines, bad rows valid against their schemas, the config and its messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events_manifest._iglu.keys import SchemaKey
from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_NAMES
from events_manifest._transformer import bad_rows, jawn, sdjson, widerow
from events_manifest._transformer.batch import DUPLICATE_KEY, PARSED, Decide, Parse, with_new_id
from events_manifest._transformer.config import TransformerConfig, TransformerConfigError, decode_value
from events_manifest._transformer.discovery import discover, folder_uri
from events_manifest._transformer.entity_types import EntityType, type_text
from events_manifest._transformer.event import Event, atomic_limits, decode, java_cut, parse_instant
from events_manifest._transformer.formats import Criterion, WideRowJson
from events_manifest._transformer.jvm import double_to_string, hash_map_order, instant_to_string, string_hash
from events_manifest._transformer.message import shredding_complete
from events_manifest.errors import ManifestConfigError
from tests.shred_helpers import contexts, sdj, unstruct
from tests.transformer_helpers import RESOLVER, b64, event, schema_errors

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
ATOMIC = [FIELD_NAMES[i] for i in ATOMIC_FIELDS]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (51.5072, "51.5072"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (1e-4, "1.0E-4"),
        (-0.1278, "-0.1278"),
        (1.5e300, "1.5E300"),
        (float("nan"), None),
        (float("inf"), None),
    ],
)
def test_doubles_as_java_prints_them(value: float, text: str | None) -> None:
    assert double_to_string(value) == text


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"),
        ("2024-01-02T03:04:05.100Z", "2024-01-02T03:04:05.100Z"),
        ("2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05.123456Z"),
        ("2024-01-02T03:04:05.1234567Z", "2024-01-02T03:04:05.123456700Z"),
        ("-0044-03-15T12:00:00.000000001Z", "-0044-03-15T12:00:00.000000001Z"),
        ("+12345-01-01T00:00:00Z", "+12345-01-01T00:00:00Z"),
        ("2024-12-31T24:00:00Z", "2025-01-01T00:00:00Z"),
        ("2024-06-30t23:59:60z", "2024-06-30T23:59:59Z"),
    ],
)
def test_instants_parse_and_print_as_java_does(text: str, printed: str) -> None:
    nanos = parse_instant(text)
    assert nanos is not None and instant_to_string(nanos) == printed


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T00:00Z",
        "+2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00+01:00",
    ],
)
def test_instants_java_refuses(text: str) -> None:
    assert parse_instant(text) is None


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_instants_round_trip(nanos: int) -> None:
    assert parse_instant(instant_to_string(nanos)) == nanos


def test_java_string_hash_and_the_hash_maps_order() -> None:
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("app_id") == (-1411074055) & 0xFFFFFFFF  # what jshell prints for "app_id".hashCode()
    assert string_hash("contexts_com_acme_product_1") == (-12328427) & 0xFFFFFFFF

    def path(key: str) -> tuple[int, ...]:  # the spec's recipe, written out again
        h = string_hash(key)
        h = (h + ~(h << 9)) & 0xFFFFFFFF
        h ^= h >> 14
        h = (h + (h << 4)) & 0xFFFFFFFF
        h ^= h >> 10
        return tuple((h >> s) & 31 for s in range(0, 32, 5))

    keys = [*ATOMIC, "geo_location", "contexts_com_acme_product_1"]
    assert hash_map_order(keys) == sorted(keys, key=path)


def fields_of(line: str) -> Event:
    decoded = decode(line, None)
    assert isinstance(decoded, Event), decoded
    return decoded


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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("&&&", "expected json value got '&&&' (line 1, column 1)"),
        ("abcdefghij", "expected json value got 'abcdef...' (line 1, column 1)"),
        ("", "exhausted input"),
        ('{"a":', "exhausted input"),
        ("[1,", "exhausted input"),
        ('"abc', "exhausted input"),
        ("tru", "exhausted input"),
        ("[1,]", "expected json value got ']' (line 1, column 4)"),
        ('{"a" 1}', "expected : got '1}' (line 1, column 6)"),
        ("{a:1}", "expected \" got 'a:1}' (line 1, column 2)"),
        ("[1 2]", "expected ] or , got '2]' (line 1, column 4)"),
        ('{"a":1 "b":2}', "expected } or , got '\"b\":2}' (line 1, column 8)"),
        ('"\\x"', "illegal escape sequence (\\x) got '\\...' (line 1, column 2)"),
        ('"\\u12G4"', "expected valid unicode escape got '\\u12G4...' (line 1, column 2)"),
        ('"a\tb"', "control char (9) in string got '\t...' (line 1, column 3)"),
        ("trux", "expected true got 'trux' (line 1, column 1)"),
        ("nulx", "expected null got 'nulx' (line 1, column 1)"),
        ("1.e5", "expected digit got '1.e5' (line 1, column 1)"),
        ("[-]", "expected digit got '-]' (line 1, column 2)"),
        ("-x", "expected digit got '-x' (line 1, column 1)"),
        ("01", "expected whitespace or eof got '1' (line 1, column 2)"),
        ("[01]", "expected ] or , got '1]' (line 1, column 3)"),
        ("\n\n  &", "expected json value got '&' (line 3, column 3)"),
        ("NaN", "expected json value got 'NaN' (line 1, column 1)"),
        ('{"a":1}}', "expected whitespace or eof got '}' (line 1, column 8)"),
        ('["\U0001f600", x]', "expected json value got 'x]' (line 1, column 8)"),
    ],
)
def test_json_syntax_errors_in_the_reference_parser_s_words(text: str, message: str) -> None:
    """jawn's words, line and column (UTF-16 units: an emoji counts two), where Python's parser
    has its own."""
    assert jawn.error(text) == message
    with pytest.raises(sdjson.JsonSyntaxError) as raised:
        sdjson.loads(text)
    assert str(raised.value) == message


def test_jawn_accepts_what_python_accepts() -> None:
    for text in ['{"a":[1,2.5e-3,true,false,null,"x\\u00e9"]}', " 1 ", '"\\ud800"', "[]", "{}"]:
        assert jawn.error(text) is None


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


@pytest.mark.parametrize(
    ("uri", "entity", "column"),
    [
        ("iglu:org.w3/PerformanceTiming/jsonschema/1-0-0", "CONTEXT", "contexts_org_w3_performance_timing_1"),
        (
            "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0",
            "CONTEXT",
            "contexts_com_snowplowanalytics_snowplow_ua_parser_context_1",
        ),
        (
            "iglu:com.acme-corp/my-event/jsonschema/2-1-0",
            "SELF_DESCRIBING_EVENT",
            "unstruct_event_com_acme_corp_my_event_2",
        ),
        ("iglu:com.acme-corp/my-event/jsonschema/2-1-0", "CONTEXT", "contexts_com_acme_corp_my_event_2"),
        ("iglu:com.acme/HTTPRequest/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_httprequest_1"),
        ("iglu:com.acme/myEventV2/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_my_event_v2_1"),
        ("iglu:com.acme/event2Data/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_event2_data_1"),
        ("iglu:com.acme/snake_Case/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_snake_case_1"),
        ("iglu:com.Acme.x/aBCd/jsonschema/3-0-0", "CONTEXT", "contexts_com_acme_x_a_bcd_3"),
    ],
)
def test_entity_column_names(uri: str, entity: str, column: str) -> None:
    key = SchemaKey.parse(uri)
    assert key is not None and widerow.column_name(key, entity) == column


PRODUCT_1 = "iglu:com.acme/product/jsonschema/1-0-0"
PRODUCT_2 = "iglu:com.acme/product/jsonschema/1-0-2"
CLICK = "iglu:com.acme/click/jsonschema/1-0-0"


def test_a_wide_row_line() -> None:
    line = event(
        A,
        "fp",
        app_id='shop "x"\u007f',
        txn_id="7",
        geo_latitude="51.5072",
        geo_longitude="-0.1278",
        tr_total="1e7",
        br_cookies="1",
        dvce_created_tstamp="2026-11-01 05:58:00",
        contexts=contexts(
            sdj(PRODUCT_1, '{"sku": "a", "price": 1.50}'), sdj(PRODUCT_2, '{"sku":"b"}'), sdj(CLICK, "{}")
        ),
        derived_contexts=contexts(sdj(CLICK, '{"x":1e3}')),
        unstruct_event=unstruct(sdj("iglu:com.acme/add_to_cart/jsonschema/1-0-0", '{"n":-0}')),
    )
    text = widerow.line(fields_of(line))
    row = json.loads(text)
    expected: dict[str, Any] = dict.fromkeys(ATOMIC)
    expected.update(
        app_id='shop "x"\u007f',
        platform="web",
        event="page_view",
        event_id=A,
        event_fingerprint="fp",
        v_collector="ssc-3.2.0",
        v_etl="enrich-5.1.0",
        etl_tstamp="2026-11-01T06:00:00Z",
        collector_tstamp="2026-11-01T05:59:00Z",
        dvce_created_tstamp="2026-11-01T05:58:00Z",
        txn_id=7,
        geo_latitude=51.5072,
        geo_longitude=-0.1278,
        tr_total=1e7,
        br_cookies=True,
        geo_location="51.5072,-0.1278",
        contexts_com_acme_product_1=[{"sku": "a", "price": 1.5}, {"sku": "b"}],
        contexts_com_acme_click_1=[{"x": 1000}],  # the derived contexts' array replaces the contexts'
        unstruct_event_com_acme_add_to_cart_1={"n": 0},
    )
    assert row == expected
    assert list(row) == hash_map_order(row)
    assert '"price":1.50' in text and '"x":1e3' in text and '"n":-0' in text and '"tr_total":1.0E7' in text
    assert '"app_id":"shop \\"x\\"\\u007f"' in text


def test_circe_escapes_every_iso_control_character() -> None:
    assert (
        sdjson.string("a/\u00e9\b\f\n\r\t\u0001\u007f\u009f\u00a0")
        == '"a/\u00e9\\b\\f\\n\\r\\t\\u0001\\u007f\\u009f\u00a0"'
    )
    assert sdjson.dumps(sdjson.loads('{"a" : [1.0, {"b":null}], "a": 2}')) == '{"a":2}'


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


def _decided(rows: list[str], **options: Any) -> dict[str, list[Any]]:
    import pyarrow as pa

    parsed = Parse().batch(pa.array(rows, pa.string())).to_pylist()
    parsed.sort(key=lambda row: row["key"])
    out = Decide(**options).rows(pa.RecordBatch.from_pylist(parsed, schema=PARSED)).to_pylist()
    return {kind: [row for row in out if row["output"] == kind] for kind in ("good", "bad", "duplicate", "meta")}


B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def test_natural_then_synthetic_dedup_in_the_references_order() -> None:
    rows = [
        event(A, "f1", etl="2026-11-01 06:00:02"),
        event(A, "f1", etl="2026-11-01 06:00:01", app_id="earliest"),
        event(A, "f1", etl="", app_id="no etl: earliest of all"),
        event(A, "f2"),
        event(B, "f1"),
        "not an event",
    ]
    decided = _decided(rows, threshold=1)
    good = [json.loads(row["value"]) for row in decided["good"]]
    assert decided["meta"][0]["natural"] == 2 and len(decided["bad"]) == 1
    assert sorted(row["app_id"] for row in good) == ["app", "app", "no etl: earliest of all"]
    renamed = [row for row in good if row["event_id"] != B]
    assert len(renamed) == 2 and A not in {row["event_id"] for row in renamed}
    for row in renamed:
        assert row["contexts_com_snowplowanalytics_snowplow_duplicate_1"] == [{"originalEventId": A}]
    assert f"CONTEXT {DUPLICATE_KEY.uri}" in decided["meta"][0]["types"]
    again = _decided(rows, threshold=1)
    assert [row["value"] for row in again["good"]] == [
        row["value"] for row in decided["good"]
    ]  # the same ids on a rerun
    assert (
        len(_decided(rows, threshold=2)["good"]) == 3
        and not _decided(rows, natural=False, threshold=None)["meta"][0]["natural"]
    )


def test_the_duplicate_context_comes_first_among_derived_contexts() -> None:
    renamed = with_new_id(fields_of(event(A, derived_contexts=contexts(sdj(CLICK, "{}")))), B)
    payload = json.loads(bad_rows.event_payload(renamed))
    assert payload["event_id"] == B
    assert [c["schema"] for c in payload["derived_contexts"]["data"]] == [DUPLICATE_KEY.uri, CLICK]


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


def test_criteria_and_runs() -> None:
    criterion = Criterion.parse("iglu:com.acme/x/jsonschema/1-*-*")
    assert criterion.matches("iglu:com.acme/x/jsonschema/1-2-0") and not criterion.matches(
        "iglu:com.acme/x/jsonschema/2-0-0"
    )
    from datetime import UTC, datetime

    from events_manifest._transformer.config import RunInterval

    interval = RunInterval(since_timestamp=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 3, tzinfo=UTC))
    names = [
        "run=2026-11-01-00-00-00",
        "run=2026-11-02-00-00-00",
        "run=2026-11-03-00-00-00",
        "run=2026-11-01-x",
        "other",
        "_tmp",
    ]
    found = discover(names, ["run=2026-11-02-00-00-00"], interval, datetime.now(UTC))
    assert found.to_process == ("other", "run=2026-11-01-x") and found.done == ("run=2026-11-02-00-00-00",)
    assert folder_uri("s3a://bucket/out/run=1") == "s3://bucket/out/run=1/"
    assert folder_uri("gcs://b/x/") == "gs://b/x/" and folder_uri("file:/tmp/x") == "file:/tmp/x/"


def test_half_a_surrogate_pair_is_written_as_java_writes_it() -> None:
    import pyarrow as pa

    parsed = Parse(limits={"app_id": 2}).batch(pa.array([event(A, app_id="a\U0001f600b")], pa.string()))
    assert json.loads(parsed.column("value")[0].as_py())["app_id"] == "a?"


@given(
    st.sampled_from(
        ["iglu:com.acme/checkout/jsonschema/1-0-0", "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"]
    ),
    st.sampled_from(["CONTEXT", "SELF_DESCRIBING_EVENT"]),
    st.sampled_from(["", "TSV", "JSON"]),
)
def test_an_entity_type_reads_back_from_the_text_its_rows_carry(uri: str, entity: str, fmt: str) -> None:
    value = EntityType(uri, entity, fmt)
    assert value.text == type_text(uri, entity, fmt) == " ".join(filter(None, [entity, uri, fmt]))
    assert EntityType.parse(value.text) == value
