"""The transformer's columnar parse against its per-event decoder: over generated lines of every
field kind (the shapes enrichers write, other shapes the Analytics SDK reads, values it refuses,
lines of other widths), both give the same rows, bad rows and types."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events_manifest._snowplow.fields import FIELD_KINDS, FIELD_NAMES
from events_manifest._transformer import columnar
from events_manifest._transformer.decode.event import Event, decode
from events_manifest._transformer.decode.jvm import NANOS
from events_manifest._transformer.output.parquet import EntityColumn, ParquetColumns, build_columns
from events_manifest._transformer.output.parquet_types import (
    BOOLEAN,
    INTEGER,
    JSON,
    STRING,
    Array,
    Decimal,
    Field,
    Struct,
)
from events_manifest._transformer.output.shred_mode import atomic_line
from events_manifest._transformer.parse_decide import Parse
from events_manifest.iglu import ResolverConfig
from tests.examples import examples
from tests.transformer_helpers import RESOLVER

UUID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def _sdj(uri: str, data: str) -> str:
    return f'{{"schema":"{uri}","data":{data}}}'


PAGE = _sdj("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", '{"id":"p1"}')
PRODUCT = _sdj("iglu:com.acme/product/jsonschema/1-0-2", '{"sku":"S","price":12.50,"n":3,"ok":true,"tags":["a"]}')
CONTEXTS = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"
UNSTRUCT = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
THING = "iglu:com.acme/thing/jsonschema/1-0-0"
WRITTEN = {
    "s": ["abc", 'q"uote', "back\\slash", "ünï cödé", "a/b", "😀", " padded "],
    "i": ["0", "-5", "123", "2147483", "-99999999"],
    "d": ["1.5", "-0.0", "0.0", "37.7749", "-122.4194", "1234567.1", "0.001", "0.1234567", "12", "1e3", "12.50",
          "0.0005", "12345678.5", "0.100", "123456.12345678", "0.1234567890123456", "9999999.99999999", "4.35"],
    "b": ["0", "1"],
    "t": ["2026-11-01 06:00:00", "2026-11-01 06:00:00.123", "2026-11-01 06:00:00.000", "2026-11-01 06:00:00.1",
          "2026-11-01 06:00:00.123456", "2026-11-01 06:00:00.123456789", "2026-11-01 06:00:00.120000",
          "2024-02-29 00:00:00", "0000-01-01 00:00:00", "9999-12-31 23:59:59.999", "1969-12-31 23:59:59.5",
          "1900-01-01 00:00:00"],
    "U": [UUID, "00000000-0000-0000-0000-000000000000"],
    "C": [
        _sdj(CONTEXTS, f"[{PAGE}]"),
        _sdj(CONTEXTS, f"[{PAGE},{PRODUCT},{PAGE}]"),
        _sdj(CONTEXTS, "[" + _sdj("iglu:com.acme/product/jsonschema/2-0-0", '{"price":1.0}') + f",{PRODUCT}]"),
        _sdj(CONTEXTS, "[" + _sdj(THING, '{"a": 1, "b" :[1, 2]}') + "]"),
        _sdj(CONTEXTS, "[" + _sdj(THING, '{"a":"\\u00e9\\/\\n","b":"\x85"}') + "]"),
        _sdj(CONTEXTS, "[" + _sdj(THING, '{"a":"\\u0008\\b\\f\\u000c\\t\\u0001\\"q"}') + "]"),
        _sdj(CONTEXTS, "[" + _sdj(THING, '{"a":1,"a":2,"big":123456789012345678901234}') + "]"),
        _sdj(CONTEXTS, "[" + _sdj(THING, '{"e":1e3,"z":-0,"f":0.5,"g":1E+2,"h":-1.25e-7}') + "]"),
        _sdj(CONTEXTS, "[" + _sdj("iglu:com.acme/ThingCamel/jsonschema/1-0-0", "null") + "]"),
        _sdj(CONTEXTS, "[" + _sdj("iglu:com.acme/thing/jsonschema/1-0-0", '"\x7f"') + "]"),
        _sdj(CONTEXTS, "[]"),
    ],
    "E": [
        _sdj(UNSTRUCT, _sdj("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", '{"targetUrl":"x"}')),
        _sdj(UNSTRUCT, _sdj("iglu:com.acme/event/jsonschema/1-0-0", '{"v": 2.50, "w":[]}')),
        _sdj(UNSTRUCT, _sdj(THING, '{"a":"\\u00e9"}')),
    ],
}  # fmt: skip
"""Values in the shapes enrichers write (the columnar path takes them) and values its JSON
columns print from their own parse."""
WRITTEN["S"], WRITTEN["T"] = WRITTEN["s"], WRITTEN["t"]
OTHER = {
    "s": ["\x01ctl", "\x7fdel", "\u0085nel"],
    "i": ["+5", "007", "-0", "2147483647", "2147483648", "-2147483648", "1.5", "abc"],
    "d": ["NaN", "Infinity", " 1.5", "abc", "0x1p3", "1.5d", "+1.5"],
    "b": ["true", "2"],
    "t": ["2023-02-29 00:00:00", "2026-13-01 00:00:00", "2026-04-31 00:00:00", "2026-11-01T06:00:00",
          "2026-11-01 24:00:00", "2026-11-01 23:59:60", "2026-11-01 06:00:00.", "garbage"],
    "U": [UUID.upper(), "1-2-3-4-5", "not-a-uuid", UUID[:-1]],
    "C": [
        f'{{"data":[{PAGE}],"schema":"{CONTEXTS}"}}',
        f'{{ "schema" : "{CONTEXTS}", "data" : [{PAGE}] }}',
        _sdj(CONTEXTS, "{}"),
        _sdj("iglu:com.acme/contexts/jsonschema/1-0-1", f"[{PAGE}]"),
        _sdj(CONTEXTS, '[{"schema":"iglu:com.acme/x/jsonschema/1-0"}]'),
        _sdj(CONTEXTS, '[{"schema":"not a uri","data":{}}]'),
        _sdj(CONTEXTS, '[{"data":{},"schema":"iglu:com.acme/x/jsonschema/1-0-0","more":1}]'),
        "{",
        "[]",
        f'{{"schema":"{CONTEXTS}"}}',
    ],
    "E": [
        _sdj("iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-1", PAGE),
        _sdj(UNSTRUCT, '"text"'),
        _sdj(CONTEXTS, f"[{PAGE}]"),
        "nope",
    ],
}  # fmt: skip
"""Values the per-event decoder takes: shapes the Analytics SDK reads otherwise, values it refuses."""
OTHER["S"], OTHER["T"] = [*OTHER["s"], ""], [*OTHER["t"], ""]
COMMON = {
    "s": "", "S": "x", "i": "", "d": "", "b": "", "t": "", "T": "2026-11-01 06:00:00.123", "U": UUID, "C": "", "E": "",
}  # fmt: skip


def field(kind: str, other: int) -> st.SearchStrategy[str]:
    """A field of `kind` in one draw: in another shape one time in `other + 1` (never with `other`
    0), else in a shape enrichers write one time in four, else common; each shape as likely as the
    others of its kind."""
    others, written = OTHER[kind] if other else [], WRITTEN[kind]
    rest = 4 * len(written)  # the draws that are not in another shape: written, or common

    def shape(n: int) -> str:
        if n < len(others) * rest:
            return others[n % len(others)]
        n %= rest
        return written[n] if n < len(written) else COMMON[kind]

    return st.integers(0, rest * max(1, len(others) * (other + 1)) - 1).map(shape)


FIELDS = {other: st.tuples(*(field(FIELD_KINDS[name], other) for name in FIELD_NAMES)) for other in (0, 200, 30)}
"""A line's fields, a draw each, for each chance of other shapes (`field`): made once, not at each
line (Hypothesis checks and labels a strategy where it is first drawn from)."""
WIDTHS = st.sampled_from([len(FIELD_NAMES)] * 12 + [1, 130, 132])


@st.composite
def lines(draw: st.DrawFn) -> str:
    """An enriched line: each field empty or common, or in a shape enrichers write; on some lines
    (drawn) a few in other shapes, or a width other than 131 fields."""
    fields = draw(FIELDS[draw(st.sampled_from([0, 0, 0, 200, 30]))])
    return "\t".join([*fields, "extra"][: draw(WIDTHS)])


@settings(max_examples=examples(30), deadline=None)
@given(
    st.lists(lines(), min_size=1, max_size=12),
    st.booleans(),
    st.sampled_from([None, 0, 1_700_000_000 * NANOS + 5]),
)
def test_the_columnar_parse_gives_the_per_event_rows(batch: list[str], wide_rows: bool, minimum: int | None) -> None:
    parse = Parse(minimum=minimum, now=1_800_000_000 * NANOS, wide_rows=wide_rows)
    encoded = pa.array([line.encode() for line in batch], pa.binary())
    expected = parse.per_event(encoded.to_pylist()).to_pylist()
    assert parse.batch(encoded).to_pylist() == expected
    within = pa.array([b"before", *encoded.to_pylist()], pa.binary()).slice(1)  # a batch's lines off its buffer's start
    assert parse.batch(within).to_pylist() == expected


def test_the_parsed_rows_share_the_lines_buffer() -> None:
    """A batch's good lines are passed on as they were read, not copied; its bad rows hold none."""
    good = "\t".join(COMMON[FIELD_KINDS[name]] for name in FIELD_NAMES)
    text = pa.array([good, "not an event", good.replace(UUID, UUID.upper())])
    parsed = Parse(wide_rows=False).batch(text)
    assert parsed.column("good").to_pylist() == [True, False, True]
    assert parsed.column("line").to_pylist() == [good, None, text[2].as_py()]
    assert parsed.column("line").buffers()[2].address == text.buffers()[2].address


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(lines(), min_size=1, max_size=12))
def test_the_columnar_events_are_the_decoders(batch: list[str]) -> None:
    """The events Parquet and shred mode write from, built column by column: each one the per-event
    decoder's; the lines it does not take are left to the decoder (None)."""
    found, tsv = columnar.decoded(pa.array(batch), tsv=True)
    assert len(found) == len(batch) == len(tsv)
    for line, event, atomic in zip(batch, found, tsv, strict=True):
        decoder = decode(line, None)
        assert event is None or event == decoder
        assert (atomic is None) == (event is None)
        assert atomic is None or (isinstance(decoder, Event) and atomic == atomic_line(decoder))


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(lines(), min_size=1, max_size=12), st.sampled_from([None, 1_700_000_000 * NANOS + 5]))
def test_the_good_events_of_a_batch_parse_split_are_the_decoders(batch: list[str], minimum: int | None) -> None:
    """Lines decided where they are read decode their good events from the columns `Parse` split
    (`Parse.parsed`): each the decoder's, with its atomic TSV line, as `columnar.decoded` gives them."""
    parse = Parse(minimum=minimum, now=1_800_000_000 * NANOS, wide_rows=False)
    parsed, decoding = parse.parsed(pa.array([line.encode() for line in batch], pa.binary()))
    assert decoding is not None
    events, tsv = decoding(tsv=True)
    alone, _ = columnar.decoded(pa.array(batch), tsv=False)
    for line, good, event, atomic, by_itself in zip(
        batch, parsed.column("good").to_pylist(), events, tsv, alone, strict=True
    ):
        decoder = decode(line, None)
        assert event is None or (good and event == decoder)
        assert event is not None or not good or by_itself is None, "a good event the columns hold is decoded"
        assert (atomic is None) == (event is None)
        assert atomic is None or (isinstance(decoder, Event) and atomic == atomic_line(decoder))


def test_each_shape_alone_on_a_line_of_common_fields() -> None:
    """Every value of `WRITTEN` and `OTHER`, in every field of its kind, alone on a line otherwise
    common: one batch, the same rows by both paths (a check the columnar path skipped shows here)."""
    batch = []
    for index, name in enumerate(FIELD_NAMES):
        kind = FIELD_KINDS[name]
        for value in [*WRITTEN[kind], *OTHER[kind]]:
            fields = [COMMON[FIELD_KINDS[other]] for other in FIELD_NAMES]
            fields[index] = value
            batch.append("\t".join(fields).encode())
    for minimum in (None, 1_700_000_000 * NANOS + 5):
        for wide_rows in (True, False):
            parse = Parse(minimum=minimum, now=1_800_000_000 * NANOS, wide_rows=wide_rows)
            lines = pa.array(batch, pa.binary())
            assert parse.batch(lines).to_pylist() == parse.per_event(lines.to_pylist()).to_pylist()
    texts = [line.decode() for line in batch]
    events, tsv = columnar.decoded(pa.array(texts), tsv=True)
    assert all(event is None or event == decode(text, None) for text, event in zip(texts, events, strict=True))
    for text, atomic in zip(texts, tsv, strict=True):
        decoder = decode(text, None)
        assert atomic is None or (isinstance(decoder, Event) and atomic == atomic_line(decoder))
    assert sum(event is not None for event in events) > len(texts) // 2, "the shapes enrichers write are taken"


def test_a_batch_with_bytes_that_are_not_utf8_is_read_as_the_jvm_reads_them() -> None:
    from tests.transformer_helpers import event

    batch = pa.array([event(UUID, "f").encode(), event(UUID, "g", app_id="caf\xe9").encode("latin-1")], pa.binary())
    rows = Parse().batch(batch).to_pylist()
    assert rows == Parse().per_event(batch.to_pylist()).to_pylist()
    assert '"app_id":"caf\ufffd"' in rows[1]["value"]


@pytest.fixture
def fallen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines each call of the per-event decoder (`Parse.per_event`) got: which the
    properties above would not notice, as they compare results, not paths."""
    calls: list[int] = []
    original = Parse.per_event

    def per_event(self: Parse, lines: Sequence[str | bytes]) -> pa.RecordBatch:
        calls.append(len(lines))
        return original(self, lines)

    monkeypatch.setattr(Parse, "per_event", per_event)
    return calls


def test_the_common_shapes_are_taken_by_the_columnar_path(fallen: list[int]) -> None:
    """Lines as enrichers write them do not fall back to the per-event decoder."""
    fields = [COMMON[FIELD_KINDS[name]] for name in FIELD_NAMES]
    fields[FIELD_NAMES.index("contexts")] = WRITTEN["C"][1]
    fields[FIELD_NAMES.index("geo_latitude")] = "37.7749"
    fields[FIELD_NAMES.index("geo_longitude")] = "-122.4194"
    rows = Parse().batch(pa.array(["\t".join(fields).encode()] * 3, pa.binary())).to_pylist()
    assert fallen == [] and len(rows) == 3 and all(row["good"] for row in rows)
    assert '"geo_location":"37.7749,-122.4194"' in rows[0]["value"]


def test_control_characters_leave_the_columnar_path_only_where_json_is_rendered(fallen: list[int]) -> None:
    """A text field holding control characters (C0 and C1): its wide-row JSON escapes them, which
    the decoder writes; Parquet and shred mode take the value as it is, by the columnar path, and
    get the decoder's rows."""
    fields = [COMMON[FIELD_KINDS[name]] for name in FIELD_NAMES]
    fields[FIELD_NAMES.index("app_id")] = "a\x01b\x7fc\x85d"
    line = "\t".join(fields)
    for wide_rows, decoded_alone in ((True, 1), (False, 0)):
        parse = Parse(wide_rows=wide_rows)
        rows = parse.batch(pa.array([line.encode()], pa.binary())).to_pylist()
        assert sum(fallen) == decoded_alone, "the lines the per-event decoder read"
        assert rows == parse.per_event([line.encode()]).to_pylist() and rows[0]["good"]
        fallen.clear()
    taken, atomic, _ = columnar.kept_values(pa.array([line]))
    assert taken.tolist() == [True] and atomic["app_id"].to_pylist() == ["a\x01b\x7fc\x85d"]
    [event], _ = columnar.decoded(pa.array([line]), tsv=False)
    assert event == decode(line, None)


def _parquet_columns() -> ParquetColumns:
    """Entity columns of the generated lines' entities: the web page context and the link click
    event from Iglu Central's copies, a product context of a struct (money, ints, a list) and a
    thing context of JSON, so that values fit, misfit and are left out."""
    product = Struct(
        (
            Field("n", INTEGER, True, frozenset({"n"})),
            Field("ok", BOOLEAN, True, frozenset({"ok"})),
            Field("price", Decimal(9, 2), True, frozenset({"price"})),
            Field("sku", STRING, False, frozenset({"sku"})),
            Field("tags", Array(STRING, True), True, frozenset({"tags"})),
        )
    )
    built = build_columns(
        [
            ("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", "CONTEXT"),
            ("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", "SELF_DESCRIBING_EVENT"),
        ],
        ResolverConfig.parse(json.dumps(RESOLVER)),
        synthetic=True,
    )
    extra = (
        EntityColumn(Field("contexts_com_acme_product_1", Array(product, True), True, frozenset()), True,
                     frozenset({"iglu:com.acme/product/jsonschema/1-0-2"}), "iglu:com.acme/product/jsonschema/1-0-2"),
        EntityColumn(Field("contexts_com_acme_thing_1", Array(JSON, True), True, frozenset()), True,
                     frozenset({THING}), THING),
    )  # fmt: skip
    return ParquetColumns((*built.entities, *extra))


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(lines(), min_size=1, max_size=12))
def test_parquet_rows_built_from_columns_are_the_decoded_events_rows(batch: list[str]) -> None:
    """Parquet rows of the lines `columnar.kept_values` takes, built without an event: the rows and
    misfits of their decoded events (`ParquetColumns.rows`); the lines it leaves are the decoder's."""
    columns = _parquet_columns()
    taken, atomic, entities = columnar.kept_values(pa.array(batch))
    events = [decode(line, None) for line, took in zip(batch, taken.tolist(), strict=True) if took]
    assert all(isinstance(event, Event) for event in events)
    built, failures = columns.rows_of(atomic, entities)
    decoded, decoded_failures = columns.rows(events)  # type: ignore[arg-type]
    assert built.equals(decoded), "the same rows (compared in Arrow: a year 0 has no datetime)"
    assert failures == decoded_failures
    alone, _ = columnar.decoded(pa.array(batch), tsv=False)
    assert taken.tolist() == [event is not None for event in alone]
