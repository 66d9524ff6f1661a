"""Bad rows as the core renders them are the JSON Spark writes."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pyspark.sql import functions as F

from events_manifest._snowplow import legacy_bad_rows

pytestmark = pytest.mark.every_line


def _hostile(rng: random.Random) -> bytes:
    pieces = [b"\t", b'"', b"\\", b"/", b"\x00", b"\x1f", b"\x7f", b"\r", b"\x0c", b"\x08"]
    pieces += ["é", "\u2028", "\u2029", "😀", "\ufeff"]  # type: ignore[list-item]
    pieces += [b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf"]
    pieces += [b"plain text "]
    chosen = rng.choices(pieces, k=rng.randint(0, 12))
    return b"".join(p.encode() if isinstance(p, str) else p for p in chosen)


def test_bad_rows_are_the_json_spark_writes(spark: Any) -> None:
    """The input line (invalid UTF-8 shown as U+FFFD, as Spark's `make_valid_utf8` shows it) and the
    messages, escaped as Spark's `to_json` escapes them, byte for byte. Spark 3.5 has no
    `make_valid_utf8`: there the line is decoded by Python's rule (the same: one U+FFFD a maximal
    invalid subpart) and the escaping is compared."""
    rng = random.Random(7)
    samples = [(_hostile(rng), [_hostile(rng).decode("utf-8", "replace")]) for _ in range(400)]
    rows = [(line, line.decode("utf-8", "replace"), messages) for line, messages in samples]
    frame = spark.createDataFrame(rows, "line binary, decoded string, messages array<string>")
    errors = F.transform("messages", lambda m: F.struct(F.lit("error").alias("level"), m.alias("message")))
    made_valid = getattr(F, "make_valid_utf8", None)  # 4.0 and newer
    document = F.struct(
        (F.col("decoded") if made_valid is None else made_valid(F.col("line").cast("string"))).alias("line"),
        errors.alias("errors"),
        F.lit("2026-11-23T08:00:00.000Z").alias("failure_tstamp"),
    )
    by_spark = [row[0] for row in frame.select(F.to_json(document)).collect()]
    by_python = [legacy_bad_rows.bad_row(line, messages, "2026-11-23T08:00:00.000Z") for line, messages in samples]
    assert by_python == by_spark
