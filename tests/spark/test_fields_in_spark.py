"""The core's field checks mean what Spark's own functions mean: timestamps as Spark's cast reads
them, the patterns as Spark's `rlike` reads them, the scan's fields as a plain split finds them."""

from __future__ import annotations

import itertools
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

from events_manifest._snowplow import fields, parsing
from events_manifest._snowplow.parsing import UUID_PATTERN
from spark_integration._spark import enriched
from tests.shred_helpers import line

pytestmark = pytest.mark.every_line

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
    etl time's cheaper test (a Java regex, see `enriched.line_etl_second`) takes every valid one."""
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


def test_the_scan_keeps_a_line_of_the_earliest_second_and_checks_it_before_reading_again(
    spark: Any, tmp_path: Any
) -> None:
    """The scan observes a line of the earliest etl second: when it is valid the etl time needs
    no further read; when it is a bad row, that second's other lines and then later seconds are
    read, as before."""
    from spark_integration._spark.scan import earliest_second, scan_batch

    def at(time: str, contexts: str = "") -> str:
        return line(str(uuid.uuid4()), "fp", f"2026-11-01 {time}.000", contexts=contexts)

    good, bad = at("05:00:00"), at("05:00:00", contexts="{")
    (tmp_path / "in.tsv").write_text(f"{at('06:00:00')}\n{bad}\n{good}\n")
    scan = scan_batch(enriched.load_enriched(spark, str(tmp_path / "in.tsv")))
    assert scan.lines == 3 and scan.etl_time is not None
    assert scan.etl_time.strftime("%H:%M:%S") == "05:00:00", "a bad and a good line at that second"

    reads: list[list[str]] = []

    def checked(lines: list[str]) -> bool:
        reads.append(lines)
        return good in lines

    frame = spark.createDataFrame([(at("07:00:00"),)], "line string")  # no line of 05:00:00
    second, text = enriched.line_etl_second(), F.col("line")
    found = earliest_second(frame, "2026-11-01 05:00:00", second, text, checked, lambda _: False, good)
    assert (found, reads) == ("2026-11-01 05:00:00", [[good]]), "the scan's line alone, nothing read"
    reads.clear()
    found = earliest_second(frame, "2026-11-01 05:00:00", second, text, checked, lambda _: False, bad)
    assert found is None and reads[0] == [bad] and len(reads) == 3, "its second read, then the next one's"


def test_the_etl_time_is_a_valid_line_s_even_when_the_scan_s_candidate_is_a_bad_line_s(
    spark: Any, tmp_path: Any
) -> None:
    """The scan matches no pattern: its earliest second may be a bad line's (a malformed id or
    collector time, a cut line), and the batch etl time is still the earliest valid line's."""
    from spark_integration._spark.scan import scan_batch

    def at(time: str, event_id: str | None = None, collector: str = "2026-11-01 01:00:00.000") -> str:
        return line(event_id or str(uuid.uuid4()), "fp", f"2026-11-01 {time}", collector)

    bad = [
        at("03:00:00.000", "not-a-uuid"),
        at("03:30:00.000", collector="2026-11-01 01:00:00"),
        at("04:00:00.000", A.upper()),
        line(A, "fp", "2026-11-01 04:30:00.000", fields=7),
        at("02:00:00"),  # no fraction: not even a candidate
    ]
    (tmp_path / "in.tsv").write_text("".join(f"{text}\n" for text in [at("06:00:00.000"), *bad, at("07:00:00.0")]))
    lines = enriched.load_enriched(spark, str(tmp_path / "in.tsv"))
    candidates = enriched.batch_keys(lines).agg(F.min("etl_second")).first()
    assert candidates is not None and candidates[0] == "2026-11-01 03:00:00"
    scan = scan_batch(lines)
    assert scan.etl_time is not None and scan.etl_time.strftime("%H:%M:%S") == "06:00:00"
