"""The Arrow-batch field checks (`fields`) mean what Spark's own functions mean: timestamps as
Spark's cast reads them, the patterns as Spark's `rlike` reads them, fields as a plain split."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from events_manifest.snowplow import fields, parsing, truncation
from events_manifest.snowplow.bad_rows import INVALID_UTF8
from events_manifest.snowplow.fields import FIELDS, MIN_FIELDS
from events_manifest.snowplow.parsing import UUID_PATTERN, split_and_check
from spark_integration import enriched
from tests.shred_helpers import line

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def _calendar(text: str) -> int | None:
    """The timestamp rule, told by Python's own calendar: `yyyy-MM-dd HH:mm:ss.f` (f: 1 to 9
    digits), a real date and time, as epoch microseconds."""
    match = re.fullmatch(r"([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})\.([0-9]{1,9})", text)
    if match is None:
        return None
    try:
        moment = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    seconds = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(seconds=1)
    return seconds * 1_000_000 + int(match[2][:6].ljust(6, "0"))


def test_timestamps_need_a_fraction_and_a_real_calendar(spark: Any) -> None:
    """Every combination of edge values of every part, odd fractions and stray characters; the
    scan's cheaper test (a Java regex, see `enriched.batch_keys`) takes every valid one."""
    texts = [
        f"{year}-{month}-{day} {hour}:{minute}:{second}{suffix}"
        for year, month, day, hour, minute, second, suffix in itertools.product(
            ["0000", "0001", "1582", "1900", "1970", "2000", "2023", "2024", "2100", "9999"],
            ["00", "01", "02", "04", "12", "13"],
            ["00", "01", "28", "29", "30", "31", "32"],
            ["00", "23", "24"],
            ["00", "59", "60"],
            ["00", "59", "60"],
            ["", ".", ".1", ".123", ".123456", ".1234567", ".123456789", ".1234567890", "Z", ".1 ", ".1\r", "\n"],
        )
    ]
    texts += ["", "2026-11-01", "2026-11-01T06:00:00.000", " 2026-11-01 06:00:00.0", "2026-1-01 06:00:00.0"]
    texts += ["\uff12\uff10\uff12\uff16-11-01 06:00:00.0", "2026-11-01 06:00:00.\uff11"]
    by_arrow = parsing.epoch_micros(pa.array(texts).view(pa.binary())).to_pylist()
    assert by_arrow == [_calendar(text) for text in texts]
    assert 1_000 < sum(value is not None for value in by_arrow) < len(texts) / 4
    frame = spark.createDataFrame([(t,) for t in texts], "text string")
    shaped = [row[0] for row in frame.select(F.col("text").rlike(parsing.TSTAMP_PATTERN)).collect()]
    assert all(shaped[i] for i, micros in enumerate(by_arrow) if micros is not None)
    assert parsing.epoch_micros(pa.array([b"2026-11-01 06:00:00"])).to_pylist() == [None], "no fraction: invalid"


def test_patterns_end_at_the_end_of_the_text_for_java_and_re2(spark: Any) -> None:
    ids = [A, A + "\r", A + "\n", A + "\u2028", A.upper(), A + " "]
    frame = spark.createDataFrame([(i,) for i in ids], "id string")
    by_spark = [row[0] for row in frame.select(F.col("id").rlike(UUID_PATTERN)).collect()]
    by_arrow = [bool(x) for x in pc.match_substring_regex(pa.array(ids), UUID_PATTERN).to_pylist()]
    assert by_spark == by_arrow == [True, False, False, False, False, False]


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


def test_atomic_fields_are_cut_to_their_limits_in_characters() -> None:
    agent = "é" * 600 + "a" * 600  # 1,200 characters, 1,800 bytes: cut to 1,000 characters
    title = "€" * 2000  # 2,000 characters of 3 bytes, within page_title's 2,000
    text = line(A, useragent=agent, page_title=title, app_id="a" * 256)
    found = split_and_check(pa.array([text, line(A, useragent="x" * 1000)]))
    after = found.atomic_after[0].as_py().split("\t")
    names = [fields.FIELD_NAMES[i] for i in fields.ATOMIC_AFTER]
    assert after[names.index("useragent")] == "é" * 600 + "a" * 400
    assert after[names.index("page_title")] == title
    assert found.atomic_before[0].as_py().split("\t")[0] == "a" * 255
    assert found.atomic_after[1].as_py().split("\t")[names.index("useragent")] == "x" * 1000, "at its limit: whole"
    assert found.json[0][0].as_py() == text.split("\t")[fields.CONTEXTS].encode(), "JSON columns are not cut"


_FIELD_TEXT = st.text(st.characters(blacklist_characters="\t\n", blacklist_categories=["Cs"]), max_size=4)


_COUNTS = st.sampled_from(
    [1, 2, fields.EVENT_ID + 1, MIN_FIELDS - 1, MIN_FIELDS, 121, 122, 123, 124, FIELDS - 1, FIELDS, FIELDS + 1]
)


@settings(max_examples=150, deadline=None)
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
            text[: truncation.MAX_LENGTHS.get(name, len(text))]
            for text, name in zip(padded, fields.FIELD_NAMES, strict=True)
        ]
        assert found.event_id[row].as_py() == padded[fields.EVENT_ID]
        assert found.fingerprint[row].as_py() == padded[fields.EVENT_FINGERPRINT]
        assert found.collector_tstamp[row].as_py() == padded[fields.COLLECTOR_TSTAMP]
        assert found.atomic_before[row].as_py() == "\t".join(cut[i] for i in fields.ATOMIC_BEFORE)
        assert found.atomic_after[row].as_py() == "\t".join(cut[i] for i in fields.ATOMIC_AFTER)
        assert [column[row].as_py() for column in found.json] == [padded[i].encode() for i in fields.JSON_FIELDS]


def test_the_scan_cuts_the_first_fields_as_a_plain_split_finds_them(spark: Any) -> None:
    """The scan's fields (the head split in the JVM) on lines of 1 to 9 fields, empty fields,
    multi-byte text and stray line ends: the field, or null past the line's end; keys are the
    ids' hashes on lines of 7 fields or more, the same for the scan and the join."""
    texts = ["", "a", "é", "\u2028", "x\r", "0c6ef3124"]
    rows = [[texts[(i * k + k) % len(texts)] for i in range(n)] for n in range(1, 10) for k in range(len(texts))]
    lines = ["\t".join(row) + "\t" * extra for row in rows for extra in (0, 1, 5, 6)]
    lines += ["\t".join(f"f{i}é" for i in range(n)) for n in range(1, 10)]
    frame = spark.createDataFrame([(text,) for text in lines], "line string")
    indexes = range(fields.EVENT_ID + 1)
    scanned = enriched.batch_keys(frame).select("key")
    found = frame.select(
        "line",
        *(F.get(F.split(enriched.head(), "\t"), i).alias(f"f{i}") for i in indexes),
        enriched.event_key().alias("key"),
    )
    rows_found = found.collect()
    assert [row.key for row in rows_found] == [row.key for row in scanned.collect()]
    keys = set()
    for row in rows_found:
        split = row.line.split("\t")
        assert [row[f"f{i}"] for i in indexes] == [split[i] if i < len(split) else None for i in indexes]
        if len(split) > fields.EVENT_ID:
            keys.add((row.f6, row.key))
    assert len({k for _, k in keys}) == len({i for i, _ in keys}) > len(texts)
