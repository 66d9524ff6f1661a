"""Values in wide-row Parquet columns (the core's cast rules): what fits each type, what does not
and how a misfit is reported; and, over real Iglu Central schemas, every value a schema accepts
fits the column the schema gives."""

from __future__ import annotations

import json
import re
from decimal import Decimal as Number
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from events_manifest._transformer.decode import circe
from events_manifest._transformer.output.parquet import cast
from events_manifest._transformer.output.parquet_types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    INTEGER,
    JSON,
    LONG,
    STRING,
    TIMESTAMP,
    Array,
    Decimal,
    Field,
    Struct,
    Type,
    column_field,
)
from tests.examples import examples
from tests.transformer_helpers import IGLU_CENTRAL


def j(text: str) -> Any:
    return circe.loads(text)


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ('"a"', STRING, "a"),
        ("true", BOOLEAN, True),
        ("5", INTEGER, 5),
        ("5.0", INTEGER, 5),
        ("5e0", LONG, 5),
        ("2147483648", LONG, 2**31),
        ("1.5", DOUBLE, 1.5),
        ("7", DOUBLE, 7.0),
        ("1.50", Decimal(9, 2), Number("1.50")),
        ("1.500", Decimal(9, 2), Number("1.50")),
        ("3", Decimal(18, 2), Number("3.00")),
        ('"2024-01-02T03:04Z"', TIMESTAMP, 1704164640000000),
        ('"2024-01-02T03:04:05.1234567+01:00"', TIMESTAMP, 1704161045123456),
        ('"2024-02-29"', DATE, __import__("datetime").date(2024, 2, 29)),
        ('{"b": [1, 2.50]}', JSON, '{"b":[1,2.50]}'),
        ('"abc"', JSON, '"abc"'),
        ("[1, null]", Array(LONG, True), [1, None]),
    ],
)
def test_values_that_fit(text: str, kind: Type, value: Any) -> None:
    assert cast(j(text), kind, nullable=False) == (value, [])


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("1", STRING),
        ('"true"', BOOLEAN),
        ("1.5", INTEGER),
        ("2147483648", INTEGER),
        ('"1"', DOUBLE),
        ("1.005", Decimal(9, 2)),
        ("12345678.9", Decimal(9, 2)),
        ('"2024-01-02T03:04:05"', TIMESTAMP),
        ('"2024-02-30"', DATE),
        ('"2024-1-2"', DATE),
        ("[1, null]", Array(LONG, False)),
        ("null", STRING),
    ],
)
def test_values_that_do_not_fit(text: str, kind: Type) -> None:
    _, errors = cast(j(text), kind, nullable=False)
    assert errors and all(set(error) == {"value", "expected"} for error in errors)


def test_a_struct_reads_its_accessors_drops_unknown_keys_and_lists_every_misfit() -> None:
    kind = Struct(
        (
            Field("a_b", LONG, False, frozenset({"aB", "a_b"})),
            Field("n", STRING, False, frozenset({"n"})),
            Field("x", BOOLEAN, True, frozenset({"x"})),
        )
    )
    assert cast(j('{"aB": null, "a_b": 3, "n": "v", "extra": 1}'), kind, nullable=True) == (
        {"a_b": 3, "n": "v", "x": None},
        [],
    )
    _, errors = cast(j('{"a_b": "three", "x": 1}'), kind, nullable=True)
    assert circe.dumps(errors) == (
        '[{"value":"three","expected":"Long"},{"value":null,"expected":"String"},{"value":1,"expected":"Boolean"}]'
    )
    assert cast(None, JSON, nullable=False) == ("null", [])


SCHEMAS = [
    "com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-0",
    "com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1",
    "com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
    "com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0",
    "com.mandrill/message_sent/jsonschema/1-0-0",
]


@pytest.mark.parametrize("path", SCHEMAS)
@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(data=st.data())
def test_every_value_a_schema_accepts_fits_its_column(path: str, data: st.DataObject) -> None:
    schema = json.loads((IGLU_CENTRAL / "schemas" / path).read_text())
    schema = {k: v for k, v in schema.items() if k not in ("$schema", "self")}
    column = column_field("unstruct_event_x_1", schema, context=False)
    assert column is not None
    value = data.draw(from_schema(schema))
    text = json.dumps(value)
    assume(not re.search(r"(?<![\d.eE])-?\d{19,}(?![\d.eE])", text))  # an integer past 64 bits: no column holds it
    assert cast(circe.loads(text), column.type, nullable=True)[1] == []


def test_a_runs_columns_from_its_entity_types() -> None:
    from events_manifest._transformer.output.formats import Criterion
    from events_manifest._transformer.output.parquet import ATOMIC_COLUMNS, ParquetSchemaError, build_columns
    from events_manifest.iglu import ResolverConfig
    from tests.transformer_helpers import RESOLVER

    iglu = ResolverConfig.parse(json.dumps(RESOLVER))
    click = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/"
    page = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
    seen = [(click + "1-0-1", "SELF_DESCRIBING_EVENT"), (click + "1-0-0", "SELF_DESCRIBING_EVENT"), (page, "CONTEXT")]
    columns = build_columns(
        seen, iglu, [Criterion.parse("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-*-*")], synthetic=True
    )
    names = [column.field.name for column in columns.entities]
    assert names == [
        "contexts_com_snowplowanalytics_snowplow_duplicate_1",
        "unstruct_event_com_snowplowanalytics_snowplow_link_click_1",
    ]
    link = columns.entities[1]
    assert link.keys == {click + "1-0-0", click + "1-0-1"} and link.named == click + "1-0-1" and not link.context
    assert len(columns.fields) == len(ATOMIC_COLUMNS) + 2 == 130
    assert [f.name for f in columns.arrow_schema()][:2] == ["app_id", "platform"]
    with pytest.raises(
        ParquetSchemaError, match=r"^Error while building non-atomic DDL fields\. Schema iglu:com\.acme/x"
    ):
        build_columns([("iglu:com.acme/x/jsonschema/1-0-0", "CONTEXT")], iglu, synthetic=False)


def test_rows_built_together_cast_each_events_values_and_report_each_misfit() -> None:
    """`ParquetColumns.rows`: the fitting events' rows in order, column by column; a timestamp
    before 1970 floored to its microsecond, one in year 9999 written (past int64 nanoseconds), a
    NaN or infinite double null, a string as written; an event whose money or entity does not fit
    reported with that column's failures, and no row."""
    from datetime import UTC, datetime

    from events_manifest._transformer.decode.event import Event, decode
    from events_manifest._transformer.output.parquet import build_columns
    from events_manifest.iglu import ResolverConfig
    from tests.shred_helpers import sdj, unstruct
    from tests.transformer_helpers import RESOLVER, event

    click = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
    columns = build_columns(
        [(click, "SELF_DESCRIBING_EVENT")], ResolverConfig.parse(json.dumps(RESOLVER)), synthetic=False
    )
    lines = [
        event("c6ef3124-b53a-4b13-a233-0088f79dcbc1", collector="1969-12-31 23:59:59.9999995", geo_latitude="NaN"),
        event("c6ef3124-b53a-4b13-a233-0088f79dcbc2", geo_longitude="Infinity", se_value="2.5", app_id="caf\u00e9"),
        event("c6ef3124-b53a-4b13-a233-0088f79dcbc3", tr_total="1.005"),
        event("c6ef3124-b53a-4b13-a233-0088f79dcbc4", unstruct_event=unstruct(sdj(click, '{"elementId":"x"}'))),
        event(
            "c6ef3124-b53a-4b13-a233-0088f79dcbc5",
            unstruct_event=unstruct(sdj(click, '{"targetUrl":"http://a","elementId":"half \\ud800 a pair"}')),
        ),
        event("c6ef3124-b53a-4b13-a233-0088f79dcbc6", collector="9999-12-31 23:59:59.999"),
    ]
    events = [decode(line, None) for line in lines]
    assert all(isinstance(e, Event) for e in events)
    rows, failures = columns.rows(events)  # type: ignore[arg-type]
    assert [f is None for f in failures] == [True, True, False, False, True, True]
    assert failures[2] is not None and failures[2][0]["schemaKey"].endswith("/atomic/jsonschema/1-0-0")
    assert failures[3] is not None and failures[3][0]["schemaKey"] == click
    first, second, third, fourth = rows.to_pylist()
    assert [r["event_id"] for r in (first, second, third)] == [
        "c6ef3124-b53a-4b13-a233-0088f79dcbc1",
        "c6ef3124-b53a-4b13-a233-0088f79dcbc2",
        "c6ef3124-b53a-4b13-a233-0088f79dcbc5",
    ]
    assert first["collector_tstamp"] == datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert fourth["collector_tstamp"] == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "past int64 nanos"
    assert first["geo_latitude"] is None and second["geo_longitude"] is None and second["se_value"] == 2.5
    assert second["app_id"] == "caf\u00e9" and first["tr_total"] is None
    link = "unstruct_event_com_snowplowanalytics_snowplow_link_click_1"
    assert first[link] is None and third[link]["target_url"] == "http://a"
    assert third[link]["element_id"] == "half ? a pair", "no UTF-8 form: written ? as the JVM writes it"
    assert rows.type == pa.struct(list(columns.arrow_schema()))
