"""Wide-row Parquet types from JSON Schemas (the core's rules, no Spark): each typing rule, names,
nullability, the storage preparation of unions, a model's versions folded, recovered columns and
their hash, the rendering used in error messages."""

from __future__ import annotations

from typing import Any

import pytest

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
    fold,
    for_storage,
    normalise,
    scala_hash,
    type_of,
)


@pytest.mark.parametrize(
    ("name", "normalised"),
    [
        ("requestStart", "request_start"),
        ("HTTPCode", "http_code"),
        ("userID", "user_id"),
        ("a.b", "a_b"),
        ("1st", "_1st"),
        ("\u00fcn\u00efcode", "_n_code"),
        ("my-key", "my_key"),
    ],
)
def test_names(name: str, normalised: str) -> None:
    assert normalise(name) == normalised


def typed(schema: dict[str, Any]) -> Type | None:
    return type_of(for_storage(schema))


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, STRING),
        ({"type": ["string", "null"], "maxLength": 3, "enum": ["a"]}, STRING),
        ({"type": "string", "format": "date-time"}, TIMESTAMP),
        ({"type": "string", "format": "date"}, DATE),
        ({"type": "boolean"}, BOOLEAN),
        ({"type": "integer"}, LONG),
        ({"type": "integer", "minimum": 0, "maximum": 100}, INTEGER),
        ({"type": "integer", "minimum": 0}, LONG),
        ({"type": "integer", "minimum": 0, "maximum": 2**40}, LONG),
        ({"type": "integer", "minimum": -(10**20), "maximum": 10**20}, Decimal(38, 0)),
        ({"type": "number"}, DOUBLE),
        ({"type": ["number", "integer", "null"]}, DOUBLE),
        ({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 10000}, Decimal(9, 2)),
        ({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 10**17}, Decimal(38, 2)),
        ({"type": "number", "multipleOf": 0.01}, DOUBLE),
        ({"type": "number", "multipleOf": 1, "minimum": 0, "maximum": 10}, INTEGER),
        ({"enum": [1, 2, None]}, INTEGER),
        ({"enum": [1, 2**40]}, LONG),
        ({"enum": ["a", "b"]}, STRING),
        ({"enum": ["a", 1]}, JSON),
        ({}, JSON),
        ({"type": ["string", "integer"]}, JSON),
        ({"type": "object"}, JSON),
        ({"type": "array"}, Array(JSON, True)),
        ({"type": "array", "items": {"type": "string"}}, Array(STRING, False)),
        ({"type": "array", "items": {"type": ["string", "null"]}}, Array(STRING, True)),
        ({"type": "array", "items": [{"type": "integer"}, {"type": "integer"}]}, Array(LONG, False)),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "properties": {}, "additionalProperties": False}},
            },
            None,
        ),
    ],
)
def test_each_typing_rule(schema: dict[str, Any], expected: Type | None) -> None:
    assert typed(schema) == expected


def test_structs_sorted_with_nullability_and_accessors() -> None:
    schema = {
        "type": "object",
        "properties": {
            "zeta": {"type": "string"},
            "alpha": {"type": ["string", "null"]},
            "id": {"type": "string"},
            "aB": {"type": "integer"},
            "a_b": {"type": "string"},
            "kind": {"enum": ["x", "y"]},
            "free": {},
        },
        "required": ["zeta", "alpha", "id", "kind", "free"],
    }
    fields = {f.name: f for f in typed(schema).fields}  # type: ignore[union-attr]
    assert list(fields) == ["a_b", "alpha", "free", "id", "kind", "zeta"]
    assert (fields["id"].nullable, fields["alpha"].nullable, fields["zeta"].nullable) == (False, True, False)
    assert (fields["kind"].nullable, fields["free"].nullable) == (False, True), "an enum without null; no type at all"
    assert fields["a_b"].type == LONG and fields["a_b"].accessors == {"aB", "a_b"}, "the smallest key's type"


def test_unions_are_narrowed_by_their_parent_then_widened() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "oneOf": [
            {"properties": {"b": {"type": "integer", "minimum": 0, "maximum": 5}}, "required": ["a", "b"]},
            {
                "properties": {"b": {"type": "integer", "minimum": -5, "maximum": 9}, "c": {"type": "boolean"}},
                "required": ["a"],
            },
        ],
    }
    fields = {f.name: (f.type, f.nullable) for f in typed(schema).fields}  # type: ignore[union-attr]
    assert fields == {"a": (STRING, False), "b": (INTEGER, True), "c": (BOOLEAN, True)}
    assert typed({"oneOf": [{"type": "string"}, {"type": "integer"}]}) == JSON
    assert typed({"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date"}]}) == DATE


def test_columns_of_contexts_and_unstruct_events() -> None:
    schema = {"type": "object", "properties": {"plan": {"type": "integer"}}}
    plan = Struct((Field("plan", LONG, True, frozenset({"plan"})),))
    assert column_field("contexts_com_acme_signup_1", schema, context=True) == Field(
        "contexts_com_acme_signup_1", Array(plan, False), True, frozenset({"contexts_com_acme_signup_1"})
    )
    nullable = column_field("contexts_com_acme_signup_1", {**schema, "type": ["object", "null"]}, context=True)
    assert nullable is not None and nullable.type == Array(plan, True)
    column = column_field("unstruct_event_com_acme_signup_1", schema, context=False)
    assert column == Field(
        "unstruct_event_com_acme_signup_1", plan, True, frozenset({"unstruct_event_com_acme_signup_1"})
    )
    assert str(column) == (
        "Field(unstruct_event_com_acme_signup_1,Struct(NonEmptyVector(Field(plan,Long,Nullable,Set(plan)))),"
        "Nullable,Set(unstruct_event_com_acme_signup_1))"
    )


def test_the_recovered_columns_hash() -> None:
    column = column_field(
        "unstruct_event_com_acme_signup_1",
        {"type": "object", "properties": {"plan": {"type": "integer"}}},
        context=False,
    )
    assert column is not None
    h = scala_hash(column)
    assert abs(h - (1 << 32) if h & 0x80000000 else h) == 1557113286  # the reference's name for it


def unstruct(properties: dict[str, Any], required: tuple[str, ...] = ()) -> Field:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    column = column_field("unstruct_event_com_acme_x_1", schema, context=False)
    assert column is not None
    return column


def test_versions_fold_in_base_order_then_new_fields() -> None:
    base = unstruct({"b": {"type": "string"}, "d": {"type": "string"}}, ("b", "d"))
    later = unstruct({k: {"type": "string"} for k in "abcd"}, ("a", "b"))
    folded = fold([("1-0-0", base), ("1-0-1", later)], seen=["1-0-1"])
    fields = folded.column.type.fields  # type: ignore[union-attr]
    assert [(f.name, f.nullable) for f in fields] == [("b", False), ("d", True), ("a", True), ("c", True)]
    assert folded.recovered == ()


def test_a_breaking_version_seen_is_recovered_apart() -> None:
    base = unstruct({"plan": {"type": "string"}})
    broken = unstruct({"plan": {"type": "integer"}})
    added = unstruct({"plan": {"type": "string"}, "extra": {"type": "boolean"}})
    folded = fold([("1-0-0", base), ("1-0-1", broken), ("1-0-2", added)], seen=["1-0-1", "1-0-2"])
    assert [f.name for f in folded.column.type.fields] == ["plan", "extra"]  # type: ignore[union-attr]
    ((version, recovered),) = folded.recovered
    h = scala_hash(broken)
    assert (
        version == "1-0-1"
        and recovered.name
        == f"unstruct_event_com_acme_x_1_recovered_1_0_1_{abs(h - (1 << 32) if h & 0x80000000 else h)}"
    )
    assert fold([("1-0-0", base), ("1-0-1", broken)], seen=["1-0-0"]).recovered == (), "a breaking version not seen"


def test_types_render_as_the_reference_prints_them() -> None:
    assert str(Decimal(18, 2)) == "Decimal(Digits18,2)"
    assert str(Array(STRING, True)) == "Array(String,Nullable)"
