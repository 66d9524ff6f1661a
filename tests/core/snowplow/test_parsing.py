"""The Arrow-batch field checks: a batch split as a plain split splits it, each failing line its
own messages, the field table's counts."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events_manifest._snowplow import fields, parsing, truncation
from events_manifest._snowplow.fields import FIELDS, MIN_FIELDS
from events_manifest._snowplow.legacy_bad_rows import INVALID_UTF8
from events_manifest._snowplow.parsing import split_and_check
from tests.examples import examples
from tests.shred_helpers import java_substring, line

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def test_a_batch_splits_pads_and_joins_like_python() -> None:
    lines = [line(A), line(A, fields=MIN_FIELDS), line(A, fields=120, page_title="caf\u00e9")]
    found = split_and_check(pa.array(lines))
    for row, text in enumerate(lines):
        padded = text.split("\t") + [""] * (FIELDS - len(text.split("\t")))
        assert found.event_id[row].as_py() == padded[fields.EVENT_ID]
        assert found.fingerprint[row].as_py() == padded[fields.EVENT_FINGERPRINT]
        assert found.atomic_before[row].as_py() == "\t".join(padded[i] for i in fields.ATOMIC_BEFORE)
        assert found.atomic_after[row].as_py() == "\t".join(padded[i] for i in fields.ATOMIC_AFTER)
        assert [column[row].as_py() for column in found.json] == [padded[i].encode() for i in fields.JSON_FIELDS]
    assert found.errors == {}


def test_only_the_failing_lines_get_messages_each_line_its_own() -> None:
    raw = pa.array([line(A).encode(), b"caf\xe9", line("x" * 90).encode(), line(A).encode() + b"\xff"])
    found = split_and_check(raw.view(pa.string()))
    assert found.errors == {
        1: [INVALID_UTF8, "Line does not match Snowplow enriched event (expected 108+ fields; found 1)"],
        2: [f"Field [event_id]: [{'x' * 90}] is not a valid UUID"],
        3: [INVALID_UTF8],
    }
    assert found.event_id.to_pylist() == [A, None, "x" * 90, A]
    assert found.json[0][1].as_py() is None, "no JSON to check on a line of the wrong shape"


_FIELD_TEXT = st.text(st.characters(blacklist_characters="\t\n", blacklist_categories=["Cs"]), max_size=4)


_COUNTS = st.sampled_from(
    [1, 2, fields.EVENT_ID + 1, MIN_FIELDS - 1, MIN_FIELDS, 121, 122, 123, 124, FIELDS - 1, FIELDS, FIELDS + 1]
)


@settings(max_examples=examples(75), deadline=None)
@given(
    st.lists(_COUNTS.flatmap(lambda n: st.lists(_FIELD_TEXT, min_size=n, max_size=n)), min_size=1, max_size=6),
    st.integers(0, 2),
)
def test_fields_are_found_as_a_plain_split_finds_them(rows: list[list[str]], skip: int) -> None:
    """Any number of fields, empty or not, in an array that may be a slice of a larger one."""
    rows = [row + [A] * (fields.EVENT_ID + 1 - len(row)) if len(row) > 3 else row for row in rows]
    lines = ["\t".join(row) for row in rows]
    found = split_and_check(pa.array(["x\ty"] * skip + lines)[skip:])
    for row, text in enumerate(lines):
        split = text.split("\t")
        if not MIN_FIELDS <= len(split) <= FIELDS:
            assert found.event_id[row].as_py() is None
            assert found.atomic_after[row].as_py() is None
            continue
        padded = split + [""] * (FIELDS - len(split))
        cut = [
            java_substring(text, truncation.MAX_LENGTHS.get(name, 2 * len(text)))
            for text, name in zip(padded, fields.FIELD_NAMES, strict=True)
        ]
        assert found.event_id[row].as_py() == padded[fields.EVENT_ID]
        assert found.fingerprint[row].as_py() == padded[fields.EVENT_FINGERPRINT]
        assert found.collector_tstamp[row].as_py() == padded[fields.COLLECTOR_TSTAMP]
        assert found.atomic_before[row].as_py() == "\t".join(cut[i] for i in fields.ATOMIC_BEFORE)
        assert found.atomic_after[row].as_py() == "\t".join(cut[i] for i in fields.ATOMIC_AFTER)
        assert [column[row].as_py() for column in found.json] == [padded[i].encode() for i in fields.JSON_FIELDS]


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(_COUNTS.flatmap(lambda n: st.lists(_FIELD_TEXT, min_size=n, max_size=n)), max_size=9),
    st.integers(0, 2),
    st.sampled_from([pa.string(), pa.large_string(), pa.binary()]),
    st.integers(1, 4),
)
def test_columns_of_the_full_lines_are_a_plain_split_s(
    rows: list[list[str]], skip: int, kind: pa.DataType, block: int
) -> None:
    """`Spans.columns` (the transformer's split): each field of the lines of 131 fields, column by
    column, in an array that may be a slice, gathered a few lines at a time."""
    lines = ["\t".join(row) for row in rows]
    texts = pa.array(["x\ty"] * skip + lines, pa.string()).cast(kind)[skip:]
    spans = parsing.Spans(parsing.as_bytes(texts))
    wide = spans.count == FIELDS
    assert wide.tolist() == [len(row) == FIELDS for row in rows]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parsing, "COLUMN_BLOCK", block)
        columns = spans.columns(wide, kind)
    full = [row for row in rows if len(row) == FIELDS]
    assert [column.type for column in columns] == [kind] * FIELDS
    text = [column if kind != pa.binary() else column.cast(pa.string()) for column in columns]
    assert [column.to_pylist() for column in text] == [[row[j] for row in full] for j in range(FIELDS)]
