"""The transformer's shred mode, in plain Python: TSV columns from JSON Schemas (constructed and
Iglu Central's), cells, the atomic line, a model's versions walked, routing, an event's lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from events_manifest._iglu.keys import SchemaKey
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.event import Event, decode
from events_manifest._transformer.decode.jvm import NANOS
from events_manifest._transformer.output import bad_rows
from events_manifest._transformer.output.formats import Criterion, Routing, Shred
from events_manifest._transformer.output.shred_mode import (
    ATOMIC_PARTITION,
    IgluFailure,
    ShredModeLines,
    atomic_line,
    cell,
    model_schema,
    snake,
    tsv_columns,
    tsv_tstamp,
)
from events_manifest._transformer.run.message import shredding_complete
from events_manifest.iglu import ResolverConfig
from tests.shred_helpers import contexts, sdj, unstruct
from tests.transformer_helpers import IGLU_CENTRAL, RESOLVER, event, schema_errors

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
LINK_CLICK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"


def names(schema: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(column.name, column.nullable) for column in tsv_columns(schema)]


def test_the_columns_of_a_constructed_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "zeta": {"type": "string"},
            "alpha": {"type": ["string", "null"]},
            "id": {"type": "string"},
            "meta": {"type": "object", "properties": {"sizeKb": {"type": "integer"}}},
        },
        "required": ["zeta", "id"],
    }
    assert names(schema) == [("id", False), ("zeta", False), ("alpha", True), ("meta.size_kb", True)]


@pytest.mark.parametrize(
    ("node", "columns"),
    [
        ({"type": "array", "items": {"type": "object", "properties": {"a": {}}}}, ["x"]),
        ({"type": "object"}, ["x"]),
        ({"type": "object", "properties": {}}, []),
        ({"type": ["object", "string"], "properties": {"a": {"type": "string"}}}, ["x"]),
        ({"properties": {"a": {"type": "string"}}}, ["x"]),
        ({"type": ["number", "integer", "null"]}, ["x"]),
        (
            {"type": "object", "properties": {"inner": {"type": "object", "properties": {"deepValue": {}}}}},
            ["x.inner.deep_value"],
        ),
        ({"type": "object", "oneOf": [{"type": "string"}, {"type": "integer"}], "properties": {"a": {}}}, ["x"]),
    ],
)
def test_leaves_unions_and_nested_objects(node: dict[str, Any], columns: list[str]) -> None:
    assert [c.name for c in tsv_columns({"type": "object", "properties": {"x": node}})] == columns


@pytest.mark.parametrize(
    ("name", "snaked"),
    [
        ("requestStart", "request_start"),
        ("HTTPCode", "http_code"),
        ("userID", "user_id"),
        ("zip-code", "zip_code"),
        ("a.b", "a.b"),
    ],
)
def test_snake_case(name: str, snaked: str) -> None:
    assert snake(name) == snaked


def test_order_is_javas_string_order_within_nullability() -> None:
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in ("a_b", "a", "aB", "A1", "_x", "ab")}}
    assert [c.name for c in tsv_columns(schema)] == ["_x", "a", "a1", "a_b", "a_b", "ab"]


def test_iglu_central_schemas() -> None:
    def load(path: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((IGLU_CENTRAL / "schemas" / path).read_text())
        return loaded

    assert names(load("com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1")) == [
        ("target_url", False),
        ("element_classes", True),
        ("element_content", True),
        ("element_id", True),
        ("element_target", True),
    ]
    mandrill = [name for name, _ in names(load("com.mandrill/message_sent/jsonschema/1-0-0"))]
    assert mandrill[:6] == ["_id", "msg._id", "msg._version", "msg.clicks", "msg.email", "msg.metadata.user_id"]
    assert "msg.smtp_events" in mandrill and mandrill[-1] == "ts"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "\\N"),
        (True, "1"),
        (False, "0"),
        (circe.Number("1.50"), "1.50"),
        ("a\tb\nc\rd", "a b c\rd"),
        ("\\N", "\\\\N"),
        ([1, {"a": "x\ty"}], '[1,{"a":"x\\ty"}]'),  # compact JSON holds no raw TAB
    ],
)
def test_cells(value: Any, text: str) -> None:
    assert cell({"a": {"b": value}}, ("a", "b")) == text
    assert cell({"a": None}, ("a", "b")) == "\\N" and cell({}, ("missing",)) == "\\N"


def test_the_atomic_line() -> None:
    decoded = decode(
        event(
            A, "fp", geo_latitude="1e7", br_cookies="0", txn_id="-3", dvce_created_tstamp="2026-11-01 05:58:00.123999"
        ),
        None,
    )
    assert isinstance(decoded, Event)
    cells = atomic_line(decoded).split("\t")
    assert len(cells) == 128 and cells[6] == A and cells[7] == "-3"
    assert cells[3] == "2026-11-01 05:59:00.000" and cells[4] == "2026-11-01 05:58:00.123"
    assert "1.0E7" in cells and cells[cells.index("1.0E7") + 1] == ""
    assert tsv_tstamp(-62167219200 * NANOS) == "0001-01-01 00:00:00.000"  # year 0: the first year before the era
    assert tsv_tstamp(253402300800 * NANOS) == "+10000-01-01 00:00:00.000"


def repository(tmp_path: Path, schemas: dict[str, dict[str, Any]]) -> ResolverConfig:
    for uri, schema in schemas.items():
        key = SchemaKey.parse(uri)
        assert key is not None
        path = tmp_path / key.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(schema))
    config = {
        **RESOLVER,
        "data": {
            **RESOLVER["data"],
            "repositories": [
                *RESOLVER["data"]["repositories"],
                {
                    "name": "acme",
                    "priority": 1,
                    "vendorPrefixes": [],
                    "connection": {"embedded": {"path": str(tmp_path)}},
                },
            ],
        },
    }
    return ResolverConfig.parse(json.dumps(config))


OBJECT = {"type": "object", "properties": {"n": {"type": "integer"}}}


def test_every_version_of_the_model_must_be_fetched(tmp_path: Path) -> None:
    iglu = repository(
        tmp_path,
        {
            "iglu:com.acme/a/jsonschema/1-0-0": OBJECT,
            "iglu:com.acme/a/jsonschema/1-0-1": OBJECT,
            "iglu:com.acme/a/jsonschema/1-1-0": OBJECT,
            "iglu:com.acme/a/jsonschema/1-1-2": OBJECT,
            "iglu:com.acme/b/jsonschema/1-0-1": OBJECT,
            "iglu:com.acme/c/jsonschema/1-0-0": {"type": "object", "properties": {"n": {"type": 7}}},
        },
    )
    assert model_schema(iglu, "iglu:com.acme/a/jsonschema/1-1-0") == OBJECT
    missing = model_schema(iglu, "iglu:com.acme/a/jsonschema/1-1-2")
    assert isinstance(missing, IgluFailure) and missing.uri == "iglu:com.acme/a/jsonschema/1-1-1"
    assert model_schema(iglu, "iglu:com.acme/b/jsonschema/1-0-1") == IgluFailure(
        "iglu:com.acme/b/jsonschema/1-0-0", missing.repositories
    )
    assert model_schema(iglu, "iglu:com.acme/a/jsonschema/1-2-0") == IgluFailure(
        "iglu:com.acme/a/jsonschema/1-2-0", missing.repositories
    )
    unreadable = model_schema(iglu, "iglu:com.acme/c/jsonschema/1-0-0")
    assert unreadable == IgluFailure("iglu:com.acme/c/jsonschema/1-0-0")
    assert unreadable.item(0) == {
        "schemaKey": "iglu:com.acme/c/jsonschema/1-0-0",
        "message": "Cannot be parsed as JSON Schema AST",
    }
    history = missing.item(1_000_000_000)["error"]["lookupHistory"]
    assert [h["repository"] for h in history] == sorted(missing.repositories) and "acme" in missing.repositories
    assert history[0]["errors"] == [{"error": "NotFound"}] and history[0]["lastAttempt"] == "1970-01-01T00:00:01Z"


def test_routing_by_default_and_criteria() -> None:
    json_click = Criterion.parse("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-*-*")
    tsv_default = Routing("TSV", json=(json_click,), skip=(Criterion.parse("iglu:com.acme/x/jsonschema/*-*-*"),))
    assert tsv_default.format_of(LINK_CLICK) == "JSON" and tsv_default.format_of(WEB_PAGE) == "TSV"
    assert tsv_default.format_of("iglu:com.acme/x/jsonschema/3-0-0") == "JSON", "skip routes to JSON, it drops nothing"
    json_default = Routing("JSON", tsv=(json_click,), skip=(Criterion.parse("iglu:com.acme/x/jsonschema/*-*-*"),))
    assert (
        json_default.format_of(LINK_CLICK) == "TSV"
        and json_default.format_of("iglu:com.acme/x/jsonschema/3-0-0") == "JSON"
    )


def test_an_events_lines_in_the_references_order(tmp_path: Path) -> None:
    iglu = repository(tmp_path, {"iglu:com.acme/a/jsonschema/1-0-0": OBJECT})
    line = event(
        A,
        contexts=contexts(sdj(WEB_PAGE, '{"id":"p1"}'), sdj("iglu:com.acme/a/jsonschema/1-0-0", '{"n":1.0,"x":2}')),
        derived_contexts=contexts(sdj("iglu:com.acme/j/jsonschema/1-0-0", '{"k":"v"}')),
        unstruct_event=unstruct(sdj(LINK_CLICK, '{"targetUrl":"https://x/\\ty","elementClasses":["a","b"]}')),
    )
    decoded = decode(line, None)
    assert isinstance(decoded, Event)
    routing = Routing("TSV", json=(Criterion.parse("iglu:com.acme/j/jsonschema/1-*-*"),))
    lines = ShredModeLines(routing, iglu).lines(decoded)
    assert not isinstance(lines, IgluFailure)
    places = [place for place, _ in lines]
    assert places == [
        ATOMIC_PARTITION,
        ("com.snowplowanalytics.snowplow", "link_click", "tsv", "1", "0", "1"),
        ("com.acme", "j", "json", "1", "0", "0"),
        ("com.snowplowanalytics.snowplow", "web_page", "tsv", "1", "0", "0"),
        ("com.acme", "a", "tsv", "1", "0", "0"),
    ]
    meta = ["jsonschema", A, "2026-11-01 05:59:00.000", "events"]
    assert lines[1][1].split("\t") == [
        "com.snowplowanalytics.snowplow", "link_click", "jsonschema", "1-0-1", *meta[1:],
        '["events","link_click"]', "events",
        "https://x/ y", '["a","b"]', "\\N", "\\N", "\\N",
    ]  # fmt: skip
    assert json.loads(lines[2][1]) == {
        "schema": {"vendor": "com.acme", "name": "j", "format": "jsonschema", "version": "1-0-0"},
        "data": {"k": "v"},
        "hierarchy": {
            "rootId": A,
            "rootTstamp": "2026-11-01 05:59:00.000",
            "refRoot": "events",
            "refTree": ["events", "j"],
            "refParent": "events",
        },
    }
    assert lines[4][1].endswith("\t1.0")
    assert ShredModeLines(routing, iglu).types(decoded) == [
        (WEB_PAGE, "CONTEXT", "TSV"),
        ("iglu:com.acme/a/jsonschema/1-0-0", "CONTEXT", "TSV"),
        ("iglu:com.acme/j/jsonschema/1-0-0", "CONTEXT", "JSON"),
        (LINK_CLICK, "SELF_DESCRIBING_EVENT", "TSV"),
    ]


def test_a_tsv_entity_without_its_schema_is_a_loader_iglu_error(tmp_path: Path) -> None:
    iglu = repository(tmp_path, {})
    decoded = decode(event(A, contexts=contexts(sdj("iglu:com.acme/gone/jsonschema/1-0-0", "{}"))), None)
    assert isinstance(decoded, Event)
    failure = ShredModeLines(Routing(), iglu).lines(decoded)
    assert isinstance(failure, IgluFailure)
    row = bad_rows.iglu_error(decoded, [failure.item(0)])
    assert schema_errors(row) == []
    assert ShredModeLines(Routing("JSON"), iglu).lines(decoded) != failure, "JSON entities need no schema"


def test_shredded_and_legacy_messages_are_valid() -> None:
    kwargs: dict[str, Any] = {
        "started": 0,
        "completed": 1,
        "earliest": 2,
        "latest": 3,
        "compression": "NONE",
        "good": 1,
        "bad": 0,
        "formats": Shred(),
    }
    types = [(LINK_CLICK, "SELF_DESCRIBING_EVENT", "TSV"), (WEB_PAGE, "CONTEXT", "JSON")]
    shredded = shredding_complete("s3://b/run=1/", types, **kwargs)
    assert schema_errors(shredded) == []
    info = json.loads(shredded)["data"]["typesInfo"]
    assert info == {
        "types": [
            {"schemaKey": LINK_CLICK, "format": "TSV", "snowplowEntity": "SELF_DESCRIBING_EVENT"},
            {"schemaKey": WEB_PAGE, "format": "JSON", "snowplowEntity": "CONTEXT"},
        ],
        "transformation": "SHREDDED",
    }
    legacy = shredding_complete("s3://b/run=1/", types, legacy=True, **kwargs)
    assert json.loads(legacy)["schema"].endswith("/shredding_complete/jsonschema/1-0-1") and schema_errors(legacy) == []
