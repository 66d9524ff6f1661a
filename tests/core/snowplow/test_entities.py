"""The two readers of the JSON columns agree: where the compact reader (msgspec) accepts a row, the
general walker finds the same entities and no error; everything else falls back to the walker."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from events_manifest._snowplow.entities import Entity, compact, compact_entities, entities_of, read_rows
from tests.examples import examples
from tests.shred_helpers import CONTEXTS_URI, contexts, sdj, unstruct

WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
LINK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
raw_tokens = st.sampled_from(
    ["1.50", "-0", "1e400", "01", "1.", ".5", "NaN", "Infinity", '"\\u00e9"', '"\\/"', '"\\x"', '"\\ud800"', '"\x01"',
     '"é"', "[]", "{}", "[1,]", '{"a":1,"a":2}', "true", "nul", '"\\"', '"a\\"b"']
)  # fmt: skip


json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=3)


@st.composite
def data_texts(draw: st.DrawFn) -> str:
    """An object's text: compact or spaced JSON of a random value, or hand-made tokens in one."""
    value = draw(json_objects)
    separators = (",", ":") if draw(st.booleans()) else (", ", ": ")
    text = json.dumps(value, separators=separators, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 3)) == 0:
        text = '{"k":' + draw(raw_tokens) + "}"
    return text


ESCAPED = "iglu:com.acme\\/x/jsonschema/1-0-0"
schemas = st.sampled_from([WEB_PAGE, LINK, "iglu:com.acme/x/jsonschema/1-0-0"] * 3 + ["not iglu", ESCAPED])


entities = st.builds(sdj, schemas, data_texts())
column_kinds = {
    "": st.just(""),
    "listed": st.lists(entities, max_size=3).map(lambda e: contexts(*e)),
    "wrapped": entities.map(unstruct),
}
context_column = st.sampled_from(["", "listed", "listed", "listed", "wrapped"])
unstruct_column = st.sampled_from(["", "wrapped", "wrapped", "wrapped", "listed"])
"""What a row's columns are drawn from: made once, not at each draw (Hypothesis checks and labels
a strategy where it is first drawn from: about a third of the properties' time, when made in
`columns`)."""


@st.composite
def columns(draw: st.DrawFn) -> tuple[str, str, str]:
    """The three JSON columns of a row, mostly enrichment's compact form, then perhaps damaged."""
    row = [draw(column_kinds[draw(kind)]) for kind in (context_column, unstruct_column, context_column)]
    for i in draw(st.lists(st.integers(0, 5), max_size=1)):
        if i > 2:
            continue
        if row[i]:
            at = draw(st.integers(0, len(row[i])))
            edit = draw(st.sampled_from([" ", ",", "}", "]", '"', "\\", "x", '"schema":"a",', ""]))
            cut = draw(st.integers(0, 1))
            row[i] = row[i][:at] + edit + row[i][at + cut :]
    return row[0], row[1], row[2]


def _compact(row: tuple[str, str, str]) -> list[Entity] | None:
    return compact_entities(*(c.encode() for c in row))


@settings(max_examples=examples(300), deadline=None)
@given(columns())
@example(("", "", ""))
def test_compact_reader_agrees_with_the_walker(row: tuple[str, str, str]) -> None:
    fast = _compact(row)
    entities, errors = entities_of(*row)
    if fast is not None:
        assert errors == []
        assert fast == entities


@settings(max_examples=examples(75), deadline=None)
@given(st.lists(columns(), max_size=6))
def test_batch_reader_gives_each_row_what_the_walker_finds(rows: list[tuple[str, str, str]]) -> None:
    found = read_rows(*([row[i].encode() or None for row in rows] for i in range(3)))
    assert len(found.entity_ends) == len(found.error_ends) == len(rows)
    entity_start = error_start = 0
    for row, entity_end, error_end in zip(rows, found.entity_ends, found.error_ends, strict=True):
        entities, errors = entities_of(*row)
        parts, data = found.parts[entity_start:entity_end], found.data[entity_start:entity_end]
        assert [Entity(*iglu, raw.decode()) for iglu, raw in zip(parts, data, strict=True)] == entities
        assert found.errors[error_start:error_end] == errors
        entity_start, error_start = entity_end, error_end


def test_compact_reader_takes_what_enrichment_writes() -> None:
    page = '{"id":"a","price":1.50,"t":"\\u00e9\\/"}'
    row = (contexts(sdj(WEB_PAGE, page)), unstruct(sdj(LINK, '{"u":"x"}')), "")
    assert _compact(row) == [  # the unstruct event first, as the reference reads them
        Entity("com.snowplowanalytics.snowplow", "link_click", "jsonschema", "1-0-1", '{"u":"x"}'),
        Entity("com.snowplowanalytics.snowplow", "web_page", "jsonschema", "1-0-0", '{"id":"a","price":1.50,"t":"é/"}'),
    ]


@pytest.mark.parametrize(
    ("data", "written"),
    [
        ('{"a":1,"b":"x y"}', '{"a":1,"b":"x y"}'),  # already compact: as is
        ('{ "b" : [ 1 , 2 ] ,\n\t"a" : { } }', '{"b":[1,2],"a":{}}'),  # keys in their order
        ('{"t":" spaced  out "}', '{"t":" spaced  out "}'),  # inside a string: kept
        ('{"n":1.50,"e":1E+2,"z":-0}', '{"n":1.50,"e":1E+2,"z":-0}'),  # numbers as written
        ('{"s":"\\u00e9\\/\\u0041"}', '{"s":"é/A"}'),  # needless escapes undone
        ('{"s":"\\" \\\\ \\n \\u0001 \\u2028"}', '{"s":"\\" \\\\ \\n \\u0001 \u2028"}'),  # needed ones kept
        ('{"s":"\\ud83d\\ude00"}', '{"s":"\U0001f600"}'),  # a pair: one character
        ('{"s":"\\ud800"}', '{"s":"\\ud800"}'),  # half a character: kept escaped
        ('{"k\\u0041" : "v"}', '{"kA":"v"}'),  # keys are strings too
    ],
)
def test_entities_are_written_compact_as_the_reference_reserialises_them(data: str, written: str) -> None:
    """Both readers give the compact form (`entities.compact`): the walker for any spacing, and the
    batch reader (the fast one where it takes the row) for enrichment's envelopes around data of
    any form."""
    assert compact(data) == written
    spaced = '{ "schema" : "' + CONTEXTS_URI + '", "data" : [' + sdj(WEB_PAGE, data) + "] }"
    entities, errors = entities_of(spaced, None, None)
    assert errors == [] and [entity.data for entity in entities] == [written]
    found = read_rows([contexts(sdj(WEB_PAGE, data)).encode()], [None], [None])
    assert [raw.decode() for raw in found.data] == [written]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_is_strict(constant: str) -> None:
    column = contexts(sdj(WEB_PAGE, '{"a":' + constant + "}"))
    entities, errors = entities_of(column, None, None)
    assert entities == []
    assert errors == [f"Field [context]: invalid JSON [{column}] with parsing error: {constant} is not a JSON value"]


def test_messages_name_the_column_unstruct_first_and_quote_the_json() -> None:
    broken_unstruct = '{"schema":"' + "x" * 200 + '","data":{}}'
    entities, errors = entities_of("{oops", broken_unstruct, None)
    assert entities == []
    assert errors == [
        f"Field [ue_properties]: [{broken_unstruct}] is not self-describing JSON of the expected shape: schema "
        f"[{'x' * 200}] is not iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0",
        "Field [context]: invalid JSON [{oops] with parsing error: Expecting property name enclosed in double "
        "quotes at character 1",
    ]


@pytest.mark.parametrize(
    "column",
    [
        contexts(sdj(WEB_PAGE, '{"a":1}')).replace('"data":', '"data": '),  # a space
        '{"data":[],"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"}',  # key order
        contexts(sdj(WEB_PAGE, '{"a":1}'))[:-1] + ',"schema":"x"}',  # a repeated property
        contexts(sdj(WEB_PAGE.replace("/", "\\/"), "{}")),  # an escape in a schema
        contexts(sdj(WEB_PAGE, '{"a":NaN}')),  # Python's json takes NaN, msgspec does not
        contexts(sdj(WEB_PAGE, '{"a":"\\ud800"}')),  # a lone surrogate
        contexts(sdj(WEB_PAGE, "[1]")),  # data not an object: the walker words the error
        contexts(sdj(WEB_PAGE, '{"a":1}')) + " x",
    ],
)
def test_anything_else_goes_to_the_walker(column: str) -> None:
    assert compact_entities(column.encode(), None, None) is None


def test_invalid_utf8_goes_to_the_walker() -> None:
    for data in ('{"a":"\udcff"}', '{"\udcff":1}'):
        column = contexts(sdj(WEB_PAGE, data)).encode("utf-8", "surrogateescape")
        assert compact_entities(column, None, None) is None
