"""What the transformer reads of a JSON Schema: its types, and whether it reads as one (the shapes
its keywords must have, at any depth)."""

from __future__ import annotations

from typing import Any

import pytest

from events_manifest._transformer.output.schemas import parseable, schema_types


def test_a_schema_s_types_as_a_set_and_none_for_any() -> None:
    assert schema_types({"type": "string"}) == {"string"}
    assert schema_types({"type": ["string", "null", 3]}) == {"string", "null"}
    assert schema_types({"enum": [1]}) is None


@pytest.mark.parametrize(
    ("schema", "reads"),
    [
        ({"type": "object", "properties": {"a": {"type": ["integer", "null"]}}, "required": ["a"]}, True),
        ({"type": "array", "items": {"type": "string"}}, True),
        ({"type": "array", "items": [{"type": "string"}, {"type": "number"}]}, True),
        ({}, True),
        ({"type": "strnig"}, False),
        ({"type": ["string", "date"]}, False),
        ({"properties": {"a": {"type": "wrong"}}}, False),
        ({"properties": []}, False),
        ({"required": "a"}, False),
        ({"items": [{"type": "x"}]}, False),
        ([], False),
    ],
)
def test_whether_a_fetched_schema_reads_as_a_json_schema(schema: Any, reads: bool) -> None:
    assert parseable(schema) is reads
