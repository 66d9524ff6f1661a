"""Iglu schema keys: the grammar checked before any URL or path is built, the parts of a key, and
a vendor that cannot be a path segment."""

from __future__ import annotations

import pytest

from events_manifest._iglu.keys import SchemaKey, parse_parts


def test_a_key_parses_into_its_parts_and_prints_back() -> None:
    key = SchemaKey.parse("iglu:com.acme-1/link_click/jsonschema/12-0-3")
    assert key is not None
    assert (key.vendor, key.name, key.format, key.version) == ("com.acme-1", "link_click", "jsonschema", "12-0-3")
    assert (key.model, key.revision, key.addition) == (12, 0, 3)
    assert str(key) == key.uri == "iglu:com.acme-1/link_click/jsonschema/12-0-3"
    assert key.path == "schemas/com.acme-1/link_click/jsonschema/12-0-3" and key.path_safe


@pytest.mark.parametrize(
    "text",
    [
        "iglu:com.acme/x/jsonschema/0-0-0",  # a model of 0
        "iglu:com.acme/x/jsonschema/1-01-0",  # a leading zero
        "iglu:com.acme/x/jsonschema/1-0",
        "iglu:com.acme/x.y/jsonschema/1-0-0",  # a dot in a name
        "iglu:com acme/x/jsonschema/1-0-0",
        "com.acme/x/jsonschema/1-0-0",
        "iglu:com.acme/x/jsonschema/1-0-0/extra",
    ],
)
def test_what_is_not_iglu_grammar_is_no_key(text: str) -> None:
    assert SchemaKey.parse(text) is None and parse_parts(text) is None


def test_a_part_outside_the_grammar_is_refused_when_built_and_a_dot_vendor_is_no_path() -> None:
    with pytest.raises(ValueError, match=r"\[../etc\] is not an Iglu schema vendor"):
        SchemaKey("../etc", "x", "jsonschema", "1-0-0")
    assert SchemaKey.parse(None) is None
    dots = SchemaKey.parse("iglu:../x/jsonschema/1-0-0")
    assert dots is not None and not dots.path_safe
